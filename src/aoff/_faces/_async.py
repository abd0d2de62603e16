"""``AsyncOffPolicyLogger``: the face for async runners (asyncio or trio, via anyio).

``async with AsyncOffPolicyLogger(...) as log:`` starts the pump as a task in the
caller's event loop and opens the dashboard; leaving the block — normally, by an
exception, or by cancellation — drains, flushes and closes every backend (shielded,
bounded by ``finish_timeout``) and prints the summary.

Every logging call records its event *when it is called* and returns an awaitable:
``await log.log_step(...)`` is the documented form, and it completes at once unless the
buffer is full under ``overflow="block"``, in which case it waits for space. Because the
event is already recorded, a forgotten ``await`` loses nothing and keeps the order.

SIGTERM: while the block runs on the main thread and SIGTERM has its default handler,
the logger watches for it (anyio's signal receiver; ``handle_sigterm=False`` turns this
off). On SIGTERM it marks the run interrupted and cancels the block, so leaving it drains
and closes everything as above; then it raises ``SystemExit(143)``, as the sync face does.
The default handler is back once the block is left.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import types
import warnings
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, NoReturn, cast

import anyio
import anyio.abc

from .._core import _events as ev
from .._core._checkpoint import no_state_line
from .._core._report import FinishReport
from .._core._warning import AoffWarning
from ._defer import ki_protected
from ._face import Face
from ._phase import Phase
from ._pumptask import PumpTask
from ._sigterm import sigterm_is_default, watch_sigterm

if TYPE_CHECKING:
    from .._pump._wiring import Core
    from ._driver import AsyncDriver
    from ._side import AgentSide


class _Ready:
    """An awaitable that is already complete (no coroutine object, no loop round-trip).

    ``__await__`` is the C-level ``().__iter__``: awaiting gets an empty iterator, so the
    ``await`` finishes at once on any event loop, without running a Python frame (about
    100 ns cheaper per call than a generator-based ``__await__`` here).
    """

    __slots__ = ()
    __await__ = ().__iter__


READY = cast(Awaitable[None], _Ready())


class AsyncOffPolicyLogger(Face[Awaitable[None]]):
    """The async face. Same arguments and calls as :class:`aoff.OffPolicyLogger`.

    Waiting methods are the ``a``-prefixed twins: :meth:`aflush`, :meth:`afinish`,
    :meth:`aclose`; the sync names raise a ``TypeError`` that names them.
    """

    _closed_result = READY
    _closed_when = "the logger was closed"

    def _setup_face(self) -> None:
        overflow = self._options.overflow
        buf = self._buffer
        self._entered_put = self._put_block if overflow == "block" else self._put_nowait
        # until `async with` enters, calls are kept (written if it does) and warn once
        self._init_recorder(self._put_unentered, self._options.now)
        self._raw_put = buf.put if overflow != "block" else buf.append
        #: what runs the pump, made in __aenter__: an AgentSide driving the agent, or the
        #: pump as a task of this loop (PumpTask, made with a running loop)
        self._driver: AsyncDriver | None = None
        if not self._process_mode():
            self._build_core()
        self._tg: anyio.abc.TaskGroup | None = None
        self._exits: contextlib.AsyncExitStack | None = None  # leaves the task group
        self._warned_unentered = False
        # made in __aenter__ (an anyio.Event needs a running loop)
        self._stop_done: anyio.Event | None = None  # the stop in progress has its report
        self._handle_sigterm = self._options.handle_sigterm
        self._sigterm_scope: anyio.CancelScope | None = None
        self._signalled: int | None = None

    # -- hot path adapters -------------------------------------------------------------------
    def _put_unentered(self, event: ev.Event) -> Awaitable[None]:
        if not self._warned_unentered:
            self._warned_unentered = True
            warnings.warn(
                f"aoff: AsyncOffPolicyLogger.{ev.name_of(event)}() before `async with`: "
                "nothing is written until the logger is entered "
                "(`async with AsyncOffPolicyLogger(...) as log:`); calls are kept, and "
                "`await log.afinish()` writes them if it never is",
                AoffWarning,
                stacklevel=3,
            )
        self._buffer.append(event)  # never waits, whatever the policy: nothing drains yet
        return READY

    def _put_nowait(self, event: ev.Event) -> Awaitable[None]:
        self._raw_put(event)
        return READY

    def _put_block(self, event: ev.Event) -> Awaitable[None]:
        self._raw_put(event)  # recorded now (order kept); the caller awaits space
        if self._buffer.full() and not self._buffer.closed:
            return self._wait_for_space()
        return READY

    async def _wait_for_space(self) -> None:
        # the buffer's own wait (the sync face's), parked in a worker thread so this
        # loop, which may run the pump, goes on
        await anyio.to_thread.run_sync(self._buffer.wait_for_space, abandon_on_cancel=True)

    # -- lifecycle ----------------------------------------------------------------------------
    # class-level too: a muted rank's face never runs _setup_face, and leaves `async with`
    _tg: anyio.abc.TaskGroup | None = None
    _exits: contextlib.AsyncExitStack | None = None
    _signalled: int | None = None

    async def __aenter__(self) -> AsyncOffPolicyLogger:
        if self._inert:  # nothing of the run lives here (muted rank, fork): nothing to start
            return self
        if self._phase is not Phase.NEW:
            raise RuntimeError(
                "an AsyncOffPolicyLogger can be entered only once, and not once it is closed"
            )
        self._to(Phase.OPEN)
        self._stop_done = anyio.Event()
        self._put = self._entered_put
        # the stack holds the group from the moment it is entered, so no exception
        # between entering it and keeping it can leave it open
        async with contextlib.AsyncExitStack() as exits:
            tg = self._tg = await exits.enter_async_context(anyio.create_task_group())
            try:
                await self._start_tasks(tg)
            except BaseException:
                if isinstance(self._driver, PumpTask):
                    self._driver.request_stop(summary=False)  # the pump is shielded: ask it
                tg.cancel_scope.cancel()
                await exits.aclose()  # leaves the group as the run's end would
                raise
            self._exits = exits.pop_all()
        self.start()
        return self

    async def _start_tasks(self, tg: anyio.abc.TaskGroup) -> None:
        """Make the driver and start its task in ``tg``, then the SIGTERM watch."""
        # shielded: cancelling the body on SIGTERM must not end the watch (see below)
        self._sigterm_scope = anyio.CancelScope(shield=True)
        if self._process_mode():
            from ._side import AgentSide

            self._driver = side = AgentSide(
                self._options,
                self._buffer,
                self._core_off_loop,
                driver="task",
                pool=self._media_budget.pool,
                on_alert=self._note_alert,
            )
            await tg.start(ki_protected(self._run_shipper), side)
        else:
            self._driver = task = PumpTask(self._core)
            await tg.start(ki_protected(self._run_pump), task)
        if self._handle_sigterm and sigterm_is_default():
            on_first = functools.partial(self._on_sigterm, tg.cancel_scope)
            await tg.start(watch_sigterm, self._sigterm_scope, on_first)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> bool | None:
        # No shield needed here: the pump runs shielded (see _run_pump) and stops only when
        # _stop() asks; its final drain/flush/close is bounded by finish_timeout.
        await self._stop(summary=True, interrupted=exc_type is not None)
        # the task group is left here, in the task that entered it, whoever stopped the run
        exits, self._exits, self._tg = self._exits, None, None
        if exits is not None:
            await exits.aclose()
        if self._signalled is not None:
            raise SystemExit(128 + self._signalled)
        return None

    async def _run_shipper(
        self,
        side: AgentSide,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        # Shielded, like the pump: cancelling the body must not strand buffered events;
        # the shipper ends by itself once the agent's report is in (or it is lost).
        task_status.started()
        with anyio.CancelScope(shield=True):
            await side.run()

    async def _run_pump(
        self,
        task: PumpTask,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        # the pump stops when _stop() asks it to, after its final drain (PumpTask.run)
        try:
            await task.run(task_status=task_status)
        finally:
            if self._sigterm_scope is not None:  # the run is over: stop watching
                self._sigterm_scope.cancel()

    def _core_off_loop(self) -> Core:
        """The fallback's core when the agent is lost, made in a thread of its own: what
        it makes at once (its runners' ``anyio.Event``s) takes the async library of the
        thread that makes it, and the fallback's pump runs it on an asyncio loop of its
        own thread. Made on a trio loop, the runners never woke there: finish() gave up
        and the run's tail was lost."""
        made: list[Core] = []
        failed: list[BaseException] = []

        def make() -> None:
            try:
                made.append(self._build_core())
            except BaseException as exc:  # raised here, in the loop's thread
                failed.append(exc)

        thread = threading.Thread(target=make, name="aoff-fallback-core", daemon=True)
        thread.start()
        thread.join()
        if failed:
            raise failed[0]
        return made[0]

    def _on_sigterm(self, host: anyio.CancelScope, signum: int) -> None:
        """The first SIGTERM: mark the run interrupted, cancel ``host`` (the task group's
        scope, which holds the body of ``async with``; the pump's final drain is
        shielded, so cancelling it loses nothing)."""
        self._signalled = signum
        # recorded before the cancellation, so the summary says so whichever of the pump
        # and the body is cancelled first
        self._buffer.append_final(ev.finish_event(self._clock(), "Training Summary", "", True))
        host.cancel()

    def start(self, *, status: str = "Warming up...") -> Awaitable[None]:
        """Open the dashboard and start its clock (done by ``async with``, else by the
        first logging call); once the run has started, only sets the status."""
        return self._start_event(status)

    async def aflush(self) -> None:
        """Wait until everything logged so far is written and flushed by every backend."""
        if self._tg is None or self._phase is not Phase.OPEN:  # stopping, or nothing here
            return
        assert self._driver is not None
        await self._driver.aflush(self._idle_timeout())

    async def astate_dict(self) -> dict[str, Any]:
        """aoff's own counters, for your checkpoint, after an :meth:`aflush` (see
        :meth:`aoff.OffPolicyLogger.state_dict`)."""
        if self._inert:
            return self._empty_state_dict()
        if self._driver is not None:
            got = await self._driver.astate_dict(self._idle_timeout())
            if got is None:
                raise RuntimeError(no_state_line(self._options.finish_timeout))
            return got
        if self._process_mode():  # never entered: no pump ran, here or in an agent
            return self._empty_state_dict()
        return self._core.pump.state_dict()  # never entered: the pump's first state

    async def afinish(
        self, *, title: str = "Training Summary", extra_summary: str = ""
    ) -> FinishReport:
        """Drain, close the backends, print the summary (``async with`` does this)."""
        if self._kept_unentered():
            return await self._run_unentered(True, title, extra_summary)
        return await self._stop(summary=True, title=title, extra_summary=extra_summary)

    async def aclose(self) -> FinishReport:
        """Drain and close the backends without a summary. Idempotent."""
        if self._kept_unentered():
            return await self._run_unentered(False, "Training Summary", "")
        return await self._stop(summary=False)

    def _kept_unentered(self) -> bool:
        """Never entered, and calls were kept: finishing must write them, not drop them."""
        return not self._inert and self._phase is Phase.NEW and len(self._buffer) > 0

    async def _run_unentered(self, summary: bool, title: str, extra_summary: str) -> FinishReport:
        """The run of a logger finished without ``async with``: started now and stopped at
        once, so what was logged is written, as the sync face's ``finish()`` writes it."""
        await self.__aenter__()
        try:
            return await self._stop(summary=summary, title=title, extra_summary=extra_summary)
        finally:
            exits, self._exits, self._tg = self._exits, None, None
            if exits is not None:
                await exits.aclose()

    async def _stop(
        self,
        *,
        summary: bool,
        title: str = "Training Summary",
        extra_summary: str = "",
        interrupted: bool = False,
    ) -> FinishReport:
        if self._inert:  # nothing of the run lives in this process (fork, muted rank)
            return await self._ainert_report()
        interrupted = interrupted or self._signalled is not None
        if not self._begin_stop(title=title, extra_summary=extra_summary, interrupted=interrupted):
            # another task is stopping the run: its report is ours too
            if self._stop_done is not None:
                with anyio.CancelScope(shield=True):
                    await self._stop_done.wait()
            assert self._report is not None
            return self._report
        # Shielded: the final drain is bounded by finish_timeout, and a cancelled caller
        # must not strand it. Any task may stop the run; only __aexit__ leaves the group.
        with anyio.CancelScope(shield=True):
            if self._driver is not None:
                report = await self._driver.astop(summary, self._idle_timeout())
            else:  # never entered: nothing ran, nothing was written
                report = FinishReport(dropped_events=len(self._buffer), partial=True)
        if self._sigterm_scope is not None:
            self._sigterm_scope.cancel()
        self._end_media()
        self._report = report
        self._to(Phase.CLOSED)
        if self._stop_done is not None:
            self._stop_done.set()
        return report

    # -- the wrong twins ----------------------------------------------------------------------
    def __enter__(self) -> NoReturn:
        raise TypeError(
            "AsyncOffPolicyLogger is the async face: use `async with AsyncOffPolicyLogger(...)`"
            ", or `with OffPolicyLogger(...)` in sync code"
        )

    def __exit__(self, *exc: object) -> None:  # pragma: no cover - never entered
        pass

    def flush(self) -> NoReturn:
        """Not here: it would block the event loop. ``TypeError``: use :meth:`aflush`."""
        raise TypeError("AsyncOffPolicyLogger.flush() would block: use `await log.aflush()`")

    def finish(self, **kwargs: Any) -> NoReturn:
        """Not here: it would block the event loop. ``TypeError``: use :meth:`afinish`."""
        raise TypeError("AsyncOffPolicyLogger.finish() would block: use `await log.afinish()`")

    def close(self) -> NoReturn:
        """Not here: it would block the event loop. ``TypeError``: use :meth:`aclose`."""
        raise TypeError("AsyncOffPolicyLogger.close() would block: use `await log.aclose()`")

    def state_dict(self) -> NoReturn:
        """Not here: it would block the event loop. ``TypeError``: use :meth:`astate_dict`."""
        raise TypeError(
            "AsyncOffPolicyLogger.state_dict() would block: use `await log.astate_dict()`"
        )
