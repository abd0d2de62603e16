"""Logged values that are not known yet, and the events that carry them.

A leaf module: the hot path (``_capture``), the torch side (``_tensors``) and the pump
all use these types, and none of them needs the others to do so.

An event that holds placeholders is a :class:`PendingEvent` (a ``tuple`` subclass, so it
travels through the buffer like any event). The pump never folds one until
:func:`event_ready` is true, which never blocks; it then folds :func:`resolve_event`'s
plain tuple, so the fold only ever sees numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# One call's capture state is a plain list (building one costs ~20 ns, an object ~60-200):
# empty until the call meets a CUDA tensor, then ``[CudaCall, tensor, tensor, ...]``.
Gather = list[Any]


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


class _Absent:
    """What a placeholder resolves to when its value turned out not to exist (a mean over
    no episodes): the scalar it stands for is not written, as the caller would not have
    written it had it known. Not a number, never counted as a bad value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<aoff: no value>"

    def __reduce__(self) -> str:
        return "ABSENT"  # one object across pickles (the agent compares by identity)


ABSENT = _Absent()


class PendingEvent(tuple[object, ...]):
    """An event with placeholders; ``waits`` are the objects whose ``ready()`` gate it."""

    waits: tuple[Any, ...]
    #: how many were made in this process so far: while none was, whoever drains the
    #: buffer need not look for one (a lost update under threads still leaves it > 0)
    made = 0

    def __new__(cls, event: Iterable[object], waits: Iterable[Any]) -> PendingEvent:
        self = super().__new__(cls, event)
        self.waits = tuple(waits)
        PendingEvent.made += 1
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


def unreadable_line(exc: BaseException) -> str:
    """What is said when a device value can never be read (``ready()`` raised)."""
    return f"aoff: could not read device values: {type(exc).__name__}: {exc}"


def ready_prefix(events: list[Any], say: Callable[[str], None]) -> tuple[list[Any], list[Any], int]:
    """Split a drained run of events for a shipper: ``(ready, held, unresolved)``.

    ``ready``: the events that can go now, in order, each :class:`PendingEvent` among
    them resolved; ``held``: from the first event still waiting for a device value on,
    the rest (kept, in order, for the next round: events never overtake each other);
    ``unresolved``: events left out because their values will never come (``ready()``
    raised), for the sender to count as dropped; each one's error goes to ``say``
    (as the pump's fold says it), never swallowed. Never blocks."""
    # the common cases: no event ever waited for a device here, or none of these does
    if not PendingEvent.made or PendingEvent not in set(map(type, events)):
        return events, [], 0
    out: list[Any] = []
    unresolved = 0
    for i, e in enumerate(events):
        if type(e) is PendingEvent:
            try:
                ready = event_ready(e)
            except Exception as exc:  # e.g. a CUDA error surfacing in Event.query()
                # its values will never come: dropped, counted, said
                say(unreadable_line(exc))
                unresolved += 1
                continue
            if not ready:
                return out, events[i:], unresolved
            e = resolve_event(e)
        out.append(e)
    return out, [], unresolved


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
