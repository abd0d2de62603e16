"""The logger of a producer in another process: written once over a :class:`Sender`.

Why: ``log.remote()``'s :class:`~aoff.RemoteLogger` (the run folder's socket) and a Ray
collector's ``RayLogger`` (actor calls to the run's hub) differ only in how events leave
the process. Everything else is this class: the hot path (the shared
:class:`~aoff._core._recorder.Recorder` and :class:`~aoff._media._calls.MediaCalls`
build one tuple and append it to the sender's bounded buffer), the check that a value
can be pickled, the lazy start of one sender a process (again in a forked copy: the
fork hook below), pickling into other processes, ``flush``/``close`` and their async and
``with`` forms, and the error after ``close()``. A subclass names itself and builds its
sender (:meth:`ProducerLogger._new_sender`); the sender (``_channel/_sender.py``,
``_ray/_pusher.py``) owns its thread, its waits and its :class:`RemoteReport`.

A call whose values are not plain numbers/strings is checked at the call: a value that
cannot be pickled (it could not leave this process) is a ``TypeError`` naming its key.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
import time
import types
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, Self

from .._channel._sending import RemoteReport, Sender
from .._core import _events as ev
from .._core._pending import PendingEvent
from .._core._recorder import Recorder
from .._media._calls import MediaBudget, MediaCalls

__all__ = ["ProducerLogger", "ProducerSettings", "check_picklable"]

_PLAIN = frozenset((float, int, str, bool, type(None)))


class ProducerSettings(Protocol):
    """What a producer logger pickles: all it needs to start a sender anywhere."""

    @property
    def name(self) -> str: ...
    @property
    def media_budget(self) -> int: ...


_started: weakref.WeakSet[ProducerLogger] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked copy starts its own sender on its first call."""
    for r in list(_started):
        r._sender = None
        r._lock = threading.Lock()  # a parent's thread may have held it at the fork
        if not r._closed:
            r._put = r._start_and_put
    _started.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class ProducerLogger(Recorder[None], MediaCalls[None]):
    """Every logging method of :class:`~aoff.OffPolicyLogger`, shipped by a
    :class:`Sender` of this process; calls return at once."""

    #: how the class names itself in errors, and the call that gives a new one
    _noun: ClassVar[str]
    _again: ClassVar[str]
    #: close when this process exits (a socket producer; Ray closes its own workers)
    _close_at_exit: ClassVar[bool] = False
    _settings: ProducerSettings

    def _new_sender(self, on_freed: Callable[[int], object]) -> Sender:
        """This process's sender (not started); it runs ``_refresh_capture`` each round
        and tells ``on_freed`` its running total of frame bytes sent or dropped."""
        raise NotImplementedError

    def _setup(self) -> None:
        # the hot path's state; tensors are captured if torch is imported already
        self._init_recorder(self._start_and_put, time.time)
        self._sender: Sender | None = None
        self._closed = False
        self._report: RemoteReport | None = None
        self._lock = threading.Lock()
        # media: a pickled NumPy copy in the event (no shared memory across processes or
        # machines); bounded until sent or dropped (the sender's thread gives the bytes
        # back: Sender.freed, _media/_freed.py)
        self._media_budget = MediaBudget(self._settings.media_budget)

    def __getstate__(self) -> dict[str, Any]:
        return {"settings": self._settings, "closed": self._closed}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._settings = state["settings"]
        self._setup()
        if state["closed"]:
            self._closed = True
            self._put = self._put_closed

    def __repr__(self) -> str:
        return f"{self._noun}({self._settings.name!r})"

    @property
    def name(self) -> str:
        """The name asked for (the run may add a suffix: see :class:`~aoff.RemoteReport`)."""
        return self._settings.name

    # -- the hot path --------------------------------------------------------------------------
    def _start_and_put(self, event: ev.Event) -> None:
        with self._lock:
            if self._sender is None:
                self._refresh_capture()
                sender = self._new_sender(self._media_budget.note_freed)
                sender.start()
                self._sender = sender
                _started.add(self)
                if self._close_at_exit:
                    _register_exit(self)
            self._put = self._put_checked
        self._put_checked(event)

    def _put_checked(self, event: ev.Event) -> None:
        media = False
        if not _PLAIN.issuperset(map(type, event)):
            media = event[0] == ev.MEDIA  # a NumPy copy: picklable, and too big to try
            if not media and type(event) is not PendingEvent:
                check_picklable(event)
        sender = self._sender
        if sender is None or sender.gone:
            if sender is not None:
                next(sender.late)
                if media:  # dropped and counted: its bytes are not held
                    self._media_budget.give_back(event[8])
            return
        if media:
            sender.freed.active = True  # before the put: the thread counts its bytes back
            if not sender.buffer.offer(event):  # drop_newest refused (and counted) it
                self._media_budget.give_back(event[8])
            return
        sender.buffer.put(event)

    def _put_via_face(self, event: ev.Event) -> None:
        """A forked child's face logs through this (its ``_put`` changes as it starts)."""
        self._put(event)

    def _put_closed(self, event: ev.Event) -> None:
        raise RuntimeError(
            f"aoff: {ev.name_of(event)}() on {self._noun} {self._settings.name!r} after its "
            f"close(); get a new one with {self._again}"
        )

    # -- waiting -----------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait (at most ``timeout``) until the run has written everything this process
        logged so far. Returns at once when the run is gone."""
        if self._closed:
            raise RuntimeError(
                f"aoff: flush() on {self._noun} {self._settings.name!r} after close()"
            )
        sender = self._sender
        if sender is not None and not sender.gone:
            sender.flush()

    def close(self) -> RemoteReport:
        """Send what is left, wait (at most ``timeout``) for the run's word, and say what
        reached it. Idempotent; later logging calls raise ``RuntimeError``."""
        with self._lock:
            if self._report is not None:
                return self._report
            self._closed = True
            self._put = self._put_closed
            sender = self._sender
        if sender is None:
            report = RemoteReport(self._settings.name, received=0)
        else:
            report = sender.finish()
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        await self.aclose()


def check_picklable(event: ev.Event) -> None:
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


def _close_at_exit(r: ProducerLogger, pid: int) -> None:
    if os.getpid() == pid:
        with contextlib.suppress(Exception):
            r.close()


def _register_exit(r: ProducerLogger) -> None:
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
