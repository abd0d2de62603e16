"""A run group's training-process half in process mode: ship its items to its agent.

Why: with ``pump="process"`` (the default) a group's N pumps run in an agent process of
their own (``_agent/_groupserve.py``), as a single run's pump does, so their folding
and writing never compete with the training loop for its GIL. What stays here is the
group's buffer (the hot path puts one item per group call into it) and two daemon
threads: "aoff-group-shipper" drains the buffer every ``SHIP_INTERVAL`` and sends the
items, pickled in frames, over a blocking socket (while the agent is behind, the send
waits and the buffer's overflow policy counts what it drops); "aoff-group-receiver"
takes the agent's answers (each run's steps, alerts, flushes, the reports).

If the agent is lost before its reports, nothing is lost in silence: each run's report
is partial, its steps the agent confirmed, every step shipped or logged after them
counted dropped, and one line says so.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from .._core._events import Event
from .._core._groupbatch import item_steps
from .._core._groupbuffer import GroupBuffer
from .._core._report import FinishReport
from .._core._rules import Alert
from .._core._say import say_to_stderr
from .._pump._grouppump import GroupSpec
from .._pump._progresswatch import ProgressWatch, wait_progressing
from .._transport._batches import pack_events
from .._transport._messages import (
    Events,
    Flush,
    Flushed,
    GroupAck,
    GroupAlerted,
    GroupReport,
    GroupStop,
    Hello,
    decode_from_peer,
    encode,
)
from ._spawn import spawn_agent

__all__ = ["GroupAgentSide"]

#: how often the shipper looks at the group's buffer (each look needs the GIL: few)
SHIP_INTERVAL = 0.05
#: group items per frame (one item is one group call, whatever the number of runs)
FRAME_ITEMS = 1024


class GroupAgentSide:
    """Start the group's agent with ``spec``; ship ``intake``'s items to it; tell
    ``on_alert(run, alert)`` each alert. The training thread calls :meth:`flush` and
    :meth:`stop`."""

    def __init__(
        self, spec: GroupSpec, intake: GroupBuffer, on_alert: Callable[[int, Alert], None]
    ) -> None:
        self.runs = len(spec.options)
        self.intake = intake
        self._on_alert = on_alert
        self.proc, sock = spawn_agent()
        sock.setblocking(True)
        self.conn = Connection(sock.detach())
        self.conn.send_bytes(encode(Hello(spec)))
        self._cond = threading.Condition()
        self._wake = threading.Event()
        self._flush_asked = 0
        self._flush_sent = 0  # the shipper's: the last flush it sent
        self._flushed = 0
        self._stop: tuple[Event, bool] | None = None
        #: each run's steps the agent folded, as of its last word
        self.acked: tuple[int, ...] = (0,) * self.runs
        self.reports: tuple[FinishReport, ...] | None = None
        self.lost: str | None = None  # why the agent is gone, once it is
        self.shipped_steps = 0  # steps of every run sent (a log_step 1, a block its K)
        self.unsent_steps = 0  # steps of every run that never reached the agent
        self.progress = 0  # bumps on every answer (a stop waits while it moves)
        self._shipper = threading.Thread(target=self._ship, name="aoff-group-shipper", daemon=True)
        self._receiver = threading.Thread(
            target=self._receive, name="aoff-group-receiver", daemon=True
        )
        self._shipper.start()
        self._receiver.start()

    # -- the shipper's thread ---------------------------------------------------------------
    def _ship(self) -> None:
        intake = self.intake
        while True:
            stop, asked = self._stop, self._flush_asked  # before the drain: what it covers
            if intake.overflow == "drop_oldest":
                intake.trim()  # over capacity: the oldest go, counted (``intake.dropped``)
            items = intake.drain(FRAME_ITEMS)
            if items:
                self._send_items(items)
                continue
            if self.lost is None and asked > self._flush_sent:
                self._flush_sent = asked
                self._send(Flush(asked))
            if stop is not None:
                if self.lost is None:
                    self._send(GroupStop(stop[0], stop[1]))
                return
            self._wake.wait(SHIP_INTERVAL)
            self._wake.clear()

    def _send_items(self, items: list[Any]) -> None:
        steps = sum(map(item_steps, items))  # steps of every run (a block: its K)
        if self.lost is None:
            try:
                payload = pack_events(items)
            except Exception as exc:  # a value pickle refuses: these items are counted
                say_to_stderr(
                    f"aoff: {len(items):,} group calls could not be sent to the group's "
                    f"agent ({type(exc).__name__}: {exc}); counted as dropped"
                )
            else:
                if self._send(Events(payload, len(items), 0)):
                    self.shipped_steps += steps
                    return
        self.unsent_steps += steps

    def _send(self, message: Events | Flush | GroupStop) -> bool:
        try:
            self.conn.send_bytes(encode(message))
        except OSError as exc:
            self._gone(f"its socket failed ({type(exc).__name__}: {exc})")
            return False
        return True

    # -- the receiver's thread ----------------------------------------------------------------
    def _receive(self) -> None:
        while True:
            try:
                msg = decode_from_peer(self.conn.recv_bytes())
            except (EOFError, OSError, ValueError) as exc:
                self._gone(f"it ended ({type(exc).__name__})")
                return
            with self._cond:
                self.progress += 1
                match msg:
                    case GroupAck(steps):
                        self.acked = tuple(steps)
                    case GroupAlerted(run, alert):
                        self._on_alert(run, alert)
                    case Flushed(n, _):
                        self._flushed = max(self._flushed, n)
                    case GroupReport(reports):
                        self.reports = tuple(reports)
                self._cond.notify_all()
                if self.reports is not None:
                    return

    def _gone(self, why: str) -> None:
        with self._cond:
            if self.lost is None and self.reports is None:
                self.lost = why
                say_to_stderr(
                    f"aoff: the run group's agent was lost: {why}; what it had not "
                    "written is counted dropped in each run's report"
                )
            self._cond.notify_all()

    # -- from the training thread ---------------------------------------------------------------
    def _wait(self, done: Callable[[], bool], idle_timeout: float) -> bool:
        """Wait until ``done()`` while the agent answers or the shipper sends."""

        def mark() -> tuple[int, int, int]:
            return self.progress, self.intake.drained, self.shipped_steps

        idle = ProgressWatch(mark, idle_timeout)

        def pause() -> None:
            with self._cond:
                self._cond.wait(0.25)

        return wait_progressing(
            lambda: done() or self.lost is not None or self.reports is not None, idle, pause
        )

    def flush(self, idle_timeout: float) -> None:
        """Wait until the agent wrote and flushed everything logged so far."""
        with self._cond:
            self._flush_asked += 1
            n = self._flush_asked
        self._wake.set()
        self._wait(lambda: self._flushed >= n, idle_timeout)

    def stop(self, final: Event, summary: bool, idle_timeout: float) -> list[FinishReport]:
        """Ship what is left, close each run with ``final``, wait for the reports (partial
        ones, said in a line, if the agent is lost or stops making progress)."""
        self._stop = (final, summary)
        self._wake.set()
        self._wait(lambda: False, idle_timeout)
        self._shipper.join(5.0)
        if self.reports is None:
            if self.lost is None:
                self._gone(f"it made no progress for {idle_timeout:g} s")
            with contextlib.suppress(OSError):
                self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10.0)
        with contextlib.suppress(OSError):
            self.conn.close()
        if self.reports is not None:
            for report in self.reports:
                report.dropped_events += self.unsent_steps
            return list(self.reports)
        return [self._partial(k) for k in range(self.runs)]

    def _partial(self, run: int) -> FinishReport:
        written = self.acked[run]
        logged = self.shipped_steps + self.unsent_steps + self.intake.steps
        return FinishReport(
            steps=written, dropped_events=max(0, logged - written), interrupted=True, partial=True
        )
