"""``log.remote()``: a small picklable logger for other processes that log into the run.

Why its own object: a collector process (spawned, forkserver'd or forked) must not
start a run of its own; it sends its events to the run's pump, wherever that runs (the
agent, or the training process in thread mode), over the run folder's socket (see
``_channel/_produce.py``: Unix socket 0600, the run's key proven both ways, so nothing
without the key can inject events).

A :class:`RemoteLogger` holds only the run folder, its name and its buffer's bound and
policy, so it pickles into any process. In the process that logs, the first call starts
(lazily, and again in a forked copy: the process id decides) an event buffer and one
daemon thread that connects, retrying while the run's server is not up yet (events
wait in the buffer), and then drives the agent's own
:class:`~aoff._transport._shipper.Shipper` over a non-blocking
:class:`~aoff._transport._wire.Link`. Logging calls never block (unless ``overflow="block"``
was chosen) and never raise for the run's sake: if the run is gone, refused this
producer, or cannot be reached within ``timeout``, events are dropped and counted, and
:meth:`RemoteLogger.close` says so in its :class:`RemoteReport`.

A call whose values are not plain numbers/strings is checked at the call: a value that
cannot be pickled (it could not leave this process) is a ``TypeError`` naming its key.
After :meth:`RemoteLogger.close` every call is a ``RuntimeError``.

One object used from several processes at once: each process starts its own connection
(the process id decides); the run names the second one connected under a taken name
``<name>-<pid>``, so each keeps its own records and its own order.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
import time
import types
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._channel._producers import check_name
from .._channel._sender import HELLO_TIMEOUT, Conn, Spec
from .._core import _events as ev
from .._core._buffer import DEFAULT_CAPACITY, EventBuffer, Overflow
from .._core._pending import PendingEvent
from .._core._recorder import Recorder
from .._core._rules import Rule, check_rules
from .._media._calls import DEFAULT_MEDIA_BUDGET, MediaBudget, MediaCalls, check_media_budget

__all__ = ["RemoteLogger", "RemoteReport"]

#: seconds a new producer keeps trying to reach the run (its server may not be up yet),
#: and the most ``flush()``/``close()`` wait
DEFAULT_TIMEOUT = 10.0
_PLAIN = frozenset((float, int, str, bool, type(None)))


@dataclass
class RemoteReport:
    """What :meth:`RemoteLogger.close` returns.

    ``sent``: events handed to the run; ``dropped``: events that never reached it (the
    buffer's overflow policy, or the run was gone, refused this producer, or could not be
    reached: ``error`` says which); ``received``: events the run confirmed, ``None`` when
    it could not confirm (no connection, or lost before the end); ``name``: the name the
    run knows this producer by.
    """

    name: str
    sent: int = 0
    dropped: int = 0
    received: int | None = None
    error: str | None = None

    @property
    def complete(self) -> bool:
        """True when the run confirmed every event this producer sent, none was dropped
        and no error came."""
        return not self.dropped and self.error is None and self.received == self.sent


RemoteReport.__module__ = "aoff"


_started: weakref.WeakSet[RemoteLogger] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked copy starts its own connection on its first call."""
    for r in list(_started):
        r._conn = None
        r._lock = threading.Lock()  # a parent's thread may have held it at the fork
        if not r._closed:
            r._put = r._start_and_put
    _started.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class RemoteLogger(Recorder[None], MediaCalls[None]):
    """A logger for another process that logs into this run (``log.remote(name)``).

    Every logging method of :class:`~aoff.OffPolicyLogger`; calls return at once.
    Picklable; usable as ``with``/``async with``. See the module's doc and the "Many producers"
    guide (docs/guides/producers.md) for what the run makes of a producer's calls.

    ``rules``: rules of this producer's own (:mod:`aoff.rules`), added to the run it
    joins and judged there, on this producer's events only, from its first (``stalled``:
    this producer silent). Their alerts are the run's, like any other: its
    ``alerts.jsonl``, dashboard and report, the learner's ``log.alerts``, and with
    ``stop=True`` the learner's ``log.should_stop`` (the learner's loop decides; it
    tells its producers as it always does). Without them (None or ``[]``) the run's own
    rules still watch this producer's steps, as they watch every step.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        name: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        overflow: Overflow = "drop_oldest",
        timeout: float = DEFAULT_TIMEOUT,
        owner_pid: int | None = None,
        media_budget: int = DEFAULT_MEDIA_BUDGET,
        rules: Sequence[Rule] | None = None,
    ) -> None:
        problem = check_name(name)
        if problem is not None:
            raise ValueError(problem)
        if not os.fspath(log_dir):
            raise ValueError("RemoteLogger needs the run's log_dir")
        EventBuffer(capacity, overflow)  # checks both now, not in the producer
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0, got {timeout!r}")
        self._media_limit = check_media_budget(media_budget)
        self._spec = Spec(
            os.path.abspath(os.fspath(log_dir)),
            name,
            capacity,
            overflow,
            float(timeout),
            owner_pid if owner_pid is not None else os.getpid(),
            check_rules(rules) if rules is not None else (),
        )
        self._setup()

    def _setup(self) -> None:
        # the hot path's state; tensors are captured if torch is imported already
        self._init_recorder(self._start_and_put, time.time)
        self._conn: Conn | None = None
        self._closed = False
        self._report: RemoteReport | None = None
        self._lock = threading.Lock()
        # media: a pickled NumPy copy in the event (no shared memory across machines);
        # bounded until sent or dropped (the connection's thread gives the bytes back:
        # Conn.media, _media/_freed.py)
        self._media_budget = MediaBudget(self._media_limit)

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self._spec, "closed": self._closed, "media_budget": self._media_limit}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._spec = state["spec"]
        self._media_limit = state["media_budget"]
        self._setup()
        if state["closed"]:
            self._closed = True
            self._put = self._put_closed

    def __repr__(self) -> str:
        return f"RemoteLogger({self._spec.log_dir!r}, {self._spec.name!r})"

    @property
    def name(self) -> str:
        """The name asked for (the run may add ``-<pid>``: see :class:`RemoteReport`)."""
        return self._spec.name

    # -- the hot path --------------------------------------------------------------------------
    def _start_and_put(self, event: ev.Event) -> None:
        with self._lock:
            if self._conn is None:
                self._refresh_capture()
                conn = Conn(self._spec, self._refresh_capture)
                conn.media.on_total = self._media_budget.note_freed  # bytes sent or dropped
                conn.thread.start()
                self._conn = conn
                _started.add(self)
                _register_exit(self)
            self._put = self._put_checked
        self._put_checked(event)

    def _put_checked(self, event: ev.Event) -> None:
        media = False
        if not _PLAIN.issuperset(map(type, event)):
            media = event[0] == ev.MEDIA  # a NumPy copy: picklable, and too big to try
            if not media and type(event) is not PendingEvent:
                _check_picklable(event)
        conn = self._conn
        if conn is None or conn.gone:
            if conn is not None:
                next(conn.late)
                if media:  # dropped and counted: its bytes are not held
                    self._media_budget.give_back(event[8])
            return
        if media:
            conn.media.active = True  # before the put: the thread counts its bytes back
            if not conn.buffer.offer(event):  # drop_newest refused (and counted) it
                self._media_budget.give_back(event[8])
            return
        conn.buffer.put(event)

    def _put_via_face(self, event: ev.Event) -> None:
        """A forked child's face logs through this (its ``_put`` changes as it starts)."""
        self._put(event)

    def _put_closed(self, event: ev.Event) -> None:
        raise RuntimeError(
            f"aoff: {ev.name_of(event)}() on RemoteLogger {self._spec.name!r} after its "
            "close(); get a new one with log.remote()"
        )

    # -- waiting -----------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait (at most ``timeout``) until the run has written everything this process
        logged so far. Returns at once when the run is gone."""
        if self._closed:
            raise RuntimeError(f"aoff: flush() on RemoteLogger {self._spec.name!r} after close()")
        conn = self._conn
        if conn is None or conn.gone:
            return
        conn.flush_asked += 1
        n = conn.flush_asked
        conn.wake.set()

        def flushed() -> bool:
            sh = conn.shipper
            return conn.gone or (sh is not None and sh.flushed >= n)

        conn.wait(flushed, self._spec.timeout)

    def close(self) -> RemoteReport:
        """Send what is left, wait (at most ``timeout``) for the run's word, and say what
        reached it. Idempotent; later logging calls raise ``RuntimeError``."""
        with self._lock:
            if self._report is not None:
                return self._report
            self._closed = True
            self._put = self._put_closed
            conn = self._conn
        if conn is None:
            report = RemoteReport(self._spec.name, received=0)
        else:
            conn.closing = True
            conn.deadline = min(conn.deadline, time.monotonic() + self._spec.timeout)
            conn.wake.set()
            conn.wait(conn.done.is_set, self._spec.timeout + HELLO_TIMEOUT)
            sh = conn.shipper
            got = sh.report if sh is not None else None
            received = got.received if got is not None else None
            error = conn.error
            if error is None and got is None:
                error = f"the run did not answer within {self._spec.timeout:g}s"
            if got is not None and got.lost:
                error = "the run had stopped taking events (it finished before this close())"
            dropped = conn.dropped()
            if got is None and sh is not None and not conn.gone:
                # gave up waiting: what never left this process is lost too (events held
                # behind a device copy, and frames the socket had not taken; a connection
                # that saw the run gone counted those already, Conn._give_up)
                dropped += len(sh.held) + sum(len(b) for b in sh.link.unsent())
            report = RemoteReport(conn.live_name, conn.sent, dropped, received, error)
        self._report = report
        return report

    async def aflush(self) -> None:
        """:meth:`flush` for async code (waits in a worker thread)."""
        import anyio.to_thread

        await anyio.to_thread.run_sync(self.flush)

    async def aclose(self) -> RemoteReport:
        """:meth:`close` for async code (waits in a worker thread)."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> RemoteLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RemoteLogger:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        await self.aclose()


RemoteLogger.__module__ = "aoff"


def _check_picklable(event: ev.Event) -> None:
    """A ``TypeError`` naming the key whose value cannot leave this process (the names
    are looked up only then: this runs for every event holding a dict)."""
    for i, x in enumerate(event[2:]):
        tx = type(x)
        if tx in _PLAIN:
            continue
        if tx is dict:
            if _PLAIN.issuperset(map(type, x.values())):
                continue
            items: Any = x.items()
        else:
            fields = ev.FIELDS.get(event[0], ())
            items = [(fields[i] if i < len(fields) else f"argument {i}", x)]
        for key, value in items:
            if type(value) in _PLAIN:
                continue
            try:
                pickle.dumps(value, protocol=5)
            except Exception as exc:
                raise TypeError(
                    f"{ev.name_of(event)}: the value of {key!r} ({type(value).__name__}) "
                    f"cannot be pickled, so it cannot be sent to the run: {exc}"
                ) from None


def _close_at_exit(r: RemoteLogger, pid: int) -> None:
    if os.getpid() == pid:
        with contextlib.suppress(Exception):
            r.close()


def _register_exit(r: RemoteLogger) -> None:
    """Close ``r`` when this process exits normally (also a ``multiprocessing`` child,
    which leaves through ``os._exit`` after running its finalizers, not ``atexit``)."""
    from multiprocessing import util

    util.Finalize(None, _close_at_exit, args=(r, os.getpid()), exitpriority=50)
    # and before the exit hook of a logger in this same process, which would otherwise
    # wait (finish_timeout) for this producer to close (threading's hooks run last-first)
    reg = getattr(threading, "_register_atexit", None)
    if reg is not None:
        with contextlib.suppress(RuntimeError):  # the interpreter is shutting down
            reg(_close_at_exit, r, os.getpid())
