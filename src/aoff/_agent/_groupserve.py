"""A run group's agent: the N runs' pumps in one process of their own.

Why: a run group (``aoff.RunGroup``) is N whole runs; pumped in a thread of the
training process, their folding and writing compete with the training loop for its GIL.
Here, as a single run's agent does (``_serve.py``), they run in a process beside it: the
training process only drains the group's buffer and ships its items (one per group call,
pickled in frames), the agent splits each into one event per run and folds and writes
them (``_pump/_grouppump.py``, on this process's main thread).

Like a single run's agent it ignores SIGINT and SIGTERM (``_serve.main``) and ends on the
training process's word (:class:`GroupStop`) or, if that process dies, on end of file:
then it folds and writes everything it received, closes the files and exits. Its buffer
is a :class:`Backlog` (frames kept pickled, bounded in bytes, policy ``block``): when it
is full the receiver stops reading and backpressure reaches the training process's
buffer, whose overflow policy counts what it drops.
"""

from __future__ import annotations

import contextlib
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

import anyio

from .._core import _events as ev
from .._core._rules import Alert
from .._core._say import say_to_stderr
from .._pump._backlog import Backlog, backlog_bytes
from .._pump._grouppump import GroupPump, GroupSpec, group_pump
from .._transport._messages import (
    Events,
    Flush,
    Flushed,
    FromPeer,
    GroupAck,
    GroupAlerted,
    GroupReport,
    GroupStop,
    Stop,
    decode_to_peer,
    encode,
)

#: how often at most the agent tells the training process each run's steps folded
ACK_INTERVAL = 0.25


class GroupAgent:
    """The group's pumps fed from ``conn``; answers on ``conn``."""

    def __init__(self, spec: GroupSpec, conn: Connection) -> None:
        self.conn = conn
        self._send_lock = threading.Lock()
        first = spec.options[0]
        self.buffer = Backlog(backlog_bytes(first.capacity))
        self.buffer.on_unreadable = say_to_stderr
        #: frames of plain group steps read as columns, not unpickled
        self.reader = self.buffer.read_group_steps(len(spec.options))
        self.finish_timeout = first.finish_timeout
        self._acked: tuple[int, ...] = ()
        self._acked_at = 0.0
        self.pump: GroupPump = group_pump(spec, self.buffer, self._alerted, self.ack)

    def _alerted(self, run: int, alert: Alert) -> None:
        self.send(GroupAlerted(run, alert))

    def send(self, message: FromPeer) -> None:
        # OSError: the training process is gone; nobody to tell
        with self._send_lock, contextlib.suppress(OSError):
            self.conn.send_bytes(encode(message))

    def ack(self, *, now: bool = False) -> None:
        """Each run's steps, when they changed, at most every ``ACK_INTERVAL`` (or
        ``now``): the training process waits for the report as long as they move."""
        mono = time.monotonic()
        if not now and mono - self._acked_at < ACK_INTERVAL:
            return
        self._acked_at = mono
        steps = self.pump.steps()
        if steps != self._acked:
            self._acked = steps
            self.send(GroupAck(steps))

    async def serve(self) -> None:
        receiver = threading.Thread(target=self._receive, name="aoff-group-receiver", daemon=True)
        await self.pump.run(receiver.start)
        receiver.join()

    def _receive(self) -> None:
        final: Any = None
        summary = True
        while final is None:
            try:
                msg = decode_to_peer(self.conn.recv_bytes())
            except (EOFError, OSError):  # the training process is gone: write what came
                final = ev.finish_event(time.time(), "Training Summary", "", True)
                break
            match msg:
                case Events(payload, n, _):
                    # the training process counts what its buffer dropped itself
                    self.buffer.put_frame(payload, n)  # unpickled as the pump drains it
                case Flush(n):
                    self.pump.flush()
                    self.ack(now=True)
                    self.send(Flushed(n, None))
                case GroupStop(last, stop_summary):
                    final, summary = tuple(last), bool(stop_summary)
                case Stop(stop_summary):  # never sent by a group; closes all the same
                    final = ev.finish_event(time.time(), "Training Summary", "", False)
                    summary = bool(stop_summary)
                case _:  # the hello again, or printed text: the agent draws no panel
                    pass
        idle = self.finish_timeout + 5.0
        reports = self.pump.stop(final, summary, idle)
        unread = self.buffer.dropped  # frames that could not be read back here
        for report in reports:
            report.dropped_events += unread
        self.ack(now=True)
        self.send(GroupReport(tuple(reports)))


def serve_group(spec: GroupSpec, conn: Connection) -> int:
    """The group agent's main: pump until the training process says stop (or is gone)."""
    anyio.run(GroupAgent(spec, conn).serve)
    return 0
