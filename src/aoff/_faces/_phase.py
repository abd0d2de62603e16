"""Where a face is in its life, as one value: :class:`Phase`.

Why one value: a lifecycle read off a set of flags (stopping, stopped, inert, forked,
entered, forced) needs them to agree with each other; one value cannot disagree with
itself, and :data:`NEXT` lists every move the faces make, so a reader sees the whole life
in one table. The faces change their phase only through ``Face._to`` (``_face.py``),
which checks the move against :data:`NEXT`.

The hot path never reads the phase: where a phase changes what a logging call does, the
face swaps its ``_put`` once, at the move (``_recorder.py``).
"""

from __future__ import annotations

import enum

__all__ = ["CLOSING", "INERT", "NEXT", "Phase", "stopped"]


class Phase(enum.Enum):
    """One face's phase. Every face starts ``NEW``."""

    #: made; the async face before ``async with`` (its calls are kept, with a warning)
    NEW = enum.auto()
    #: the pump runs (the sync face from its constructor on; the async one once entered)
    OPEN = enum.auto()
    #: the first ``finish()``/``close()`` queued the closing event; the final drain runs
    STOPPING = enum.auto()
    #: the final drain is over and the report is in
    CLOSED = enum.auto()
    #: a second Ctrl+C stopped the sync face waiting for its final drain (the drain goes
    #: on in a daemon thread); later stops return the report known then, at once
    ABANDONED = enum.auto()
    #: a rank that does not log (``ranks=``): every logging call is a no-op
    MUTED = enum.auto()
    #: a forked child's copy of a live logger with a ``log_dir``: its calls go into the
    #: parent's run through a ``RemoteLogger``, closed by its ``finish()``/``close()``
    FORKED = enum.auto()
    #: a forked child's copy without a ``log_dir``, or of a logger that was already
    #: stopping: its calls are counted as dropped
    FORKED_DROPPED = enum.auto()


#: nothing of the run lives in this process: the waiting methods return at once
INERT = frozenset({Phase.MUTED, Phase.FORKED, Phase.FORKED_DROPPED})

_FORKS = frozenset({Phase.FORKED, Phase.FORKED_DROPPED})
_STOPPED = frozenset({Phase.STOPPING, Phase.CLOSED, Phase.ABANDONED})
#: the run had begun to stop (for a dropping fork copy with a ``log_dir``: when it was
#: forked): no producer may join it, and a fork's copy drops its calls (without a
#: ``log_dir`` neither question comes up: both need the run's socket)
CLOSING = _STOPPED | {Phase.FORKED_DROPPED}

#: every move a face makes (staying in a phase is always allowed). A signal that cuts
#: the sync face's stop short before it is marked ``STOPPING`` still drains, hence the
#: moves from ``OPEN`` to ``CLOSED`` and ``ABANDONED``. A fork copies any phase but
#: ``MUTED`` (a muted rank is not registered for the fork hook); only a copy of a logger
#: that had not begun to stop, with a ``log_dir``, logs into the parent's run.
NEXT: dict[Phase, frozenset[Phase]] = {
    Phase.NEW: frozenset({Phase.OPEN, Phase.STOPPING, Phase.MUTED}) | _FORKS,
    Phase.OPEN: _STOPPED | _FORKS,
    Phase.STOPPING: frozenset({Phase.CLOSED, Phase.ABANDONED, Phase.FORKED_DROPPED}),
    Phase.CLOSED: frozenset({Phase.FORKED_DROPPED}),
    Phase.ABANDONED: frozenset({Phase.FORKED_DROPPED}),
    Phase.MUTED: frozenset(),
    Phase.FORKED: frozenset({Phase.FORKED}),
    Phase.FORKED_DROPPED: frozenset({Phase.FORKED_DROPPED}),
}


def stopped(phase: Phase) -> bool:
    """Whether ``finish()``/``close()`` has begun (or is over) for this face."""
    return phase in _STOPPED
