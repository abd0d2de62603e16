"""The agent's buffer: frames of pickled events in order, bounded in bytes.

Why pickles: an unpickled event of the standard workload holds ~536 bytes in the agent
(``tracemalloc``), its share of a frame's pickle ~98: a backlog of 200,000 events costs
~107 MB unpickled, ~20 MB as pickles. Kept as pickles, the same memory holds ~5x the
events, so a training loop that outruns the agent for a while (a
flat-out burst: the loop logs ~4x faster than the agent folds) loses nothing; and
pickles are bytes, which the garbage collector never walks. The pump unpickles a frame
when its drain reaches it, in order.

What it holds, in the order they came: frames (:meth:`Backlog.put_frame`: the pickle of
a list of events and how many they are) and single events (:meth:`put`: a producer's,
wrapped by ``_channel/_produce.py``; :meth:`append_final`: the closing event of a lost
training process). Any thread puts; one consumer (the pump) drains.

The bound, ``max_bytes``: a frame counts the length of its pickle, a single event
:data:`EVENT_BYTES`. Policy ``block``: while the bound is reached, ``put_frame`` and
``put`` wait (the agent's receiver then stops reading, its socket fills, and the
training process's buffer and overflow policy take over). A frame is taken whole once
there is any room, so the bound is soft by one frame; and the frame being drained is
held unpickled beside it (up to 4,096 events, ~2 MB of the standard workload).

Why in ``_pump``: it is the pump's input in the agent (``_agent/_serve``), and the
training process sizes what it holds for a starting agent by the same rule
(:func:`backlog_bytes`, ``_faces/_side``), so it sits below both; a frame's payload
format is the transport's (``_transport/_batches``).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._core._buffer import DEFAULT_CAPACITY, EventBuffer
from .._core._events import Event
from .._transport._batches import unpack_events
from .._transport._plainsteps import PlainSteps

if TYPE_CHECKING:  # the group's agent alone reads group frames (NumPy, via _groupbatch):
    # the training process imports this module for backlog_bytes and stays light
    from .._transport._groupsteps import GroupSteps

__all__ = [
    "BACKLOG_BYTES",
    "EVENT_BYTES",
    "Backlog",
    "backlog_bytes",
]

#: the agent's backlog at the default ``capacity``: bytes of frames as they came
#: (pickled), ~98 bytes an event of the standard workload, so ~680,000 events (unpickled,
#: ~536 bytes each, they would take ~360 MB). See the measurements in
#: ``docs/reference/performance.md`` ("The agent's backlog")
BACKLOG_BYTES = 64 << 20


def backlog_bytes(capacity: int) -> int:
    """Bytes of pickled events the agent buffers before it stops reading (backpressure):
    ``BACKLOG_BYTES``, scaled up with a ``capacity`` above the default. The training
    process may hold as much for an agent that has not answered yet (it is starting)."""
    return max(BACKLOG_BYTES, capacity * (BACKLOG_BYTES // DEFAULT_CAPACITY))


#: what a single (unpickled) event counts against the bound: ~536 bytes measured for
#: the standard workload's events (``tracemalloc``)
EVENT_BYTES = 512


class _Frame:
    """The pickle of a list of ``n`` events, as a sender made it."""

    __slots__ = ("n", "payload")

    def __init__(self, payload: bytes, n: int) -> None:
        self.payload = payload
        self.n = n


class Backlog(EventBuffer):
    """An :class:`EventBuffer` (policy ``block``) that holds frames of pickled events and
    single events in order, bounded in bytes (``max_bytes``); see the module's doc.

    ``len()`` is the events held (frames' counts included), ``nbytes`` the bytes
    counted against ``max_bytes``; ``capacity`` is ``max_bytes`` in single events (the
    pump's loop reads it only as a scale). A frame whose pickle does not load is counted
    dropped (``dropped``) and told to ``on_unreadable``, if set.
    """

    def __init__(self, max_bytes: int) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")
        super().__init__(max(1, max_bytes // EVENT_BYTES), "block")
        self.max_bytes = max_bytes
        #: bytes counted against ``max_bytes`` now (frames' pickles, single events)
        self.nbytes = 0
        #: the most bytes held at once so far
        self.peak_bytes = 0
        self._chunks: deque[_Frame | Event] = deque()
        self._ready: deque[Event] = deque()  # the drained frame's events (the consumer's)
        self._held = 0  # events in _chunks and _ready
        self.put = self._put_one
        self.on_unreadable: Callable[[str], object] | None = None
        #: how a frame's payload is read: unpickled, or (:meth:`read_plain_steps`) its
        #: pickles of plain ``log_step`` events as columns
        self._unpack: Callable[[bytes], list[Event]] = unpack_events

    def read_plain_steps(self) -> PlainSteps:
        """Read each frame's pickles of plain ``log_step`` events as one ``STEP_BLOCK``
        and its ``FOLDED`` markers (``_transport/_plainsteps``): the single run's agent,
        whose fold takes blocks; a group's splits its events per run first."""
        reader = PlainSteps()
        self._unpack = reader.unpack
        return reader

    def read_group_steps(self, runs: int) -> GroupSteps:
        """Read each frame of a run group's plain group steps as one ``GROUP_BLOCK`` item
        and its ``FOLDED`` markers (``_transport/_groupsteps``): the group's agent,
        whose splitter makes one ``STEP_BLOCK`` a run of it."""
        from .._transport._groupsteps import GroupSteps

        reader = GroupSteps(runs)
        self._unpack = reader.unpack
        return reader

    # -- producers ---------------------------------------------------------------------
    def _add(self, item: _Frame | Event, n: int, size: int, *, wait: bool) -> None:
        with self._space:
            if wait and self.nbytes >= self.max_bytes and not self.closed:
                self._waiters += 1
                try:
                    while self.nbytes >= self.max_bytes and not self.closed:
                        self._space.wait(0.05)  # bounded: also wakes if a notify is missed
                finally:
                    self._waiters -= 1
            self._chunks.append(item)
            self._held += n
            self.nbytes += size
            if self.nbytes > self.peak_bytes:
                self.peak_bytes = self.nbytes

    def put_frame(self, payload: bytes, n: int) -> None:
        """Queue a frame: ``payload`` the pickle of a list of ``n`` events. Waits while
        the bound is reached (and the backlog is open)."""
        if n > 0:
            self._add(_Frame(payload, n), n, len(payload), wait=True)

    def _put_one(self, event: Event) -> None:
        self._add(event, 1, EVENT_BYTES, wait=True)

    def put_many(self, events: list[Event]) -> None:
        for e in events:
            self._put_one(e)

    def append(self, event: Event) -> None:
        self._add(event, 1, EVENT_BYTES, wait=False)

    def append_final(self, event: Event) -> None:
        self._add(event, 1, EVENT_BYTES, wait=False)

    def full(self) -> bool:
        return self.nbytes >= self.max_bytes

    def wait_for_space(self, timeout: float | None = None) -> bool:
        """Block the calling thread while the bound is reached; False on ``timeout``."""
        with self._space:
            self._waiters += 1
            try:
                return self._space.wait_for(
                    lambda: self.nbytes < self.max_bytes or self.closed, timeout
                )
            finally:
                self._waiters -= 1

    # -- the consumer --------------------------------------------------------------------
    def __len__(self) -> int:
        return self._held

    def drain(self, limit: int | None = None) -> list[Event]:
        """Remove and return up to ``limit`` events (all, by default), oldest first,
        unpickling each frame as the drain reaches it."""
        want = self._held if limit is None else min(limit, self._held)
        out: list[Event] = []
        ready, chunks = self._ready, self._chunks
        freed = lost = 0
        while len(out) < want:
            if ready:
                k = min(want - len(out), len(ready))
                # popleft k times at C speed; only this consumer pops
                out.extend(itertools.islice(iter(ready.popleft, None), k))
                continue
            if not chunks:  # a frame held fewer events than it said
                break
            item = chunks.popleft()
            if not isinstance(item, _Frame):
                freed += EVENT_BYTES
                out.append(item)
                continue
            freed += len(item.payload)
            events = self._load(item)
            if len(events) != item.n:  # unreadable (counted there), or a sender's bug
                lost += item.n - len(events)
                want = min(want, self._held - lost)
            ready.extend(events)
        if out or freed:
            with self._space:
                self._held -= len(out) + lost
                self.nbytes -= freed
                if self._waiters:
                    self._space.notify_all()
            self.drained += len(out)
        return out

    def _load(self, frame: _Frame) -> list[Event]:
        try:
            events = self._unpack(frame.payload)
        except Exception as exc:
            self._trimmed += frame.n  # counted in dropped
            if self.on_unreadable is not None:
                self.on_unreadable(
                    f"aoff: {frame.n:,} events could not be read back in the agent "
                    f"({type(exc).__name__}: {exc}); they are counted as dropped"
                )
            return []
        return events

    def snapshot(self) -> tuple[Event, ...]:
        """The events held now, oldest first (frames read back: a copy, for accounting)."""
        out = list(self._ready)
        for item in list(self._chunks):
            if isinstance(item, _Frame):
                with contextlib.suppress(Exception):  # counted when the drain reaches it
                    out.extend(unpack_events(item.payload))
            else:
                out.append(item)
        return tuple(out)
