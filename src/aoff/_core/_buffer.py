"""The hot-path hand-off: one bounded, thread-safe, ordered buffer of events.

Producers (any thread) append; the pump drains. The common path is a bare
``deque.append`` (atomic under the GIL, no lock, no syscall, no event-loop wake-up);
the pump polls the buffer on its own tick, so producers never pay for waking it.

The bound (``capacity``, in events) and the overflow policy decide what happens when the
pump falls behind (a slow backend holding it back, or a producer faster than the fold):

``"drop_oldest"`` (default)
    the producer never waits and never checks (its cost stays one C-level
    ``deque.append``); the pump discards the oldest events beyond ``capacity`` and
    counts them, before every fold slice of 512 events and every 5 ms while the buffer
    is over capacity. The bound is therefore soft: the buffer can exceed ``capacity`` by
    what producers append while the pump thread waits for its turn (the GIL, or a tick
    when idle). Measured on the 2-core test machine (``benchmarks/bench_soak.py``): a
    peak of 1.2x capacity with one thread logging the standard workload flat out; 3x to
    6x (varying run to run) with four threads calling bare ``log_step`` at ~1 million
    events/s, which starve the pump thread of the GIL for up to ~0.4 s at a time. Real
    training loops, which spend their time in NumPy/PyTorch (releasing the GIL), stay
    near 1x. Use ``"drop_newest"`` or ``"block"`` where a hard cap matters more.
``"drop_newest"``
    the producer checks the length and refuses the new event when the buffer is full
    (counted); the producer never waits. A hard bound (``capacity`` plus at most one
    event per producer thread), at ~0.15 µs more per call than ``drop_oldest``.
``"block"``
    the producer waits for space (the sync face blocks the calling thread, the async
    face awaits); nothing is ever dropped. A hard bound, like ``drop_newest``.

Every drop is counted exactly: ``dropped`` is the sum of the pump's trims and the
producers' refusals.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Literal

from ._events import Event

Overflow = Literal["drop_oldest", "drop_newest", "block"]
OVERFLOW_POLICIES: tuple[Overflow, ...] = ("drop_oldest", "drop_newest", "block")

#: default bound, in events. Measured with ``tracemalloc`` (``benchmarks/bench_soak.py
#: --memory``) for the standard off-policy iteration (4 calls: a 5-key collector timing
#: dict, done rates, ``log_collector``, ``log_step`` with 12 metrics, a reward and 4
#: reward components, every value a fresh float): about 2.1 KB an iteration, i.e.
#: ~0.5 KB an event, so a full buffer holds 25,000 iterations in about 50 MB. Bare
#: ``log_step(i)`` events take ~0.2 KB each (20 MB for a full buffer). On top of the
#: buffer, each backend's outbox holds at most ~5,600 step records (~12 MB for the
#: standard workload; ``_runner.py``). See the overflow policies above for how far
#: ``"drop_oldest"`` may overshoot ``capacity`` under extreme load.
DEFAULT_CAPACITY = 100_000


class EventBuffer:
    """Bounded multi-producer / single-consumer event queue with an overflow policy."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, overflow: Overflow = "drop_oldest"):
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"capacity must be a positive int, got {capacity!r}")
        if overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {OVERFLOW_POLICIES}, got {overflow!r}")
        self.capacity = capacity
        self.overflow: Overflow = overflow
        self._dq: deque[Event] = deque()
        self._refused = itertools.count()  # next() is atomic under the GIL
        self._trimmed = 0
        self._space = threading.Condition(threading.Lock())
        self._waiters = 0
        self.closed = False
        self.drained = 0
        self.put: Callable[[Event], None]
        if overflow == "drop_oldest":
            self.put = self._dq.append
        elif overflow == "drop_newest":
            self.put = self._put_drop_newest
        else:
            self.put = self._put_block
        self._slack = 0  # room kept for the closing event, which never evicts data
        #: told each event ``put`` refuses (``drop_newest``): a face gives a refused media
        #: event's frames back to its budget (``offer`` callers do that themselves)
        self.on_refused: Callable[[Event], object] | None = None

    # -- producers ---------------------------------------------------------------------
    def _put_drop_newest(self, event: Event) -> None:
        if len(self._dq) >= self.capacity:
            next(self._refused)
            if self.on_refused is not None:
                self.on_refused(event)
            return
        self._dq.append(event)

    def offer(self, event: Event) -> bool:
        """``put``, saying whether the buffer took ``event`` (False: ``drop_newest``
        refused and counted it). For a caller that holds something for the event (a
        media budget's bytes) and must give it back when the event is dropped."""
        if self.overflow == "drop_newest":
            if len(self._dq) >= self.capacity:
                next(self._refused)
                return False
            self._dq.append(event)
            return True
        self.put(event)
        return True

    def _put_block(self, event: Event) -> None:
        if len(self._dq) >= self.capacity and not self.closed:
            self.wait_for_space()
        self._dq.append(event)

    def put_many(self, events: list[Event]) -> None:
        """``put`` each of ``events``, in order, a slice at a time where the policy allows:
        ``block`` takes what fits, waits for space, then the rest; ``drop_oldest`` takes
        them all. (The agent's receiver queues whole frames, pickled: ``_backlog.py``.)"""
        if self.overflow == "drop_newest":
            for e in events:
                self._put_drop_newest(e)
            return
        dq = self._dq
        if self.overflow == "drop_oldest":
            dq.extend(events)
            return
        done, n = 0, len(events)
        while done < n:
            room = self.capacity - len(dq)
            if room <= 0 and not self.closed:
                self.wait_for_space()
                continue
            end = n if self.closed else min(n, done + room)
            dq.extend(itertools.islice(events, done, end))
            done = end

    def full(self) -> bool:
        return len(self._dq) >= self.capacity

    def wait_for_space(self, timeout: float | None = None) -> bool:
        """Block the calling thread until the buffer has room (``"block"`` policy)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._space:
            self._waiters += 1
            try:
                # full(), not len(): a buffer that counts in other units (a group's
                # steps) waits by its own count
                while self.full() and not self.closed:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    # bounded wait: also wakes up if a notification is missed
                    self._space.wait(0.05 if remaining is None else min(remaining, 0.05))
            finally:
                self._waiters -= 1
        return True

    # -- the consumer --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._dq)

    def trim(self, bound: int | None = None) -> int:
        """``drop_oldest``: discard the oldest events beyond ``bound`` (default: capacity);
        return how many."""
        if self.overflow != "drop_oldest":
            return 0
        limit = self.capacity if bound is None else bound
        excess = len(self._dq) - limit - self._slack
        if excess <= 0:
            return 0
        # a C-level loop (iter(callable, sentinel)): popleft never returns None
        deque(itertools.islice(iter(self._dq.popleft, None), excess), maxlen=0)
        self._trimmed += excess
        return excess

    def trim_out(self, bound: int | None = None) -> list[Event]:
        """:meth:`trim`, returning the events it discarded (oldest first): for a consumer
        that must account for what they held (frames' bytes in a producer's budget)."""
        if self.overflow != "drop_oldest":
            return []
        limit = self.capacity if bound is None else bound
        excess = len(self._dq) - limit - self._slack
        if excess <= 0:
            return []
        out = list(itertools.islice(iter(self._dq.popleft, None), excess))
        self._trimmed += excess
        return out

    def drain(self, limit: int | None = None) -> list[Event]:
        """Remove and return up to ``limit`` events (all, by default), oldest first."""
        dq = self._dq
        n = len(dq)
        if limit is not None and n > limit:
            n = limit
        # popleft n times at C speed (about 3x a list comprehension); n <= len(dq) and
        # only this consumer pops, so it never raises; popleft never returns None
        out = list(itertools.islice(iter(dq.popleft, None), n))
        if out:
            self.drained += n
            if self._waiters:
                with self._space:
                    self._space.notify_all()
        return out

    def drain_into(self, out: list[Event], limit: int) -> int:
        """Move up to ``limit`` events, oldest first, onto the end of ``out``; how many.

        The move is one C-level ``list.extend`` of ``popleft`` calls: no Python code runs
        inside it, so no Python signal handler either (they run between bytecodes). An
        event is therefore always either here or in ``out``, never lost between the two,
        whichever bytecode a ``KeyboardInterrupt`` comes at (``Slices.pickle_from``)."""
        before = len(out)
        out.extend(itertools.islice(iter(self._dq.popleft, None), min(limit, len(self._dq))))
        n = len(out) - before
        if n:
            self.drained += n
            if self._waiters:
                with self._space:
                    self._space.notify_all()
        return n

    @property
    def refused(self) -> int:
        """``drop_newest``: events refused by producers so far."""
        # itertools.count has no public getter; its repr is "count(N)"
        return int(repr(self._refused)[6:-1])

    @property
    def dropped(self) -> int:
        """Events discarded by the overflow policy so far (exact)."""
        return self._trimmed + self.refused

    def oldest(self, n: int) -> list[Event]:
        """The ``n`` oldest events buffered (fewer if fewer are), left where they are."""
        return list(itertools.islice(self._dq, n))

    def snapshot(self) -> tuple[Event, ...]:
        """The events buffered now, oldest first (a copy; for accounting, not draining)."""
        return tuple(self._dq)

    def append(self, event: Event) -> None:
        """Append regardless of the policy (an event already counted as recorded)."""
        self._dq.append(event)

    def append_final(self, event: Event) -> None:
        """Append the closing event: never refused, and it never evicts a data event."""
        self._slack += 1
        self._dq.append(event)

    def close(self) -> None:
        """Stop blocking producers (a blocked ``put`` proceeds)."""
        self.closed = True
        with self._space:
            self._space.notify_all()
