"""The producer's half of a :class:`~aoff.RemoteLogger`: its buffer, its thread, its socket.

Why apart from ``_remote.py``: the public object holds only what pickles (:class:`Spec`);
everything bound to one process - the event buffer, the daemon thread that connects to
the run folder's socket (retrying while the run's server starts), proves the key, names
its role and then drives the agent's :class:`~aoff._transport._shipper.Shipper` over a
non-blocking :class:`~aoff._transport._wire.Link` - lives in one :class:`Conn` per process.
The server's half is ``_produce.py``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import AuthenticationError
from typing import Any

from .._core._buffer import EventBuffer, Overflow
from .._core._rules import Rule
from .._media._freed import FreedBytes
from .._transport._messages import ProducerReport
from .._transport._shipper import Shipper, ShipperSetup
from .._transport._wire import AgentGone, Link
from ._paths import LiveError, find_socket, read_key
from ._roles import Produce, Refused, decode_to_producer, to_wire
from ._sending import RemoteReport

__all__ = ["HELLO_TIMEOUT", "Conn", "Spec"]

#: seconds the run has to answer the producer's role tag
HELLO_TIMEOUT = 5.0


@dataclass(frozen=True)
class Spec:
    log_dir: str
    name: str
    capacity: int
    overflow: Overflow
    timeout: float
    owner_pid: int
    #: bytes of frames the producer may hold until they are sent or dropped
    media_budget: int
    #: the producer's own rules, for the run it joins (judged on its events only)
    rules: tuple[Rule, ...] = ()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists
        return True
    return True


class Conn:
    """The process-bound half: buffer, shipper thread, connection (one per process)."""

    def __init__(
        self,
        spec: Spec,
        on_round: Callable[[], object],
        on_freed: Callable[[int], object] | None = None,
    ) -> None:
        self.spec = spec
        self.on_round = on_round  # the recorder's tensor-capture switch (torch imported?)
        self.buffer = EventBuffer(spec.capacity, spec.overflow)
        self.live_name = spec.name
        self.shipper: Shipper[ProducerReport] | None = None
        self.error: str | None = None
        self.gone = False
        self.late = itertools.count()  # events logged after the run was gone
        self.lost = 0  # events counted dropped when the run went
        self.sent = 0
        #: frames' bytes that left: sent, or dropped by the overflow policy, an unresolved
        #: device value or the run going (the producer's media budget, ``_faces/_producer.py``)
        self.freed = FreedBytes(on_freed)
        self.flush_asked = 0
        self.closing = False
        self.deadline = time.monotonic() + spec.timeout
        self.done = threading.Event()
        self.cond = threading.Condition()
        self.wake = threading.Event()
        self.thread = threading.Thread(
            target=self._run, name=f"aoff-remote-{spec.name}", daemon=True
        )

    # -- the thread --------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            link = self._connect()
            if link is None:
                self._give_up([])
                return
            setup = ShipperSetup(freed=self.freed)
            sh = self.shipper = Shipper(self.buffer, link, ProducerReport, setup)
            counted = link.on_sent

            def sent(batch: Any) -> None:
                self.sent += len(batch)
                if counted is not None:
                    counted(batch)
                self.freed.left(batch)

            link.on_sent = sent
            while True:
                if self.flush_asked > sh.talk.flush_asked:
                    sh.talk.flush_asked = self.flush_asked
                if self.closing and sh.talk.stop_summary is None:
                    sh.talk.stop_summary = False
                self.on_round()
                try:
                    wait = sh.step()
                except AgentGone as exc:
                    self.error = self.error or f"the run closed the connection ({exc})"
                    self._give_up(sh.unsent_events())
                    return
                with self.cond:
                    self.cond.notify_all()
                if sh.talk.report is not None:
                    link.close()
                    return
                self.wake.wait(wait)
                self.wake.clear()
        except Exception as exc:  # pragma: no cover - a bug: never into the caller
            self.error = f"remote shipper error: {type(exc).__name__}: {exc}"
            self._give_up([])
        finally:
            self.done.set()
            with self.cond:
                self.cond.notify_all()

    def _connect(self) -> Link | None:
        spec = self.spec
        last = "no socket yet"
        pause = 0.02
        while True:
            try:
                sock_path = find_socket(spec.log_dir)
                if sock_path is None:
                    raise LiveError(f"{spec.log_dir!r} has no live run (no aoff.sock)")
                key = read_key(spec.log_dir)
                from multiprocessing.connection import Client

                conn = Client(sock_path, family="AF_UNIX", authkey=key)
            except AuthenticationError:
                self.error = f"the run in {spec.log_dir!r} refused this producer's key"
                return None
            except (LiveError, OSError, EOFError) as exc:
                last = str(exc) or type(exc).__name__
            else:
                try:
                    conn.send(to_wire(Produce(spec.name, os.getpid(), spec.rules)))
                    if not conn.poll(HELLO_TIMEOUT):
                        raise EOFError("no answer from the run")
                    reply = decode_to_producer(conn.recv())
                except (OSError, EOFError) as exc:
                    conn.close()
                    last = str(exc) or type(exc).__name__
                except ValueError as exc:  # a run that speaks another protocol
                    conn.close()
                    self.error = f"the run's answer was not understood: {exc}"
                    return None
                else:
                    if isinstance(reply, Refused):
                        conn.close()
                        self.error = f"the run refused this producer: {reply.why}"
                        return None
                    self.live_name = reply.live_name
                    sock = socket.socket(fileno=os.dup(conn.fileno()))
                    conn.close()
                    return Link(sock)
            if not _alive(spec.owner_pid):
                self.error = (
                    f"the process that made this RemoteLogger (pid {spec.owner_pid}) is gone"
                )
                return None
            if time.monotonic() >= self.deadline:
                self.error = (
                    f"could not reach the run in {spec.log_dir!r} within {spec.timeout:g}s: {last}"
                )
                return None
            time.sleep(pause)
            pause = min(pause * 2, 0.25)

    def _give_up(self, unsent: list[Any]) -> None:
        """The run cannot be reached: what is left, and what comes later, is dropped."""
        self.gone = True
        rest = self.buffer.drain()
        self.lost += len(unsent) + len(rest)
        self.freed.left(unsent)
        self.freed.left(rest)
        self.buffer.close()  # a producer blocked on a full buffer goes on

    # -- the caller's side -------------------------------------------------------------------
    def start(self) -> None:
        self.thread.start()

    def cut(self) -> None:
        """End the connection without the closing handshake (the run then reports this
        producer lost, as it does a killed one)."""
        sh = self.shipper
        if sh is not None:
            with contextlib.suppress(OSError):
                sh.link.sock.shutdown(socket.SHUT_RDWR)

    def flush(self) -> None:
        self.flush_asked += 1
        n = self.flush_asked
        self.wake.set()

        def flushed() -> bool:
            sh = self.shipper
            return self.gone or (sh is not None and sh.talk.flushed >= n)

        self.wait(flushed, self.spec.timeout)

    def finish(self) -> RemoteReport:
        timeout = self.spec.timeout
        self.closing = True
        self.deadline = min(self.deadline, time.monotonic() + timeout)
        self.wake.set()
        self.wait(self.done.is_set, timeout + HELLO_TIMEOUT)
        sh = self.shipper
        got = sh.talk.report if sh is not None else None
        received = got.received if got is not None else None
        error = self.error
        if error is None and got is None:
            error = f"the run did not answer within {timeout:g}s"
        if got is not None and got.lost:
            error = "the run had stopped taking events (it finished before this close())"
        dropped = self.dropped()
        if got is None and sh is not None and not self.gone:
            # gave up waiting: what never left this process is lost too (events held
            # behind a device copy, and frames the socket had not taken; a connection
            # that saw the run gone counted those already, _give_up)
            dropped += len(sh.held) + sum(len(b) for b in sh.link.unsent())
        return RemoteReport(self.live_name, self.sent, dropped, received, error)

    def dropped(self) -> int:
        sh = self.shipper
        unresolved = sh.tally.unresolved if sh is not None else 0
        late = int(repr(self.late)[6:-1])  # itertools.count: "count(N)"
        return self.buffer.dropped + unresolved + self.lost + late + len(self.buffer)

    def wait(self, until: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not until() and not self.done.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.wake.set()
                self.cond.wait(min(left, 0.05))
