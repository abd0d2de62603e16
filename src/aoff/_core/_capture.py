"""Value capture on the hot path once torch is imported, and the placeholders it leaves.

Until ``torch`` is in ``sys.modules`` the recorder never comes here: floats, ints, bools
and NumPy scalars are immutable, and the pump converts them later. Once torch is
imported, :func:`activate` is called (by ``Recorder._refresh_capture``) and each
public call starts an empty capture list ``g`` (a :data:`Gather`), passes every value
that is not a plain ``float``/``int`` through :func:`capture`, and, if ``g`` is no longer
empty (the call had CUDA tensors), hands its event to :func:`finish`:

* a PyTorch tensor goes to ``_tensors.capture``: a one-element CPU tensor is read at
  once (``.item()``), a CUDA tensor becomes a :class:`Placeholder` and the call's CUDA
  tensors are copied to the host together, asynchronously, in :func:`finish` (see
  ``_tensors.py``); a tensor with more than one element raises ``ValueError``;
* anything else with ``__float__`` (NumPy scalars and arrays, which can change in place
  later) is converted with ``float()`` now; ``None``, strings and other objects are
  passed on unchanged, so that the pump skips them and reports each key once, exactly as
  when torch is not imported (docs/input-handling.md).

:func:`capture_values` does this for a dict argument (the call's own copy) and
:func:`capture_step` for a whole ``log_step`` event, slot by slot at ``_events``' named
positions.

An event that holds placeholders is a ``_pending.PendingEvent``; whoever drains the
buffer polls it (never waits) and keeps later events behind it, which keeps order and
step numbers.

This module never imports torch; ``_tensors`` (which does) is imported by :func:`activate`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from . import _events as ev
from ._arguments import W_AXES, W_COMPONENTS, W_METRICS, W_REWARD_METRICS
from ._pending import Gather, PendingEvent


# -- the hot path -----------------------------------------------------------------------------
class _NoTensor:
    """Stands in for ``torch.Tensor`` until torch is imported (nothing is an instance)."""


_Tensor: type = _NoTensor
_capture_tensor: Callable[[Gather, Any, str, object], Any] | None = None


def activate() -> bool:
    """Enable tensor capture if torch is (fully) imported; True once enabled."""
    global _Tensor, _capture_tensor
    if _capture_tensor is not None:
        return True
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    if not isinstance(tensor, type):  # torch is still being imported
        return False
    from . import _tensors

    _Tensor = tensor
    _capture_tensor = _tensors.capture
    return True


def capture_other(value: object, where: str, key: object) -> Any:
    """A value that is neither a plain number nor a tensor: converted now if it can be.

    Anything else is returned as is: the pump then skips it, counts it in
    ``invalid_values`` and reports the key once, whether or not torch is imported.
    """
    if value is None or isinstance(value, str | bytes | bytearray):
        return value
    if hasattr(value, "__float__"):
        try:
            return float(value)
        except Exception:
            return value  # fails again in the pump, which reports it
    return value


def capture(v: Any, g: Gather, where: str, key: object) -> Any:
    """The value to record for ``v`` (``v`` itself for plain numbers)."""
    if type(v) is float or type(v) is int:
        return v
    if isinstance(v, _Tensor) and _capture_tensor is not None:
        return _capture_tensor(g, v, where, key)
    return capture_other(v, where, key)


def capture_tensor(v: Any, g: Gather, where: str, key: object) -> Any:
    """Like :func:`capture` for a tensor; anything else is returned unchanged (flags)."""
    if isinstance(v, _Tensor) and _capture_tensor is not None:
        return _capture_tensor(g, v, where, key)
    return v


def finish(g: Gather, event: tuple[object, ...]) -> tuple[object, ...]:
    """Launch the call's device-to-host copies (``g`` is not empty); the pending event."""
    call = g[0]
    call.launch(g[1:])
    return PendingEvent(event, (call,))


# -- a whole call's values ----------------------------------------------------------------
def capture_values(d: dict[Any, Any], g: Gather, where: str) -> None:
    """Capture, in place, every value of our own copy ``d`` that is not a plain number."""
    for k, v in d.items():
        if type(v) is not float and type(v) is not int:
            d[k] = capture(v, g, where, k)


#: the values a call hands on as they are (anything else is captured: a tensor)
_PLAIN = frozenset((float, int))
#: a STEP event's scalar slots, by the argument name errors give
_STEP_SCALARS = (
    (ev.S_ITERATION, "iteration"),
    (ev.S_REWARD, "reward"),
    (ev.S_TRAIN_TIME, "train_time"),
    (ev.S_WAIT_TIME, "wait_time"),
    (ev.S_H2D_TIME, "learner_incremental_h2d_time"),
    (ev.S_WEIGHT_SYNC_TIME, "weight_sync_time"),
    (ev.S_THROUGHPUT, "extra_info['throughput_steps']"),
)
#: a STEP event's dict slots (the event's own copies), by the argument name errors give
_STEP_DICTS = (
    (ev.S_METRICS, W_METRICS),
    (ev.S_REWARD_METRICS, W_REWARD_METRICS),
    (ev.S_COMPONENTS, W_COMPONENTS),
)


def plain_step(event: ev.Event) -> bool:
    """Whether a STEP event holds only plain numbers (nothing to capture): the check
    ``log_step`` makes inline, for its ``axes=`` path, which has the axes' copy too."""
    for i, _ in _STEP_SCALARS:
        v = event[i]
        if v is not None and type(v) is not float and type(v) is not int:
            return False
    for i, _ in _STEP_DICTS:
        d = event[i]
        if d and not _PLAIN.issuperset(map(type, d.values())):
            return False
    return len(event) <= ev.S_AXES or _PLAIN.issuperset(map(type, event[ev.S_AXES].values()))


def capture_step(event: ev.Event) -> ev.Event:
    """A STEP event with a value that is not a plain number: each such value captured
    (a tensor read, or its device copy launched with the call's others); the event, or
    a :class:`PendingEvent` if it waits for a device. The dicts are the event's own
    copies, so they are changed in place."""
    g: Gather = []
    e = list(event)
    for i, name in _STEP_SCALARS:
        v = e[i]
        if v is not None and type(v) is not float and type(v) is not int:
            e[i] = capture(v, g, "log_step", name)
    for i, where in _STEP_DICTS:
        d = e[i]
        if d:
            capture_values(d, g, where)
    if len(e) > ev.S_AXES and e[ev.S_AXES]:  # log_step(axes=...): the event's own copy
        capture_values(e[ev.S_AXES], g, W_AXES)
    out = tuple(e)
    return finish(g, out) if g else out
