"""The producer's side of a Ray link: :class:`RayLogger` (``link.remote(name)``).

Why its own logger: in a Ray actor or task on another node the run folder's socket is
out of reach; the events go to the hub (``_hub.py``) as Ray actor calls instead. The hot
path is the same as ``log.remote()``'s (the shared :class:`~aoff._core._recorder.Recorder`
builds one tuple and appends it to a bounded :class:`~aoff._core._buffer.EventBuffer`);
one :class:`~aoff._ray._pusher.Pusher` a process (started by the first call, again in a
forked copy) ships the buffer every ``interval`` seconds as one ``push`` call per round
(at most ``batch`` events a call, pickled once), with at most ``max_in_flight`` calls
unanswered. This module is the caller's face: the hot path, ``flush``/``close`` and
their report, pickling onto other nodes, the fork rule; ``_pusher`` is the thread and
its accounting.

Backpressure and faults, never blocking the caller (unless ``overflow="block"`` was
chosen): while ``max_in_flight`` calls are unanswered (a slow or unreachable learner)
nothing more is shipped and the buffer's overflow policy applies at ``capacity``, every
drop counted. If the hub is gone (the learner ended or crashed) or refuses this
producer, what is left and what comes later is dropped and counted; :meth:`close` says
so in its :class:`~aoff.RemoteReport`. ``flush()`` and ``close()`` wait at most
``timeout`` (a dead node cannot hold them longer). Every producer also tells the hub it
is alive about once a second (``beat``, answered by the hub's own threads even while
pushes wait), so that a silent producer can be declared lost (see ``_hub.py``).

Media (``log_image``, ``log_video``, ``log_figure``: the shared
:class:`~aoff._media._calls.MediaCalls`, checks and all): as ``log.remote()``'s, the
frames travel as a NumPy copy pickled in the event (no shared memory across nodes), here
in the pusher's batched Ray calls. The link's ``media_budget`` bounds the bytes of frames
this process holds until the hub has taken them; a call over it is refused at once and
counted (a ``MEDIA_REFUSED`` event, the run's ``media_refused``), never a wait. On the
learner's node the hub's ``log.remote(name)`` producer hands them to the run's encoder.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from .._channel._producers import check_name
from .._core import _events as ev
from .._core._pending import PendingEvent
from .._core._recorder import Recorder
from .._core._rules import Rule, check_rules
from .._faces._remote import _PLAIN, RemoteReport, _check_picklable
from .._media._calls import MediaBudget, MediaCalls
from ._pusher import LinkSettings, Pusher

__all__ = ["RayLogger"]


_started: weakref.WeakSet[RayLogger] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for r in list(_started):
        r._pusher = None
        r._lock = threading.Lock()
        if not r._closed:
            r._put = r._start_and_put
    _started.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class RayLogger(Recorder[None], MediaCalls[None]):
    """A logger for a Ray actor or task, on any node, that logs into the run
    (``link.remote(name)``): every logging method of :class:`~aoff.OffPolicyLogger`
    (media included), and ``flush``/``close`` as :class:`~aoff.RemoteLogger`'s. Picklable."""

    def __init__(
        self, link: LinkSettings, name: str, *, rules: Sequence[Rule] | None = None
    ) -> None:
        problem = check_name(name)
        if problem is not None:
            raise ValueError(problem)
        self._link = link
        self._name = name
        self._rules = check_rules(rules) if rules is not None else ()
        self._setup()

    def _setup(self) -> None:
        # the hot path's state; tensors are captured if torch is imported already
        self._init_recorder(self._start_and_put, time.time)
        self._pusher: Pusher | None = None
        self._closed = False
        self._report: RemoteReport | None = None
        self._lock = threading.Lock()
        self._media_budget = MediaBudget(self._link.media_budget)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "link": self._link,
            "name": self._name,
            "rules": self._rules,
            "closed": self._closed,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._link = state["link"]
        self._name = state["name"]
        self._rules = state["rules"]
        self._setup()
        if state["closed"]:
            self._closed = True
            self._put = self._put_closed

    def __repr__(self) -> str:
        return f"RayLogger({self._name!r})"

    @property
    def name(self) -> str:
        """The name asked for (the run may add a suffix: see :class:`~aoff.RemoteReport`)."""
        return self._name

    # -- the hot path -------------------------------------------------------------------------
    def _start_and_put(self, event: ev.Event) -> None:
        with self._lock:
            if self._pusher is None:
                self._refresh_capture()
                p = Pusher(self._link, self._name, self._refresh_capture, self._rules)
                p.freed.on_total = self._media_budget.note_freed  # the pusher's running total
                p.thread.start()
                self._pusher = p
                _started.add(self)
            self._put = self._put_checked
        self._put_checked(event)

    def _put_checked(self, event: ev.Event) -> None:
        media = False
        if not _PLAIN.issuperset(map(type, event)):
            media = event[0] == ev.MEDIA  # a NumPy copy: picklable, and too big to try
            if not media and type(event) is not PendingEvent:
                _check_picklable(event)
        p = self._pusher
        if p is None or p.gone:
            if p is not None:
                next(p.late)
                if media:  # dropped and counted: its bytes are not held
                    self._media_budget.give_back(event[8])
            return
        if media:
            p.freed.active = True  # before the put: the pusher counts this event's bytes back
            if not p.buffer.offer(event):  # drop_newest refused (and counted) it
                self._media_budget.give_back(event[8])
            return
        p.buffer.put(event)

    def _put_closed(self, event: ev.Event) -> None:
        raise RuntimeError(
            f"aoff: {ev.name_of(event)}() on RayLogger {self._name!r} after its close(); "
            "get a new one with link.remote()"
        )

    # -- waiting ------------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait (at most the link's ``timeout``) until the run has written everything this
        process logged so far. Returns at once when the run's hub is gone."""
        if self._closed:
            raise RuntimeError(f"aoff: flush() on RayLogger {self._name!r} after close()")
        p = self._pusher
        if p is None or p.gone:
            return
        timeout = self._link.timeout
        deadline = time.monotonic() + timeout
        want = p.buffer.drained + len(p.buffer)  # every event logged so far
        p.wake.set()
        if not p.wait(lambda: p.submitted >= want or p.gone, timeout) or p.gone:
            return
        upto = p.seq
        import ray

        call = self._link.hub.flush.options(concurrency_group="ctl")
        try:
            refused = ray.get(
                call.remote(p.key, upto), timeout=max(deadline - time.monotonic(), 0.01)
            )
        except ray.exceptions.GetTimeoutError:
            return
        except Exception as exc:
            p.error = p.error or f"the run's hub is gone ({type(exc).__name__}: {exc})"
            return
        if refused is not None:
            p.error = p.error or f"the run's hub refused this producer: {refused}"
            return
        p.confirmed = max(p.confirmed, upto)
        # and the thread has taken the answers: the frames' bytes are back in the budget
        p.wait(lambda: p.answered(upto), max(deadline - time.monotonic(), 0.01))

    def close(self) -> RemoteReport:
        """Send what is left, wait (at most the link's ``timeout``) for the run's word, and
        say what reached it. Idempotent; later logging calls raise ``RuntimeError``."""
        with self._lock:
            if self._report is not None:
                return self._report
            self._closed = True
            self._put = self._put_closed
            p = self._pusher
        if p is None:
            self._report = RemoteReport(self._name, received=0)
            return self._report
        timeout = self._link.timeout
        deadline = time.monotonic() + timeout
        p.close_by = deadline
        p.closing = True
        p.wake.set()
        p.wait(p.done.is_set, timeout + 1.0)
        got: RemoteReport | None = None
        if not p.gone and p.seq:
            import ray

            call = self._link.hub.close.options(concurrency_group="ctl")
            try:
                got = ray.get(
                    call.remote(p.key, self._name, p.seq),
                    timeout=max(deadline - time.monotonic(), 0.01) + 1.0,
                )
            except ray.exceptions.GetTimeoutError:
                p.error = p.error or f"the run's hub did not answer within {timeout:g}s"
            except Exception as exc:
                p.error = p.error or f"the run's hub is gone ({type(exc).__name__}: {exc})"
        # calls never answered (a dead or unreachable hub) and events still held count
        # as dropped: close() never waits past its bound for them
        if got is not None and got.error is None:
            p.confirmed = max(p.confirmed, p.seq)  # the hub took every batch
        taken, unanswered = p.settle()
        dropped = p.dropped() + unanswered + len(p.held)
        error = p.error
        name, received = self._name, None
        if got is not None:
            name, received = got.name, got.received
            dropped += got.dropped
            error = error or got.error
        elif not p.seq and not p.gone:
            received = 0
        self._report = RemoteReport(name, p.sent + taken, dropped, received, error)
        return self._report

    async def aflush(self) -> None:
        """:meth:`flush` for async code (waits in a worker thread)."""
        import anyio.to_thread

        await anyio.to_thread.run_sync(self.flush)

    async def aclose(self) -> RemoteReport:
        """:meth:`close` for async code (waits in a worker thread)."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> RayLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
