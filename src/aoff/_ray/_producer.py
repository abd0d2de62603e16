"""The producer's side of a Ray link: :class:`RayLogger` (``link.remote(name)``).

Why its own logger: in a Ray actor or task on another node the run folder's socket is
out of reach; the events go to the hub (``_hub.py``) as Ray actor calls instead. The hot
path is the same as ``log.remote()``'s (the shared :class:`~aoff._core._recorder.Recorder`
builds one tuple and appends it to a bounded :class:`~aoff._core._buffer.EventBuffer`);
one daemon thread a process (started by the first call, again in a forked copy) ships
the buffer every ``interval`` seconds as one ``push`` call per round (at most ``batch``
events a call, pickled once), with at most ``max_in_flight`` calls unanswered.

Backpressure and faults, never blocking the caller (unless ``overflow="block"`` was
chosen): while ``max_in_flight`` calls are unanswered (a slow or unreachable learner)
nothing more is shipped and the buffer's overflow policy applies at ``capacity``, every
drop counted. If the hub is gone (the learner ended or crashed) or refuses this
producer, what is left and what comes later is dropped and counted; :meth:`close` says
so in its :class:`~aoff.RemoteReport`. ``flush()`` and ``close()`` wait at most
``timeout`` (a dead node cannot hold them longer). Every producer also tells the hub it
is alive about once a second (``beat``, answered by the hub's own threads even while
pushes wait), so that a silent producer can be declared lost (see ``_hub.py``).
"""

from __future__ import annotations

import itertools
import os
import pickle
import threading
import time
import uuid
import weakref
from collections import deque
from typing import Any, Protocol

from .._channel._hub import check_name
from .._core import _events as ev
from .._core._buffer import EventBuffer, Overflow
from .._core._convert import Opaque
from .._core._pending import PendingEvent, event_ready, resolve_event
from .._core._recorder import Recorder
from .._faces._remote import _PLAIN, RemoteReport, _check_picklable


class LinkSettings(Protocol):
    """What a producer reads of its :class:`~aoff.ray.RayLink` (``_serve`` defines it, a
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


__all__ = ["RayLogger"]

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
        def fix(v: Any) -> Any:
            try:
                pickle.dumps(v, protocol=5)
            except Exception:
                return Opaque(v)
            return v

        out = []
        for e in batch:
            try:
                pickle.dumps(e, protocol=5)
            except Exception:
                e = tuple(
                    {k: fix(v) for k, v in x.items()} if type(x) is dict else fix(x) for x in e
                )
            out.append(e)
        return pickle.dumps(out, protocol=5)


class _Pusher:
    """One process's buffer, shipping thread and accounting for one :class:`RayLogger`."""

    def __init__(self, link: LinkSettings, name: str, on_round: Any) -> None:
        self.link = link
        self.name = name
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
                    self.buffer.trim()  # the hub is behind: the policy applies at capacity
                else:
                    self.buffer.trim(BURST_FACTOR * max(self.buffer.capacity, self.link.batch))
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
                ref = hub.push.remote(self.key, self.name, self.seq, _pickled(batch))
                self.in_flight.append((ref, len(batch), self.seq))
                self.seq += 1
        self.submitted = self.buffer.drained - len(self.held)

    def _ready_prefix(self, events: list[ev.Event]) -> list[ev.Event]:
        if not PendingEvent.made or PendingEvent not in set(map(type, events)):
            return events
        out: list[ev.Event] = []
        for i, e in enumerate(events):
            if type(e) is PendingEvent:
                try:
                    ready = event_ready(e)
                except Exception:
                    ready = None
                if ready is None:
                    self.unresolved += 1
                    continue
                if not ready:
                    self.held = events[i:]
                    break
                e = resolve_event(e)
            out.append(e)
        return out

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
        self.lost += unanswered + len(self.held) + len(self.buffer.drain())
        self.in_flight.clear()
        self.held = []
        self.buffer.close()

    def settle(self) -> tuple[int, int]:
        """Of the calls still unanswered: events known taken, and the others."""
        flights = list(self.in_flight)
        taken = sum(n for _, n, seq in flights if seq < self.confirmed)
        return taken, sum(n for _, n, _ in flights) - taken

    # -- the caller's side --------------------------------------------------------------------
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


_started: weakref.WeakSet[RayLogger] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for r in list(_started):
        r._pusher = None
        r._lock = threading.Lock()
        if not r._closed:
            r._put = r._start_and_put
    _started.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class RayLogger(Recorder[None]):
    """A logger for a Ray actor or task, on any node, that logs into the run
    (``link.remote(name)``): every logging method of :class:`~aoff.OffPolicyLogger`,
    and ``flush``/``close`` as :class:`~aoff.RemoteLogger`'s. Picklable."""

    def __init__(self, link: LinkSettings, name: str) -> None:
        problem = check_name(name)
        if problem is not None:
            raise ValueError(problem)
        self._link = link
        self._name = name
        self._setup()

    def _setup(self) -> None:
        self._clock = time.time
        self._capturing = False
        self._pusher: _Pusher | None = None
        self._closed = False
        self._report: RemoteReport | None = None
        self._lock = threading.Lock()
        self._put = self._start_and_put
        self._refresh_capture()

    def __getstate__(self) -> dict[str, Any]:
        return {"link": self._link, "name": self._name, "closed": self._closed}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._link = state["link"]
        self._name = state["name"]
        self._setup()
        if state["closed"]:
            self._closed = True
            self._put = self._put_closed

    def __repr__(self) -> str:
        return f"RayLogger({self._name!r})"

    @property
    def name(self) -> str:
        """The name asked for (the run may add a suffix: see :class:`~aoff.RemoteReport`)."""
        return self._name

    # -- the hot path -------------------------------------------------------------------------
    def _start_and_put(self, event: ev.Event) -> None:
        with self._lock:
            if self._pusher is None:
                self._refresh_capture()
                p = _Pusher(self._link, self._name, self._refresh_capture)
                p.thread.start()
                self._pusher = p
                _started.add(self)
            self._put = self._put_checked
        self._put_checked(event)

    def _put_checked(self, event: ev.Event) -> None:
        if not _PLAIN.issuperset(map(type, event)) and type(event) is not PendingEvent:
            _check_picklable(event)
        p = self._pusher
        if p is None or p.gone:
            if p is not None:
                next(p.late)
            return
        p.buffer.put(event)

    def _put_closed(self, event: ev.Event) -> None:
        raise RuntimeError(
            f"aoff: {ev.name_of(event)}() on RayLogger {self._name!r} after its close(); "
            "get a new one with link.remote()"
        )

    # -- waiting ------------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait (at most the link's ``timeout``) until the run has written everything this
        process logged so far. Returns at once when the run's hub is gone."""
        if self._closed:
            raise RuntimeError(f"aoff: flush() on RayLogger {self._name!r} after close()")
        p = self._pusher
        if p is None or p.gone:
            return
        timeout = self._link.timeout
        deadline = time.monotonic() + timeout
        want = p.buffer.drained + len(p.buffer)  # every event logged so far
        p.wake.set()
        if not p.wait(lambda: p.submitted >= want or p.gone, timeout) or p.gone:
            return
        upto = p.seq
        import ray

        call = self._link.hub.flush.options(concurrency_group="ctl")
        try:
            refused = ray.get(
                call.remote(p.key, upto), timeout=max(deadline - time.monotonic(), 0.01)
            )
        except ray.exceptions.GetTimeoutError:
            return
        except Exception as exc:
            p.error = p.error or f"the run's hub is gone ({type(exc).__name__}: {exc})"
            return
        if refused is not None:
            p.error = p.error or f"the run's hub refused this producer: {refused}"
        else:
            p.confirmed = max(p.confirmed, upto)

    def close(self) -> RemoteReport:
        """Send what is left, wait (at most the link's ``timeout``) for the run's word, and
        say what reached it. Idempotent; later logging calls raise ``RuntimeError``."""
        with self._lock:
            if self._report is not None:
                return self._report
            self._closed = True
            self._put = self._put_closed
            p = self._pusher
        if p is None:
            self._report = RemoteReport(self._name, received=0)
            return self._report
        timeout = self._link.timeout
        deadline = time.monotonic() + timeout
        p.close_by = deadline
        p.closing = True
        p.wake.set()
        p.wait(p.done.is_set, timeout + 1.0)
        got: RemoteReport | None = None
        if not p.gone and p.seq:
            import ray

            call = self._link.hub.close.options(concurrency_group="ctl")
            try:
                got = ray.get(
                    call.remote(p.key, self._name, p.seq),
                    timeout=max(deadline - time.monotonic(), 0.01) + 1.0,
                )
            except ray.exceptions.GetTimeoutError:
                p.error = p.error or f"the run's hub did not answer within {timeout:g}s"
            except Exception as exc:
                p.error = p.error or f"the run's hub is gone ({type(exc).__name__}: {exc})"
        # calls never answered (a dead or unreachable hub) and events still held count
        # as dropped: close() never waits past its bound for them
        if got is not None and got.error is None:
            p.confirmed = max(p.confirmed, p.seq)  # the hub took every batch
        taken, unanswered = p.settle()
        dropped = p.dropped() + unanswered + len(p.held)
        error = p.error
        name, received = self._name, None
        if got is not None:
            name, received = got.name, got.received
            dropped += got.dropped
            error = error or got.error
        elif not p.seq and not p.gone:
            received = 0
        self._report = RemoteReport(name, p.sent + taken, dropped, received, error)
        return self._report

    async def aflush(self) -> None:
        """:meth:`flush` for async code (waits in a worker thread)."""
        import anyio.to_thread

        await anyio.to_thread.run_sync(self.flush)

    async def aclose(self) -> RemoteReport:
        """:meth:`close` for async code (waits in a worker thread)."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> RayLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
