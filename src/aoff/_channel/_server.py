"""The run's live server: hands state snapshots to ``aoff attach`` viewers.

It lives beside the pump (in the agent process by default, so the training process pays
nothing; in the training process in thread mode), entirely on daemon threads: one
accepts connections, one per connection authenticates it and then serves it. The pump
touches it only through :meth:`LiveServer.due`, :meth:`LiveServer.publish` (a reference
swapped under a lock no sender holds for more than that) and :meth:`LiveServer.end`;
nothing here ever touches the pump's event loop.

A connection is served in this order, each step bounded by :data:`HANDSHAKE_TIMEOUT`:
``multiprocessing.connection``'s challenge with the run's key both ways (done on the
connection's own thread rather than in ``Listener.accept``, so that a peer that never
answers holds up only itself), then one pickled *role tag* (only after the key was
proven), a tuple whose first item names the role, e.g. ``("view", refresh_hz)``. The
role's handler from :data:`ROLES` then owns the connection; :func:`register_role` adds
one (the producer processes of issue #12 will come in as ``"produce"``). A handler is
called as ``handler(server, conn, hello)`` on the connection's own daemon thread, with
receives timing out after ``HANDSHAKE_TIMEOUT`` and sends after ``SEND_TIMEOUT``
(a role that waits longer for its peer calls :func:`set_timeouts`; 0 means never); the
connection is closed when it returns. An unknown role gets ``("error", message)``. A
wrong key, a peer that vanishes, a viewer that stops reading: that connection is
dropped, and the server goes on.

The ``view`` role: every ``1/refresh_hz`` seconds the newest snapshot goes out as
``("state", State, now)``; at the end of the run ``("end", State, now, summary, lines)``
(the final state, whether a summary is due, and the run's closing report lines).
Snapshots are taken by the pump only while a viewer is connected, at most at the
fastest viewer's rate (and at most once per pump tick).
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
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
from typing import TYPE_CHECKING, Any

from .._core._state import State
from ._paths import Placement, bind_listener, create_key, find_socket, probe, remove_placement

if TYPE_CHECKING:
    from ._producers import ProducerHub

__all__ = ["ROLES", "Handler", "LiveServer", "register_role", "set_timeouts"]

#: seconds a peer may take to prove the key and name its role
HANDSHAKE_TIMEOUT = 5.0
#: seconds a send may block on a viewer that stopped reading before it is dropped
SEND_TIMEOUT = 10.0
#: connections served at once; more are closed at once
MAX_CONNECTIONS = 64
#: refused connections reported one line each (then only counted)
REFUSALS_REPORTED = 5
MIN_HZ, MAX_HZ = 0.1, 60.0

Handler = Callable[["LiveServer", Connection, tuple[Any, ...]], None]
#: role tag -> handler; the handler runs on the connection's thread and owns ``conn``
ROLES: dict[str, Handler] = {}


def register_role(name: str, handler: Handler) -> None:
    """Serve connections whose role tag is ``name`` with ``handler``."""
    ROLES[name] = handler


def set_timeouts(conn: Connection, recv: float, send: float) -> None:
    """Kernel-side timeouts on the connection's socket: a blocked read or write then
    fails with an ``OSError`` instead of holding its thread for ever."""
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    try:
        for opt, secs in ((socket.SO_RCVTIMEO, recv), (socket.SO_SNDTIMEO, send)):
            whole = int(secs)
            sock.setsockopt(
                socket.SOL_SOCKET, opt, struct.pack("ll", whole, int((secs - whole) * 1e6))
            )
    finally:
        sock.close()


class LiveServer:
    """Serves one run folder's socket. Make it with :meth:`start`; end it with :meth:`close`."""

    def __init__(self, listener: Listener, where: Placement, key: bytes) -> None:
        self.listener = listener
        self.where = where
        self.key = key
        self._cond = threading.Condition()
        self._closing = False
        self._threads: set[threading.Thread] = set()
        self.refused = 0  # connections that failed the key
        #: set by the pump: where refusals are reported, and the producers' hub
        #: (``_produce.py``; ``None``: this server takes no producers)
        self.report: Callable[[str], None] | None = None
        self.produce: ProducerHub | None = None
        # what viewers get: (version, state, now); the end message once the run ended
        self.version = 0
        self.latest: tuple[State, float] | None = None
        self.final: tuple[State, float, bool, list[str]] | None = None
        # read by the pump without the lock (plain attribute reads)
        self.viewers = 0
        self._rates: dict[int, float] = {}
        self._interval = 1.0
        self._next_publish = 0.0
        self._accepter = threading.Thread(
            target=self._accept_loop, name="aoff-live-accept", daemon=True
        )

    @classmethod
    def start(cls, run_dir: str) -> LiveServer:
        """Create the key, bind the socket, start accepting (blocking file work: call it
        off the event loop). Raises ``RuntimeError`` when another live run serves
        ``run_dir`` and ``OSError`` when the socket cannot be made."""
        os.makedirs(run_dir, exist_ok=True)
        existing = find_socket(run_dir)
        if existing is not None and probe(existing) == "live":
            raise RuntimeError(f"another live run serves {run_dir!r}")
        key = create_key(run_dir)
        listener, where = bind_listener(run_dir)
        server = cls(listener, where, key)
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
            self.latest = (state, now)
            self._cond.notify_all()

    def end(self, state: State, now: float, *, summary: bool, lines: list[str]) -> None:
        """The run is over: every viewer gets the final state and the closing lines."""
        with self._cond:
            self.final = (state, now, summary, list(lines))
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

    def wait_for(self, seen: int, not_before: float) -> tuple[str, Any]:
        """Block until there is something for a viewer that has seen version ``seen`` and
        wants nothing before ``not_before`` (monotonic): ``("end", ...)``,
        ``("state", (version, state, now))`` or ``("closed", None)``."""
        with self._cond:
            while True:
                if self.final is not None:
                    return "end", self.final
                if self._closing:
                    return "closed", None
                wait: float | None = None
                if self.version > seen and self.latest is not None:
                    wait = not_before - time.monotonic()
                    if wait <= 0:
                        return "state", (self.version, *self.latest)
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
            hello = conn.recv()
            if not (isinstance(hello, tuple) and hello and isinstance(hello[0], str)):
                conn.send(("error", "the first message must be a role tag, e.g. ('view', 4)"))
                return
            handler = ROLES.get(hello[0])
            if handler is None:
                conn.send(("error", f"unknown role {hello[0]!r}: known are {sorted(ROLES)}"))
                return
            handler(self, conn, hello)
        except AuthenticationError:
            self.refused += 1
            if self.report is not None and self.refused <= REFUSALS_REPORTED:
                self.report(
                    "aoff: refused a connection to the run's socket: it did not prove "
                    "the run's key (aoff.key); the run goes on"
                )
        except Exception:  # a peer that vanished, timed out or sent garbage: drop it
            pass
        finally:
            conn.close()
            with self._cond:
                self._threads.discard(threading.current_thread())


def serve_viewer(server: LiveServer, conn: Connection, hello: tuple[Any, ...]) -> None:
    """The ``view`` role: ``("view", refresh_hz)``; see the module's doc."""
    hz = hello[1] if len(hello) > 1 else 4.0
    if isinstance(hz, bool) or not isinstance(hz, int | float) or not hz > 0:
        conn.send(("error", f"refresh must be a number > 0, got {hz!r}"))
        return
    hz = min(max(float(hz), MIN_HZ), MAX_HZ)
    interval = 1.0 / hz
    ident = threading.get_ident()
    server.add_rate(ident, hz)
    try:
        seen, not_before = 0, 0.0
        while True:
            kind, payload = server.wait_for(seen, not_before)
            if kind == "end":
                state, now, summary, lines = payload
                conn.send(("end", state, now, summary, lines))
                return
            if kind == "closed":
                return
            seen, state, now = payload
            not_before = time.monotonic() + interval
            conn.send(("state", state, now))  # pickled here, off the pump's thread
    finally:
        server.remove_rate(ident)


register_role("view", serve_viewer)


# -- the pump's hooks (called on its event loop) ------------------------------------------------
async def start_serving(run_dir: str, report: Callable[[str], None]) -> LiveServer | None:
    """Serve ``run_dir`` (the file work runs off the loop); ``None``, with one line
    reported, when it cannot be done: the run goes on, only ``aoff attach`` is off."""
    import anyio.to_thread

    try:
        return await anyio.to_thread.run_sync(LiveServer.start, run_dir)
    except (OSError, RuntimeError) as exc:
        report(f"aoff: `aoff attach` is off for this run: {exc}")
        return None


async def stop_serving(server: LiveServer | None) -> None:
    """Close ``server`` (viewers get their end message first, within a bound)."""
    if server is not None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(server.close)
