"""Value capture on the hot path once torch is imported, and the placeholders it leaves.

Until ``torch`` is in ``sys.modules`` the recorder never comes here: floats, ints, bools
and NumPy scalars are immutable, and the pump converts them later. Once torch is
imported, :func:`activate` is called (by ``_recorder.refresh_capture_mode``) and each
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

An event that holds placeholders is a :class:`PendingEvent` (a ``tuple`` subclass, so it
travels through the buffer like any event). The pump never folds one until
:func:`event_ready` is true, which never blocks; it then folds :func:`resolve_event`'s
plain tuple, so the fold only ever sees numbers. Events behind a pending one wait too,
which keeps order and step numbers.

This module never imports torch; ``_tensors`` (which does) is imported by :func:`activate`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any


class Placeholder:
    """A logged value that is not known yet (a device-to-host copy in flight).

    ``ready()`` must never block; ``value()`` is called only after ``ready()`` returned
    True. Placeholders deliberately have no ``__float__``: nothing may convert one by
    waiting for the device.
    """

    __slots__ = ()

    def ready(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def value(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class PendingEvent(tuple[object, ...]):
    """An event with placeholders; ``waits`` are the objects whose ``ready()`` gate it."""

    waits: tuple[Any, ...]

    def __new__(cls, event: Iterable[object], waits: Iterable[Any]) -> PendingEvent:
        self = super().__new__(cls, event)
        self.waits = tuple(waits)
        return self


def event_ready(event: PendingEvent) -> bool:
    """True when every value of ``event`` is known (never blocks)."""
    return all(w.ready() for w in event.waits)


def resolve_event(event: PendingEvent) -> tuple[object, ...]:
    """The plain event with every placeholder replaced by its value (call when ready)."""
    out: list[object] = []
    for x in event:
        if isinstance(x, Placeholder):
            x = x.value()
        elif type(x) is dict:
            # the recorder's own copy: resolved in place
            for k, v in x.items():
                if isinstance(v, Placeholder):
                    x[k] = v.value()
        out.append(x)
    return tuple(out)


def pending_event(event: Iterable[object]) -> tuple[object, ...]:
    """Wrap ``event`` as a :class:`PendingEvent` if it holds placeholders (any kind)."""
    event = tuple(event)
    waits: list[Any] = []
    for x in event:
        if isinstance(x, Placeholder):
            waits.append(x)
        elif isinstance(x, dict):
            waits.extend(v for v in x.values() if isinstance(v, Placeholder))
    return PendingEvent(event, waits) if waits else event


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


# One call's capture state is a plain list (building one costs ~20 ns, an object ~60-200):
# empty until the call meets a CUDA tensor, then ``[CudaCall, tensor, tensor, ...]``.
Gather = list[Any]


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
