"""The hub: a small Ray actor on the learner's node that feeds the run.

Why an actor: producers on other nodes cannot reach the run folder's Unix socket, and
aoff opens no network port of its own. Ray already connects every node, so the events
cross nodes as Ray actor calls (their payloads through Ray's object store when large),
and the last hop, on the learner's own node, is the existing producer path: for each
producer the hub holds a regular :class:`~aoff.RemoteLogger` (``log.remote(name)``), so
the run sees a Ray collector exactly as it sees a local one (its records under its
name, its totals summed, its loss reported; its media events, frames and all, handed to
the run's encoder as a ``log.remote()`` producer's).

Calls (``push`` in the actor's default group, one thread; the rest in ``ctl``, so a
producer waiting for its ``close`` never holds another's ``push`` back):

``push(key, name, seq, payload, rules)``
    one batch: ``payload`` is the pickled list of events (protocol 5). ``seq`` numbers
    a producer's batches 0, 1, 2, ...: they enter the run in that order even if Ray runs
    two at once. ``rules``: the producer's own (``link.remote(name, rules=...)``), given
    to its ``RemoteLogger`` by the push that makes it. Returns ``None``, or why this
    producer's events are not taken any more.
``beat(key)``
    a producer says it is alive (about once a second, whether or not it ships).
``flush(key, upto)`` / ``close(key, upto)``
    once batches ``0 .. upto-1`` are in: the run has written them / the producer's
    :class:`~aoff.RemoteReport` from its ``RemoteLogger``.

Lost producers: a producer silent for ``lost_after`` seconds (no batch, no beat: its
actor was killed, its node removed, or its process stalled) is declared lost. What it
had handed over is flushed into the run (bounded), then its connection to the run is
cut without the closing handshake, so the run reports it as it reports any producer
killed mid-run: by name, with the events that came from it. Its later calls, if any,
are refused (it then drops and counts).

The hub dies with the learner (Ray ends a driver's actors with it); producers then see
their calls fail, and drop and count what they still hold.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._channel._sending import RemoteReport
from .._core._buffer import Overflow
from .._core._rules import Rule
from .._faces._remote import RemoteLogger

__all__ = ["Hub", "HubSpec"]

#: how often the watchdog looks for silent producers
WATCH_INTERVAL = 0.25


@dataclass(frozen=True)
class HubSpec:
    """What the hub needs to make a producer of the run (``log.remote()``'s settings)."""

    log_dir: str
    capacity: int
    overflow: Overflow
    timeout: float
    owner_pid: int
    lost_after: float


@dataclass
class _Producer:
    name: str
    logger: RemoteLogger
    last_seen: float
    next_seq: int = 0
    early: dict[int, bytes] = field(default_factory=dict)  # batches that came before their turn
    events: int = 0
    refused: str | None = None
    report: RemoteReport | None = None
    put: Callable[[Any], None] | None = None


def _putter(logger: RemoteLogger, events: list[Any]) -> Callable[[Any], None]:
    """Where this producer's events go: its ``RemoteLogger``'s buffer itself, once its
    connection is started (the events were checked and pickled by the producer already,
    so the logging call's own checks are skipped: ~1 µs an event here)."""
    if not events:
        return logger._put
    first = events.pop(0)
    logger._put(first)  # starts the connection's thread and buffer
    conn = logger._sender
    return logger._put if conn is None else conn.buffer.put


def _cut(logger: RemoteLogger) -> None:
    """End ``logger``'s connection to the run without the closing handshake (the run
    then reports it lost, as it does a killed producer)."""
    conn = logger._sender
    if conn is not None:
        conn.cut()


class Hub:
    """The actor's class (``ray.remote`` is applied in ``serve``); see the module's doc."""

    def __init__(self, spec: HubSpec) -> None:
        self.spec = spec
        self.producers: dict[str, _Producer] = {}
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.lost: list[tuple[str, int]] = []
        self._watch = threading.Thread(target=self._watchdog, name="aoff-ray-hub", daemon=True)
        self._watch.start()

    def ping(self) -> int:
        return os.getpid()

    # -- producers' calls ---------------------------------------------------------------------
    def push(
        self, key: str, name: str, seq: int, payload: bytes, rules: tuple[Rule, ...] = ()
    ) -> str | None:
        with self.lock:
            p = self.producers.get(key)
            if p is None:
                p = self.producers[key] = _Producer(
                    name,
                    RemoteLogger(
                        self.spec.log_dir,
                        name,
                        capacity=self.spec.capacity,
                        overflow=self.spec.overflow,
                        timeout=self.spec.timeout,
                        owner_pid=self.spec.owner_pid,
                        rules=rules,
                    ),
                    time.monotonic(),
                )
                self.cond.notify_all()
            if p.refused is not None:
                return p.refused
            p.last_seen = time.monotonic()
            if seq != p.next_seq:
                p.early[seq] = payload
                return None
        # one thread runs push (the default group), so the puts below keep the order
        while True:
            events = pickle.loads(payload)
            n = len(events)
            put = p.put
            if put is None:
                put = p.put = _putter(p.logger, events)
            for e in events:
                put(e)
            with self.lock:
                p.events += n
                p.next_seq += 1
                nxt = p.early.pop(p.next_seq, None)
                self.cond.notify_all()
            if nxt is None:
                return None
            payload = nxt

    def beat(self, key: str) -> str | None:
        with self.lock:
            p = self.producers.get(key)
            if p is None:
                return None
            if p.refused is None:
                p.last_seen = time.monotonic()
            return p.refused

    def _find(self, key: str, upto: int) -> _Producer | None:
        """The producer ``key``; if it sent batches that are not here yet (a flush or
        close can overtake its pushes: they run on other threads), wait for the first
        (bounded)."""
        deadline = time.monotonic() + self.spec.timeout
        with self.cond:
            while key not in self.producers and upto > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(min(left, 0.1))
            return self.producers.get(key)

    def _wait_for(self, p: _Producer, upto: int) -> bool:
        deadline = time.monotonic() + self.spec.timeout
        with self.cond:
            while p.next_seq < upto and p.refused is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.1))
        return p.next_seq >= upto

    def flush(self, key: str, upto: int) -> str | None:
        p = self._find(key, upto)
        if p is None:
            return None if upto == 0 else "the hub never got this producer's batches"
        if not self._wait_for(p, upto):
            return p.refused or f"the hub did not get every batch within {self.spec.timeout:g}s"
        if p.refused is None:
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                p.logger.flush()
        return p.refused

    def close(self, key: str, name: str, upto: int) -> RemoteReport:
        p = self._find(key, upto)
        if p is None:
            if upto == 0:
                return RemoteReport(name, received=0)
            return RemoteReport(name, error="the hub never got this producer's batches")
        complete = self._wait_for(p, upto)
        with self.lock:
            if p.refused is not None and p.report is not None:
                return p.report
            p.refused = "this producer was closed"
        report = p.logger.close()
        if not complete and report.error is None:
            report.error = f"the hub did not get every batch within {self.spec.timeout:g}s"
        p.report = report
        return report

    # -- lost producers -----------------------------------------------------------------------
    def _watchdog(self) -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            now = time.monotonic()
            with self.lock:
                silent = [
                    p
                    for p in self.producers.values()
                    if p.refused is None and now - p.last_seen > self.spec.lost_after
                ]
                for p in silent:
                    p.refused = (
                        f"the hub declared this producer lost after {self.spec.lost_after:g}s "
                        "without a word from it"
                    )
                    self.cond.notify_all()
            for p in silent:
                threading.Thread(target=self._lose, args=(p,), daemon=True).start()

    def _lose(self, p: _Producer) -> None:
        """Deliver what ``p`` handed over, then cut it so that the run reports it lost."""
        with contextlib.suppress(RuntimeError):
            p.logger.flush()
        _cut(p.logger)
        p.report = p.logger.close()
        with self.lock:
            self.lost.append((p.report.name, p.events))

    def lost_producers(self) -> list[tuple[str, int]]:
        """``(name, events handed over)`` for each producer declared lost so far."""
        with self.lock:
            return list(self.lost)
