"""The producers connected to one run (:class:`ProducerHub`) and the rule for their names.

Why apart from ``_produce.py``: the server holds the hub (it shuts the producers'
connections when it closes) and the producer role uses it, so it sits below both; the
faces check a producer's name with :func:`check_name` before anything connects.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from .._core import _events as ev
from .._core._rules import Rule

__all__ = ["NAME_RE", "ProducerHub", "check_name"]

#: a producer's name: it names a folder (TensorBoard) and a tag prefix (W&B)
NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def check_name(name: object) -> str | None:
    """Why ``name`` cannot name a producer, or ``None`` when it can."""
    if not isinstance(name, str):
        return f"a producer's name must be a str, got {type(name).__name__}"
    if not NAME_RE.fullmatch(name):
        return (
            f"bad producer name {name!r}: 1-64 characters of letters, digits, '_', '-' "
            "and '.', not starting with '.' or '-' (it names a folder of the run)"
        )
    return None


class ProducerHub:
    """The producers connected to one run, and where their events go (the pump's)."""

    def __init__(
        self,
        sink: Callable[[ev.Event], None],
        say: Callable[[str], None],
        flush: Callable[[], None],
        on_rules: Callable[[str, tuple[Rule, ...]], None] | None = None,
    ) -> None:
        self.sink = sink
        self.say = say
        self.flush = flush
        self._lock = threading.Lock()
        self.conns: dict[str, Connection] = {}  # live name -> connection
        self.accepting = True
        self.in_flight = 0  # batches being put into the buffer now
        self.dropped_by: dict[str, int] = {}  # live name -> its own latest dropped count
        self.lost = 0  # events that came after the run stopped taking them
        #: a producer's own rules (``RemoteLogger(rules=...)``), by its live name, for the
        #: run's alerts (the pump's; None: the run watches nothing, ``rules=[]``)
        self.on_rules = on_rules

    def watch(self, live: str, rules: tuple[Rule, ...]) -> None:
        """Judge ``rules`` on producer ``live``'s events from now on (before its first)."""
        if self.on_rules is not None:
            self.on_rules(live, rules)
        else:
            self.say(
                f"aoff: producer {live!r}'s rules are not watched: the run was made with "
                "rules=[] (it watches nothing)"
            )

    def dropped(self) -> int:
        """Events the producers dropped before sending, and those that came too late."""
        return sum(self.dropped_by.values()) + self.lost

    def join(self, name: str, pid: int, conn: Connection) -> str:
        with self._lock:
            live = name
            n = 0
            while live in self.conns:
                n += 1
                live = f"{name}-{pid}" if n == 1 else f"{name}-{pid}-{n}"
            self.conns[live] = conn
            return live

    def leave(self, live: str) -> None:
        with self._lock:
            self.conns.pop(live, None)

    def open_names(self) -> list[str]:
        with self._lock:
            return sorted(self.conns)

    def put(self, live: str, events: list[Any]) -> bool:
        """Hand ``events`` to the pump; False (counted lost) once it stopped taking them."""
        with self._lock:
            if not self.accepting:
                self.lost += len(events)
                return False
            self.in_flight += 1
        try:
            sink = self.sink
            remote = ev.REMOTE
            for e in events:
                wall = e[1] if type(e) is tuple and len(e) > 1 else time.time()
                sink((remote, wall, live, e))
        finally:
            with self._lock:
                self.in_flight -= 1
        return True

    def stop_accepting(self) -> list[str]:
        """From now on events are counted as lost; returns the producers still open."""
        with self._lock:
            self.accepting = False
            return sorted(self.conns)

    def close(self) -> None:
        """Shut every producer's connection (they see end of file: the run is gone)."""
        with self._lock:
            conns = list(self.conns.values())
        for conn in conns:
            with contextlib.suppress(OSError, ValueError):
                sock = socket.socket(fileno=conn.fileno())
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                finally:
                    sock.detach()
