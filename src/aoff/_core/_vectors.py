"""Per-environment vectors logged by ``log_step``: what they are once on the host, and
what a record makes of them.

Why a type of its own: a ``(num_envs,)`` tensor (returns, a success flag, a
per-environment loss) is copied once, without a sync, by the call (``_tensors``); the
copy becomes a :class:`Vector` where the events are drained, travels to the agent as it
is (a pickled NumPy array) and is reduced there by the step's fold, never on the
training thread.

What a vector becomes (:func:`reduce`): its tag gets the **mean** over every element,
the number the scalar would have had had the user reduced it (rsl_rl, skrl and Isaac
Lab log means); a NaN or infinity in any element makes the mean NaN/infinite, so the
run's rules see a broken environment instead of an average that hides it. Its
**distribution** goes to ``<tag>/envs`` as a histogram (``reward/envs`` for
``reward``, whose tag is ``reward/mean``), exactly as ``log_histogram``
writes one (buckets where the backend takes them; ``/min``, ``/max``, ``/mean``, the
percentiles and ``/nonfinite`` as scalars everywhere), so the spread across
environments that a mean hides is kept too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ENVS_SUFFIX", "Vector", "mean"]

#: the histogram tag of a vector logged at ``tag``: ``tag + ENVS_SUFFIX``
ENVS_SUFFIX = "/envs"


class Vector:
    """A logged per-environment vector, on the host: ``values`` a flat float64 array."""

    __slots__ = ("values",)

    def __init__(self, values: Any) -> None:
        self.values = values

    def __reduce__(self) -> tuple[Any, ...]:
        return (Vector, (self.values,))

    def __repr__(self) -> str:
        return f"<aoff per-env vector of {len(self.values)} values>"


def mean(v: Vector) -> float:
    """The vector's scalar: the mean over every element (NaN/inf propagate)."""
    return float(v.values.mean())
