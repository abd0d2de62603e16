"""The live server's ``produce`` role: events from other processes' ``RemoteLogger``.

Why here: the run already serves its folder's socket (``_server.py``: Unix socket 0600,
the run's key proven both ways before anything is unpickled), wherever the pump runs.
A producer (``log.remote()``, or a forked child of the training process) connects to
it, says :class:`~._roles.Produce` (with rules of its own: judged on its events only,
from its first, ``ProducerHub.watch``) and gets :class:`~._roles.Welcome` or
:class:`~._roles.Refused` (``_roles.py``).
Then it speaks the agent's protocol (``_transport/_messages.py``), so the producer side
is the agent's own :class:`~aoff._transport._shipper.Shipper`:

``Events(payload, n, dropped_so_far)``
    the frame's events (``payload``, their pickle, unpacked here) each go into the
    pump's buffer wrapped as ``(REMOTE, wall, live_name, event)`` (folded by
    ``_core/_fold.py``), in the order received: each producer's events stay in order,
    producers interleave. In the agent that buffer (``_pump/_backlog.py``) blocks when
    full, so backpressure reaches the producer's socket, then its own buffer's policy.
``Flush(n)`` -> ``Flushed(n, None)``
    once the pump has written and flushed everything received so far.
``Stop(summary)`` -> ``Report(ProducerReport(...), None)``, and the connection ends.

End of file without ``stop``: the producer died (killed?); one line says which one and
what is known lost. At the end of the run (``_pump/_end.await_producers``) the pump waits
up to ``finish_timeout`` for producers still connected, then stops taking events (what
comes later is counted as lost) and names those still open; the server's close shuts
their connections, so they see the run is gone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from multiprocessing.connection import Connection
from typing import Any, Protocol

from .._core import _events as ev
from .._core._rules import Rule
from .._transport._batches import unpack_events
from .._transport._messages import (
    Events,
    Flush,
    Flushed,
    ProducerReport,
    Report,
    Stop,
    decode_to_peer,
    encode,
)
from ._producers import ProducerHub
from ._roles import Produce, Refused, Welcome, to_wire
from ._timeouts import SEND_TIMEOUT, set_timeouts

__all__ = ["Host", "producer_hub", "serve_producer"]


class Host(Protocol):
    """What the producer role needs of the server (``_server.LiveServer``, which calls
    this role: typed here by what it has, so that the role does not import it back)."""

    #: the pump's producers (:func:`producer_hub`), given when the server is made;
    #: ``None``: this server takes no producers
    @property
    def produce(self) -> ProducerHub | None: ...

    @property
    def closing(self) -> bool: ...


def serve_producer(server: Host, conn: Connection, hello: Produce) -> None:
    """The ``produce`` role; see the module's doc."""
    hub = server.produce
    if hub is None or not hub.accepting:
        conn.send(to_wire(Refused("this run takes no events from producers now (it is ending)")))
        return
    name, pid, rules = hello
    set_timeouts(conn, 0, SEND_TIMEOUT)  # a quiet producer is never dropped
    live = hub.join(name, pid, conn)
    if rules:
        hub.watch(live, rules)
    received = 0
    stopped = False
    try:
        conn.send(to_wire(Welcome(live)))
        while True:
            try:
                msg = decode_to_peer(conn.recv_bytes())
            except (EOFError, OSError):
                break
            match msg:
                case Events(payload, _, dropped):
                    events = unpack_events(payload)
                    if type(dropped) is int:
                        hub.dropped_by[live] = dropped
                    if hub.put(live, events):
                        received += len(events)
                case Flush(n):
                    if hub.accepting:
                        with contextlib.suppress(Exception):  # the run is ending: no wait
                            hub.flush()
                    conn.send_bytes(encode(Flushed(n, None)))
                case Stop():
                    stopped = True
                    report = ProducerReport(live, received, lost=not hub.accepting)
                    conn.send_bytes(encode(Report(report, None)))
                    break
                case _:  # a hello or printed text: not a producer's to send, ignored
                    pass
    finally:
        hub.leave(live)
        if not stopped and not server.closing and hub.accepting:
            dropped = hub.dropped_by.get(live, 0)
            more = f"; it had dropped {dropped:,} before sending" if dropped else ""
            hub.say(
                f"aoff: remote {live!r} (pid {pid}) was lost before its close() finished "
                "(killed, or its close() gave up waiting): "
                f"{received:,} events came from it; what it had not sent yet is lost{more}"
            )


def producer_hub(
    sink: Callable[[ev.Event], None],
    say: Callable[[str], None],
    flush: Callable[[], Coroutine[Any, Any, None]],
    on_rules: Callable[[str, tuple[Rule, ...]], None] | None = None,
) -> ProducerHub:
    """The producers of a run, feeding ``sink`` (the pump's buffer), for the server to
    take (``LiveServer.start``). Call it on the pump's event loop: a producer's flush runs
    ``flush`` there, from its connection's thread; ``on_rules``: a producer's own rules
    (the run's alerts; None: the run watches nothing)."""
    import anyio.from_thread
    import anyio.lowlevel

    token = anyio.lowlevel.current_token()

    def flush_from_thread() -> None:
        anyio.from_thread.run(flush, token=token)

    return ProducerHub(sink, say, flush_from_thread, on_rules)
