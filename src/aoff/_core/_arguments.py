"""The caller's arguments, copied and checked in the caller's frame.

Apart from the recorder so that ``_recorder.py`` holds only the calls themselves: these
helpers own what a public call does to an argument before its event is built (a dict
shallow-copied so the training loop may reuse or mutate its own, ``extra_info`` reduced to
its one field, ``log_episodes``' sequences made tuples) and the ``TypeError`` that names
the argument when it has the wrong type. Values are not converted here (the pump does
that); ``log_step``'s common case, a plain ``dict``, is copied inline by the recorder and
never calls in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._config import format_converted
from ._warning import AoffWarning

#: where an argument came from, as errors and reports name it
W_METRICS = "log_step(metrics)"
W_REWARD_METRICS = "log_step(reward_metrics)"
W_COMPONENTS = "log_step(reward_components)"
W_TIMING = "update_collector_timing(timing_ms)"
W_AXES = "log_step(axes)"
W_COLLECTOR_AXES = "log_collector(axes)"


def copy_dict(d: object, where: str) -> dict[Any, Any]:
    """Copy a dict-like argument (a non-mapping is a ``TypeError`` naming ``where``)."""
    if type(d) is dict:
        return d.copy()
    if isinstance(d, Mapping):
        return dict(d)
    raise TypeError(f"{where}: expected a dict, got {type(d).__name__}")


def throughput(extra_info: object) -> Any:
    """``extra_info["throughput_steps"]`` (default 0); a non-dict is a TypeError at once."""
    if isinstance(extra_info, Mapping):
        return extra_info.get("throughput_steps", 0)
    raise TypeError(f"log_step(extra_info): expected a dict, got {type(extra_info).__name__}")


def numbers(values: Iterable[Any]) -> tuple[Any, ...]:
    """``log_episodes``' argument as a tuple (NumPy arrays as Python floats)."""
    tolist = getattr(values, "tolist", None)
    if tolist is not None and type(values).__module__ == "numpy":
        listed = tolist()
        return tuple(listed) if isinstance(listed, list) else (listed,)
    if isinstance(values, str | bytes | Mapping) or not hasattr(values, "__iter__"):
        got = type(values).__name__
        raise TypeError(f"log_episodes: expected a sequence of numbers, got {got}")
    return tuple(values)


def warn_converted(where: str, converted: list[tuple[str, str]]) -> None:
    """One :class:`~aoff.AoffWarning` for the values a config call stored as ``str()``
    (``stacklevel`` points at the public call's caller)."""
    import warnings

    warnings.warn(format_converted(where, converted), AoffWarning, stacklevel=3)
