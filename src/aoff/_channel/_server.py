"""The run's live server: hands state snapshots to ``aoff attach`` viewers.

It lives beside the pump (in the agent process by default, so the training process pays
nothing; in the training process in thread mode), entirely on daemon threads: one
accepts connections, one per connection authenticates it and then serves it. The pump
touches it only through :meth:`LiveServer.due`, :meth:`LiveServer.publish` (a reference
swapped under a lock no sender holds for more than that) and :meth:`LiveServer.end`;
nothing here ever touches the pump's event loop.

A connection is served in this order, each step bounded by ``HANDSHAKE_TIMEOUT``
(``_timeouts.py``): ``multiprocessing.connection``'s challenge with the run's key both
ways (done on the connection's own thread rather than in ``Listener.accept``, so that a
peer that never answers holds up only itself), then the peer's hello, which names its role
(``_roles.py``; unpickled only after the key was proven). :meth:`LiveServer._serve` holds
the one table of roles: each role's handler then owns the connection on its daemon thread
(receives time out after ``HANDSHAKE_TIMEOUT``, sends after ``SEND_TIMEOUT``, unless the
handler sets its own), and the connection is closed when it returns. A hello that names no
known role is answered :class:`~._roles.Refused`. A wrong key, a peer that vanishes, a
viewer that stops reading: that connection is dropped, and the server goes on.

The ``view`` role (:func:`serve_viewer`): every ``1/refresh_hz`` seconds the newest
snapshot goes out as a :class:`~._roles.Snapshot`; at the end of the run an
:class:`~._roles.End`. Snapshots are taken by the pump only while a viewer is connected,
at most at the fastest viewer's rate (and at most once per pump tick). The ``produce``
role is ``_produce.py``'s.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import (
    Connection,
    Listener,
    answer_challenge,
    deliver_challenge,
)
from typing import TYPE_CHECKING, assert_never

from .._core._state import State
from ._paths import Placement, bind_listener, create_key, find_socket, probe, remove_placement
from ._produce import serve_producer
from ._roles import End, Produce, Refused, Snapshot, View, decode_hello, to_wire
from ._timeouts import HANDSHAKE_TIMEOUT, SEND_TIMEOUT, set_timeouts

if TYPE_CHECKING:
    from ._producers import ProducerHub

__all__ = ["LiveServer", "serve_viewer", "start_serving", "stop_serving"]

#: connections served at once; more are closed at once
MAX_CONNECTIONS = 64
#: refused connections reported one line each (then only counted)
REFUSALS_REPORTED = 5
MIN_HZ, MAX_HZ = 0.1, 60.0


class LiveServer:
    """Serves one run folder's socket. Make it with :meth:`start`; end it with :meth:`close`."""

    def __init__(
        self,
        listener: Listener,
        where: Placement,
        key: bytes,
        say: Callable[[str], None] | None = None,
        produce: ProducerHub | None = None,
    ) -> None:
        self.listener = listener
        self.where = where
        self.key = key
        self._cond = threading.Condition()
        self._closing = False
        self._threads: set[threading.Thread] = set()
        self.refused = 0  # connections that failed the key
        #: the pump's: where refusals are reported, and the producers' hub
        #: (``_produce.py``; ``None``: this server takes no producers)
        self.say = say
        self.produce = produce
        # what viewers get: the newest snapshot and its version; the end once the run ended
        self.version = 0
        self.latest: Snapshot | None = None
        self.final: End | None = None
        # read by the pump without the lock (plain attribute reads)
        self.viewers = 0
        self._rates: dict[int, float] = {}
        self._interval = 1.0
        self._next_publish = 0.0
        self._accepter = threading.Thread(
            target=self._accept_loop, name="aoff-live-accept", daemon=True
        )

    @classmethod
    def start(
        cls,
        run_dir: str,
        say: Callable[[str], None] | None = None,
        produce: ProducerHub | None = None,
    ) -> LiveServer:
        """Create the key, bind the socket, start accepting (blocking file work: call it
        off the event loop). Raises ``RuntimeError`` when another live run serves
        ``run_dir`` and ``OSError`` when the socket cannot be made."""
        os.makedirs(run_dir, exist_ok=True)
        existing = find_socket(run_dir)
        if existing is not None and probe(existing) == "live":
            raise RuntimeError(f"another live run serves {run_dir!r}")
        key = create_key(run_dir)
        listener, where = bind_listener(run_dir)
        server = cls(listener, where, key, say, produce)
        server._accepter.start()
        return server

    # -- the pump's side (cheap; never blocks for long) --------------------------------------
    def due(self, mono: float) -> bool:
        """Whether the pump should publish a snapshot now (a viewer waits for one)."""
        return self.viewers > 0 and mono >= self._next_publish

    def publish(self, state: State, now: float, mono: float) -> None:
        """Hand ``state`` (a snapshot the server may keep) to the viewers."""
        with self._cond:
            self._next_publish = mono + self._interval
            self.version += 1
            self.latest = Snapshot(state, now)
            self._cond.notify_all()

    def end(self, state: State, now: float, *, summary: bool, lines: list[str]) -> None:
        """The run is over: every viewer gets the final state and the closing lines."""
        with self._cond:
            self.final = End(state, now, summary, list(lines))
            self._cond.notify_all()

    def close(self, timeout: float = 0.5) -> None:
        """Stop accepting, let the viewers take the end message (``timeout`` in all),
        remove the socket, key and pointer. Blocking: call it off the event loop."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            threads = list(self._threads)
        if self.produce is not None:  # producers see end of file: the run is gone
            self.produce.close()
        # wake the accept loop: it checks _closing after every accept
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
            s.settimeout(0.2)
            s.connect(self.where.socket_path)
        self._accepter.join(0.5)
        remove_placement(self.listener, self.where)
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    @property
    def closing(self) -> bool:
        return self._closing

    # -- viewers' rates ----------------------------------------------------------------------
    def add_rate(self, ident: int, hz: float) -> None:
        with self._cond:
            self._rates[ident] = hz
            self._interval = 1.0 / max(self._rates.values())
            self.viewers = len(self._rates)
            self._next_publish = 0.0  # a new viewer gets a frame on the next tick

    def remove_rate(self, ident: int) -> None:
        with self._cond:
            self._rates.pop(ident, None)
            self.viewers = len(self._rates)
            if self._rates:
                self._interval = 1.0 / max(self._rates.values())

    def wait_for(self, seen: int, not_before: float) -> End | tuple[int, Snapshot] | None:
        """Block until there is something for a viewer that has seen version ``seen`` and
        wants nothing before ``not_before`` (monotonic): the :class:`End`, a newer
        snapshot with its version, or ``None`` once the server closes."""
        with self._cond:
            while True:
                if self.final is not None:
                    return self.final
                if self._closing:
                    return None
                wait: float | None = None
                if self.version > seen and self.latest is not None:
                    wait = not_before - time.monotonic()
                    if wait <= 0:
                        return self.version, self.latest
                self._cond.wait(wait)

    # -- connections -------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._closing:
            try:
                conn = self.listener.accept()
            except OSError:
                if self._closing:
                    return
                time.sleep(0.05)  # e.g. out of file descriptors: try again shortly
                continue
            with self._cond:
                if self._closing or len(self._threads) >= MAX_CONNECTIONS:
                    conn.close()
                    continue
                t = threading.Thread(
                    target=self._serve, args=(conn,), name="aoff-live-conn", daemon=True
                )
                self._threads.add(t)
            t.start()

    def _serve(self, conn: Connection) -> None:
        try:
            set_timeouts(conn, HANDSHAKE_TIMEOUT, SEND_TIMEOUT)
            # Listener.accept's handshake, on this thread: prove both ways that the peer
            # and this run hold the same key; nothing is unpickled before this
            deliver_challenge(conn, self.key)
            answer_challenge(conn, self.key)
            try:
                hello = decode_hello(conn.recv())
            except ValueError as exc:
                conn.send(to_wire(Refused(str(exc))))
                return
            # the one table of roles: each handler owns the connection until it returns
            match hello:
                case View():
                    serve_viewer(self, conn, hello)
                case Produce():
                    serve_producer(self, conn, hello)
                case _:
                    assert_never(hello)
        except AuthenticationError:
            self.refused += 1
            if self.say is not None and self.refused <= REFUSALS_REPORTED:
                self.say(
                    "aoff: refused a connection to the run's socket: it did not prove "
                    "the run's key (aoff.key); the run goes on"
                )
        except Exception:  # a peer that vanished, timed out or sent garbage: drop it
            pass
        finally:
            conn.close()
            with self._cond:
                self._threads.discard(threading.current_thread())


def serve_viewer(server: LiveServer, conn: Connection, hello: View) -> None:
    """The ``view`` role; see the module's doc."""
    hz = min(max(hello.refresh_hz, MIN_HZ), MAX_HZ)
    interval = 1.0 / hz
    ident = threading.get_ident()
    server.add_rate(ident, hz)
    try:
        seen, not_before = 0, 0.0
        while True:
            news = server.wait_for(seen, not_before)
            if news is None:
                return
            if isinstance(news, End):
                conn.send(to_wire(news))
                return
            seen, snapshot = news
            not_before = time.monotonic() + interval
            conn.send(to_wire(snapshot))  # pickled here, off the pump's thread
    finally:
        server.remove_rate(ident)


# -- the pump's hooks (called on its event loop) ------------------------------------------------
async def start_serving(
    run_dir: str, say: Callable[[str], None], produce: ProducerHub | None = None
) -> LiveServer | None:
    """Serve ``run_dir`` (the file work runs off the loop); ``None``, with one line
    reported, when it cannot be done: the run goes on, only ``aoff attach`` is off."""
    import anyio.to_thread

    try:
        return await anyio.to_thread.run_sync(LiveServer.start, run_dir, say, produce)
    except (OSError, RuntimeError) as exc:
        say(f"aoff: `aoff attach` is off for this run: {exc}")
        return None


async def stop_serving(server: LiveServer | None) -> None:
    """Close ``server`` (viewers get their end message first, within a bound)."""
    if server is not None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(server.close)
