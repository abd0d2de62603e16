"""A far producer's shipping half: the buffer, the thread that ships it as Ray calls, the
accounting of what the hub took.

Why a module of its own: :class:`~aoff._ray._producer.RayLogger` is the caller's face
(the hot path, ``flush``/``close``, pickling onto other nodes); this is what runs behind
it, one a process. Its daemon thread ships the buffer every ``interval`` seconds as one
``push`` call per round (at most ``batch`` events a call, pickled once), with at most
``max_in_flight`` calls unanswered; while that many wait (a slow or unreachable learner)
nothing more is shipped and the buffer's overflow policy applies at ``capacity``. It
beats about once a second (``beat``, answered by the hub's own threads even while pushes
wait), so that a silent producer can be declared lost (see ``_hub.py``). When the hub is
gone or refuses this producer, it gives up: what is left and what comes later is dropped
and counted.

Media: a ``MEDIA`` event carries its frames as a NumPy copy, pickled with its batch (Ray
puts a large call argument in its object store). The producer's media budget holds those
bytes until the hub has answered the call that carried them (or they are dropped): the
thread reports its running total of bytes done through ``freed`` (``_media/_freed.py``).
"""

from __future__ import annotations

import itertools
import os
import pickle
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from .._channel._sending import RemoteReport
from .._core import _events as ev
from .._core._buffer import EventBuffer, Overflow
from .._core._pending import ready_prefix
from .._core._rules import Rule
from .._core._say import SayOnce, say_to_stderr
from .._media._freed import FreedBytes, media_bytes
from .._transport._batches import picklable_batch


class LinkSettings(Protocol):
    """What a producer reads of its :class:`~aoff.ray.RayLink` (``_link`` defines it, a
    layer above: this keeps the producer from importing it back)."""

    @property
    def hub(self) -> Any: ...
    @property
    def capacity(self) -> int: ...
    @property
    def overflow(self) -> Overflow: ...
    @property
    def timeout(self) -> float: ...
    @property
    def interval(self) -> float: ...
    @property
    def batch(self) -> int: ...
    @property
    def max_in_flight(self) -> int: ...
    @property
    def media_budget(self) -> int: ...


__all__ = ["BEAT_INTERVAL", "LinkSettings", "Pusher"]

#: seconds between beats while a producer has nothing to send
BEAT_INTERVAL = 1.0
#: seconds between rounds while a batch's worth or more waits in the buffer (a burst)
BUSY_INTERVAL = 0.005
#: a burst: while the buffer holds more than this many batches' worth, trim beyond it
BURST_FACTOR = 4


def _pickled(batch: list[Any]) -> bytes:
    try:
        return pickle.dumps(batch, protocol=5)
    except Exception:
        # a value pickle refuses (checked at the call for most; a numpy object array
        # holding one is not): that value becomes an Opaque the fold reports and skips
        return pickle.dumps(picklable_batch(batch), protocol=5)


class Pusher:
    """One process's buffer, shipping thread and accounting for one
    :class:`~aoff._ray._producer.RayLogger`."""

    def __init__(
        self,
        link: LinkSettings,
        name: str,
        on_round: Any,
        rules: tuple[Rule, ...] = (),
        on_freed: Callable[[int], object] | None = None,
    ) -> None:
        self.link = link
        self.name = name
        self.rules = rules  # the producer's own, with each push (the hub takes the first's)
        self.on_round = on_round
        self.key = f"{uuid.uuid4().hex}-{os.getpid()}"
        self.buffer = EventBuffer(link.capacity, link.overflow)
        self.held: list[ev.Event] = []  # behind an event waiting for a device copy
        self.seq = 0  # batches submitted
        self.in_flight: deque[tuple[Any, int, int]] = deque()  # (ObjectRef, events, seq)
        #: batches below this seq are known taken by the hub (its flush/close said so),
        #: even if their own answers were lost with it
        self.confirmed = 0
        self.sent = 0  # events the hub took
        self.lost = 0  # events dropped because the hub refused them or was gone
        self.unresolved = 0
        # a device value that can never be read: said once on stderr (Ray's worker log)
        self.say = SayOnce(lambda line: say_to_stderr(line, wait=False))
        self.late = itertools.count()  # logged after the hub was gone
        self.error: str | None = None
        self.gone = False
        self.submitted = 0  # events drained and submitted (or dropped as unresolved)
        self.closing = False
        self.close_by = float("inf")  # close(): the thread gives up at this time
        self.done = threading.Event()
        self.wake = threading.Event()
        self.cond = threading.Condition()
        self.last_beat = time.monotonic()
        self.beat_ref: Any = None
        #: media: the running total of frames' bytes done (taken by the hub, or dropped),
        #: for the logger's budget; ``active`` from its first media event (until then no
        #: batch is scanned for frames)
        self.freed = FreedBytes(on_freed)
        self.media_in: dict[int, int] = {}  # seq -> bytes of frames the call carries
        self.thread = threading.Thread(target=self._run, name=f"aoff-ray-{name}", daemon=True)

    # -- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        import ray

        hub = self.link.hub
        beat = hub.beat.options(concurrency_group="ctl")
        try:
            while True:
                self.on_round()
                self._reap(ray, 0.0)
                if self.gone:
                    return
                if self.closing and time.monotonic() >= self.close_by:
                    t = self.link.timeout
                    self._give_up(f"the run's hub did not take everything within {t:g}s")
                    return
                full = len(self.in_flight) >= self.link.max_in_flight
                if full:
                    self._trim(None)  # the hub is behind: the policy applies at capacity
                else:
                    self._trim(BURST_FACTOR * max(self.buffer.capacity, self.link.batch))
                    self._ship(hub)
                    with self.cond:
                        self.cond.notify_all()
                    if self.closing and not len(self.buffer) and not self.held:
                        break
                now = time.monotonic()
                if self.seq and now - self.last_beat >= BEAT_INTERVAL:
                    # alive, even while pushes wait behind a slow hub (beats have their
                    # own threads there): the hub declares a silent producer lost
                    self.last_beat = now
                    self._beat(ray, beat)
                backlog = len(self.buffer) >= self.link.batch
                if self.in_flight and (full or self.closing):
                    ray.wait(
                        [r for r, _, _ in self.in_flight], num_returns=1, timeout=self.link.interval
                    )
                elif not backlog:
                    self.wake.wait(self.link.interval)
                    self.wake.clear()
                else:  # a burst: the next round comes sooner
                    time.sleep(BUSY_INTERVAL)
            # closing: every event is submitted; wait (bounded) for the hub's answers
            while self.in_flight and not self.gone:
                left = self.close_by - time.monotonic()
                if left <= 0:
                    t = self.link.timeout
                    self._give_up(f"the run's hub did not answer within {t:g}s")
                    break
                self._reap(ray, min(0.1, left))
        except Exception as exc:  # pragma: no cover - a bug: never into the caller
            self._give_up(f"ray producer error: {type(exc).__name__}: {exc}")
        finally:
            self.done.set()
            with self.cond:
                self.cond.notify_all()

    def _ship(self, hub: Any) -> None:
        # take from the buffer only what the free calls can carry: the rest waits there,
        # where the overflow policy bounds it
        step = self.link.batch
        room = (self.link.max_in_flight - len(self.in_flight)) * step - len(self.held)
        fresh = self.buffer.drain(room) if room > 0 else []
        events = self.held + fresh if self.held else fresh
        self.held = []
        if events:
            events = self._ready_prefix(events)
            for i in range(0, len(events), step):
                if len(self.in_flight) >= self.link.max_in_flight:
                    # no slot left: the rest waits, oldest first, for the next round
                    self.held = events[i:] + self.held
                    break
                batch = events[i : i + step]
                if self.freed.active:
                    m = media_bytes(batch)
                    if m:
                        self.media_in[self.seq] = m
                ref = hub.push.remote(self.key, self.name, self.seq, _pickled(batch), self.rules)
                self.in_flight.append((ref, len(batch), self.seq))
                self.seq += 1
        self.submitted = self.buffer.drained - len(self.held)

    def _trim(self, bound: int | None) -> None:
        """The overflow policy; frames among the events it drops give their bytes back."""
        self.freed.trim(self.buffer, bound)

    def _ready_prefix(self, events: list[ev.Event]) -> list[ev.Event]:
        ready, self.held, unresolved = ready_prefix(events, self.say)
        self.unresolved += unresolved
        if unresolved:  # dropped: their frames' bytes come back
            self.freed.unresolved(events, ready, self.held)
        return ready

    def _beat(self, ray: Any, beat: Any) -> None:
        """Say this producer is alive (once the last beat was answered)."""
        ref = self.beat_ref
        if ref is not None:
            ready, _ = ray.wait([ref], timeout=0)
            if not ready:
                return
            try:
                refused = ray.get(ref)
            except Exception as exc:
                self._give_up(f"the run's hub is gone ({type(exc).__name__}: {exc})")
                return
            if refused is not None:
                self._give_up(f"the run's hub refused this producer: {refused}")
                return
        self.beat_ref = beat.remote(self.key)

    def _reap(self, ray: Any, timeout: float) -> None:
        """Take the hub's answers to the calls that have one (in order)."""
        if not self.in_flight:
            return
        refs = [r for r, _, _ in self.in_flight]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if not ready:
            return
        done = set(ready)
        while self.in_flight and self.in_flight[0][0] in done:
            ref, n, seq = self.in_flight.popleft()
            self.freed.add(self.media_in.pop(seq, 0))  # taken by the hub, or dropped
            try:
                refused = ray.get(ref)
            except Exception as exc:
                if seq < self.confirmed:  # taken: the hub said so before it went
                    self.sent += n
                    continue
                self.lost += n
                self._give_up(f"the run's hub is gone ({type(exc).__name__}: {exc})")
                return
            if refused is not None:
                self.lost += n
                self._give_up(f"the run's hub refused this producer: {refused}")
                return
            self.sent += n
        with self.cond:
            self.cond.notify_all()

    def _give_up(self, why: str) -> None:
        self.error = self.error or why
        self.gone = True
        sent, unanswered = self.settle()
        self.sent += sent
        rest = self.held + self.buffer.drain()
        self.lost += unanswered + len(rest)
        self.freed.add(sum(self.media_in.values()))
        self.freed.left(rest)
        self.media_in.clear()
        self.in_flight.clear()
        self.held = []
        self.buffer.close()

    def answered(self, upto: int) -> bool:
        """Every call below batch ``upto`` has had its answer taken (or the hub is gone)."""
        try:
            return self.gone or not self.in_flight or self.in_flight[0][2] >= upto
        except IndexError:  # emptied meanwhile by the thread
            return True

    def settle(self) -> tuple[int, int]:
        """Of the calls still unanswered: events known taken, and the others."""
        flights = list(self.in_flight)
        taken = sum(n for _, n, seq in flights if seq < self.confirmed)
        return taken, sum(n for _, n, _ in flights) - taken

    # -- the caller's side --------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def flush(self) -> None:
        timeout = self.link.timeout
        deadline = time.monotonic() + timeout
        want = self.buffer.drained + len(self.buffer)  # every event logged so far
        self.wake.set()
        if not self.wait(lambda: self.submitted >= want or self.gone, timeout) or self.gone:
            return
        upto = self.seq
        import ray

        call = self.link.hub.flush.options(concurrency_group="ctl")
        try:
            refused = ray.get(
                call.remote(self.key, upto), timeout=max(deadline - time.monotonic(), 0.01)
            )
        except ray.exceptions.GetTimeoutError:
            return
        except Exception as exc:
            self.error = self.error or f"the run's hub is gone ({type(exc).__name__}: {exc})"
            return
        if refused is not None:
            self.error = self.error or f"the run's hub refused this producer: {refused}"
            return
        self.confirmed = max(self.confirmed, upto)
        # and the thread has taken the answers: the frames' bytes are back in the budget
        self.wait(lambda: self.answered(upto), max(deadline - time.monotonic(), 0.01))

    def finish(self) -> RemoteReport:
        timeout = self.link.timeout
        deadline = time.monotonic() + timeout
        self.close_by = deadline
        self.closing = True
        self.wake.set()
        self.wait(self.done.is_set, timeout + 1.0)
        got: RemoteReport | None = None
        if not self.gone and self.seq:
            import ray

            call = self.link.hub.close.options(concurrency_group="ctl")
            try:
                got = ray.get(
                    call.remote(self.key, self.name, self.seq),
                    timeout=max(deadline - time.monotonic(), 0.01) + 1.0,
                )
            except ray.exceptions.GetTimeoutError:
                self.error = self.error or f"the run's hub did not answer within {timeout:g}s"
            except Exception as exc:
                self.error = self.error or f"the run's hub is gone ({type(exc).__name__}: {exc})"
        # calls never answered (a dead or unreachable hub) and events still held count
        # as dropped: close() never waits past its bound for them
        if got is not None and got.error is None:
            self.confirmed = max(self.confirmed, self.seq)  # the hub took every batch
        taken, unanswered = self.settle()
        dropped = self.dropped() + unanswered + len(self.held)
        error = self.error
        name, received = self.name, None
        if got is not None:
            name, received = got.name, got.received
            dropped += got.dropped
            error = error or got.error
        elif not self.seq and not self.gone:
            received = 0
        return RemoteReport(name, self.sent + taken, dropped, received, error)

    def dropped(self) -> int:
        late = int(repr(self.late)[6:-1])  # itertools.count: "count(N)"
        return self.buffer.dropped + self.unresolved + self.lost + late + len(self.buffer)

    def wait(self, until: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not until():
                left = deadline - time.monotonic()
                if left <= 0 or self.done.is_set():
                    return bool(until())
                self.wake.set()
                self.cond.wait(min(left, 0.05))
        return True
