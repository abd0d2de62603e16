"""The agent process: receive batches, run the one :class:`~aoff._pump._pump.Pump`, answer.

It ignores SIGINT and SIGTERM: Ctrl+C and a supervisor's SIGTERM reach the whole
process group, and the agent must outlive the training process's drain. It ends on the
training process's word (``stop``) or, if that process dies, on end of file: then it
folds and writes everything it received, closes the files, restores the terminal and
exits.

Its own buffer (``_pump/_backlog.py``) keeps each frame as it came, pickled, until the
pump drains it, and is bounded in bytes (``backlog_bytes``: 64 MiB at the default
``capacity``). It uses the ``block`` policy (nothing is dropped in the agent): when it is
full the receiver stops reading, the socket fills, and the training process's buffer and
its overflow policy take over.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from .._core import _events as ev
from .._pump._backlog import Backlog, backlog_bytes
from .._pump._grouppump import GroupSpec
from .._pump._options import Options
from .._pump._wiring import Core
from .._transport._messages import (
    Ack,
    Alerted,
    Events,
    Flush,
    Flushed,
    FromPeer,
    Hello,
    Out,
    Report,
    Stop,
    decode_to_peer,
    encode,
)
from .._transport._wire import AGENT_IGNORES
from ._groupserve import serve_group
from ._heap import keep_freed_memory

#: the agent's first-generation collection threshold (CPython's default: 700). The count
#: is allocations less deallocations of container objects, so what trips it is the
#: events being folded (the frame the pump's drain unpickled: the backlog itself is
#: bytes, which the collector never tracks) and the records alive in the backends'
#: outboxes; each young collection walks them all. A ``gc.callbacks`` probe over 100,000
#: flat-out iterations of the standard workload (when the backlog still held unpickled
#: events): 0.53 s of collection at 10,000, 0.19 s at 50,000 (~5 MB of young objects at
#: most between collections; events and records hold no cycles)
GC_THRESHOLD = 50_000
#: the agent tells the training process how far it got at most this often (and at every
#: flush and at the end): the training process reads them once a second
ACK_INTERVAL = 0.25


class Agent:
    def __init__(self, options: Options, conn: Connection) -> None:
        self.conn = conn
        self._send_lock = threading.Lock()
        self._ack_lock = threading.Lock()
        self.buffer = Backlog(backlog_bytes(options.capacity))
        # one run: its pickles of plain log_step events read as columns (a group's agent
        # splits its events per run first, so only this one)
        self.buffer.read_plain_steps()
        self.core = Core(
            options,
            buffer=self.buffer,
            on_tick=self.tick,
            on_alert=lambda alert: self.send(Alerted(alert)),
        )
        self.buffer.on_unreadable = self.core.pump.say
        self._last_ack: Ack | None = None
        self._acked_at = 0.0
        self._frozen = False
        # the fold makes and drops many small objects: collect the young ones ~70x less
        # often (a few MB more at most), and never look at start-up's again (below)
        gc.set_threshold(GC_THRESHOLD, 20, 20)

    def tick(self) -> None:
        """Every pump tick, and before each slice of a drain (a long final drain has no
        tick): the ack, and once the backends opened (their imports are done),
        ``gc.freeze()``: the collector stops walking the ~10^5 objects of the imported
        modules, which cost ~40 ms a full collection, ~20 us an iteration of the
        standard workload flat out."""
        if not self._frozen and not self.core.pump.opening():
            self._frozen = True
            gc.freeze()
        self.ack()

    def send(self, message: FromPeer) -> None:
        # OSError: the training process is gone; nobody to tell
        with self._send_lock, contextlib.suppress(OSError):
            self.conn.send_bytes(encode(message))

    def ack(self, *, now: bool = False) -> None:
        """Tell the training process how far the run got: when it changed, at most every
        ``ACK_INTERVAL`` (each ack costs the training process an unpickle), or ``now``."""
        mono = time.monotonic()
        if not now and mono - self._acked_at < ACK_INTERVAL:
            return
        # the pump's thread and the receiver both ack: one at a time, so that an older
        # count is never sent after a newer one
        with self._ack_lock:
            self._acked_at = mono  # looked: the next look is ACK_INTERVAL away, sent or not
            got = self.core.pump.progress()
            buf = self.buffer
            mark = Ack(got.steps, got.written, buf.nbytes, buf.peak_bytes, got.media)
            if mark != self._last_ack:
                self._last_ack = mark
                self.send(mark)

    async def serve(self) -> None:
        token = anyio.lowlevel.current_token()
        async with anyio.create_task_group() as tg:
            await tg.start(self.core.pump.run, self.core.context)
            threading.Thread(
                target=self._receive, args=(token,), name="aoff-agent-receiver", daemon=True
            ).start()
        self.ack(now=True)
        pump = self.core.pump
        assert pump.result is not None  # set by run() as it ends
        self.send(Report(pump.result, pump.state_dict()))

    def _receive(self, token: Any) -> None:
        pump = self.core.pump
        buf = self.buffer
        summary = True
        try:
            while True:
                try:
                    msg = decode_to_peer(self.conn.recv_bytes())
                except (EOFError, OSError):  # the training process is gone
                    buf.append_final(ev.finish_event(time.time(), "Training Summary", "", True))
                    break
                match msg:
                    case Events(payload, n, dropped):
                        pump.note_upstream_dropped(dropped)
                        buf.put_frame(payload, n)  # unpickled as the pump drains it
                        self.ack()  # the backlog's size, also while the pump is stalled
                    case Out(stream, text):  # printed in the training process: above the panel
                        pump.echo(stream, text)
                    case Flush(n):
                        anyio.from_thread.run(pump.flush, token=token)
                        self.ack(now=True)
                        # with aoff's counters as of now, for state_dict() (made on the loop)
                        state = anyio.from_thread.run_sync(pump.state_dict, token=token)
                        self.send(Flushed(n, state))
                    case Stop(stop_summary):
                        summary = bool(stop_summary)
                        break
                    case Hello():  # only the first message says hello: nothing to do
                        pass
        finally:
            anyio.from_thread.run_sync(lambda: pump.request_stop(summary=summary), token=token)


def main(argv: Sequence[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # started with both blocked (``_spawn``): what came meanwhile is dropped now
    signal.pthread_sigmask(signal.SIG_UNBLOCK, AGENT_IGNORES)
    # the batches' buffers reused, not faulted in again (``_heap``); both kinds of agent
    keep_freed_memory()
    sock = socket.socket(fileno=int(argv[0]))
    sock.setblocking(True)
    conn = Connection(sock.detach())
    hello = decode_to_peer(conn.recv_bytes())
    if isinstance(hello, Hello) and isinstance(hello.options, GroupSpec):  # a run group
        with contextlib.suppress(OSError):
            os.nice(hello.options.options[0].agent_nice)
        return serve_group(hello.options, conn)
    if not isinstance(hello, Hello) or not isinstance(hello.options, Options):
        print("aoff agent: bad hello from the training process", file=sys.stderr)
        return 2
    # agent_nice (default 0): below the training process if asked, so that under
    # contention its loop comes first (an error here, e.g. a seccomp filter, costs only
    # the priority)
    with contextlib.suppress(OSError):
        os.nice(hello.options.agent_nice)
    agent = Agent(hello.options, conn)
    anyio.run(agent.serve)
    return 0
