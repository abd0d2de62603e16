"""Taking turns for the GIL with a training loop that shares aoff's process.

Why: when the pump runs in the training process (``pump="thread"``, or the fallback
after a lost agent), the pump, the dashboard and the backends' worker threads need the
GIL that a pure-Python training loop holds. CPython gives a waiting thread the GIL only
when the holder blocks, or once the waiter has waited ``sys.getswitchinterval()`` (5 ms);
so every stretch of aoff's own Python work (a dashboard frame, ~2-3 ms; a fold slice; a
batch's encoding) is a stretch that loop waits, up to 5 ms each time.

So, while a pump runs in this process (:func:`sharing`), long work in aoff's threads is
cut into pieces with :func:`pause` (or :func:`apause` on an event loop) between them.
The work itself imports none of this: the pump passes the pacing in as callables (the
fold's slicer in ``_intake``, the backends' encoders :func:`in_pieces` through their
context, the dashboard's frames :func:`bounded`), each a no-op by default. A
pause is a short real sleep, not ``sleep(0)``: a thread that releases the GIL and asks
for it straight back usually gets it again before the woken waiter runs, and the
waiter's 5 ms then start over. A waiting loop thus gets the GIL back after one piece
(or a few, when several of aoff's threads were waiting as well), and the piece's thread
waits its turn instead. Nothing else changes: the interpreter's switch interval is left
alone, and outside such a process (the agent, which has no training loop to share with)
a pause does nothing (:func:`apause`: an ordinary checkpoint).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from time import monotonic
from typing import TypeVar

import anyio
import anyio.lowlevel

__all__ = [
    "PAUSE",
    "RECORDS_A_PIECE",
    "apause",
    "bounded",
    "in_pieces",
    "pause",
    "shared",
    "sharing",
]

#: seconds a pause sleeps: long enough for a thread waiting on the GIL to wake and take it
PAUSE = 0.0001
#: step records a backend encodes between two pauses (one of ~40 scalars: 10-20 us)
RECORDS_A_PIECE = 4

_lock = threading.Lock()
_sharers = 0


def shared() -> bool:
    """Whether a pump runs in this process now (see the module docstring)."""
    return _sharers > 0


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """While inside, :func:`pause` and :func:`apause` give the GIL away (nestable)."""
    global _sharers
    with _lock:
        _sharers += 1
    try:
        yield
    finally:
        with _lock:
            _sharers -= 1


def bounded(seconds: float) -> Callable[[], None]:
    """A :func:`pause` for one job, for ``seconds`` at most; after that the job goes on
    in one piece. Each pause can cost its thread a whole switch interval while the loop
    holds the GIL, so a job in many pieces (a dashboard frame: the dashboard's pacing)
    bounds its own wall time: a slow machine must not make a frame look stuck."""
    until = monotonic() + seconds

    def pause_until() -> None:
        if _sharers and monotonic() < until:
            time.sleep(PAUSE)

    return pause_until


def pause() -> None:
    """Between two pieces of work: let a thread waiting for the GIL run (if shared)."""
    if _sharers:
        time.sleep(PAUSE)


async def apause() -> None:
    """:func:`pause` for a task on an event loop (without sharing: a checkpoint)."""
    if _sharers:
        await anyio.sleep(PAUSE)
    else:
        await anyio.lowlevel.checkpoint()


T = TypeVar("T")


def in_pieces(records: Sequence[T]) -> Iterable[T]:
    """``records`` with a :func:`pause` every :data:`RECORDS_A_PIECE` of them, for a
    backend's batch encoding while the GIL is shared (else ``records`` as they are, at
    no cost). Consumed lazily, so whatever the caller does with each record (encoding,
    framing) is cut into the same pieces."""
    if not _sharers or len(records) <= RECORDS_A_PIECE:
        return records
    return _pieces(records)


def _pieces(records: Sequence[T]) -> Iterator[T]:
    for i, rec in enumerate(records):
        if i and not i % RECORDS_A_PIECE:
            pause()
        yield rec
