"""The background pump: the one task that turns recorded events into output.

Every ``tick`` seconds (or at once when asked to stop or flush) it drains the event
buffer in order, folds the events into the :class:`State` (in slices, with a checkpoint
between slices, so the async face's event loop is never held for long), hands the step
records to each backend's runner, and — when the state changed and the throttle allows —
renders a snapshot in a worker thread. Written on anyio, so the same code runs on
asyncio and trio; the sync face runs it on a private event loop thread.

Frames are throttled on ``monotonic`` (``time.monotonic``; a wall clock that steps back
must not freeze the dashboard); ``clock`` is the wall time handed to the display. Tests
inject one manual clock for both. Whatever drains a buffer has per-tick chores of its
own (the recorder's tensor-capture switch): they come in as ``on_tick``, so the pump
knows nothing of the hot path.

Its parts: the :class:`Intake` (drain, fold in order, offer records to the runners), the
:class:`Screen` (display, printed text, viewers), the runners (one per backend), the
:class:`SummaryKeeper` (``aoff-summary.json``) and :func:`end_of_input`. The pump holds the
run's accounting and is the one place a :class:`FinishReport` is made. Outside code feeds
it through a few methods (``hold_first``, ``note_upstream_dropped``, ``note_unresolved``,
``echo``, ``drop_summary_file``) and stops it with ``request_stop``.

Nothing here raises into the caller: a bad value is reported and skipped, a failing
backend is isolated by its runner, a failing display is switched off and reported.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel

from .._backends._base import Backend, BackendContext
from .._channel._hub import ProducerHub
from .._channel._produce import attach_producers
from .._channel._server import LiveServer, start_serving, stop_serving
from .._core._buffer import EventBuffer
from .._core._checkpoint import to_state_dict
from .._core._events import SYSTEM, Event
from .._core._report import FinishReport, OnceReporter, end_of_run_lines, stderr_line
from .._core._state import State
from .._display._api import Display
from ._end import end_of_input
from ._intake import FOLD_SLICE, Intake
from ._runner import DEFAULT_MAX_PENDING, BackendRunner
from ._screen import Screen
from ._summaryfile import SummaryKeeper

if TYPE_CHECKING:
    from .._backends._summary import RunSummary
    from ._sysmetrics import SystemSampler

__all__ = ["Pump"]


class Pump:
    """Drains one :class:`EventBuffer` into a :class:`State`, the backends and a display.

    Parts: ``intake`` (buffer -> fold -> runners, in order), ``runners`` (one
    :class:`BackendRunner` a backend), ``screen`` (display, printed text, viewers). It
    runs as one anyio task (:meth:`run`) and is driven from its own loop only:
    :meth:`request_stop`, :meth:`flush`; :meth:`report` is the one place a
    :class:`FinishReport` is made.
    """

    def __init__(
        self,
        buffer: EventBuffer,
        state: State,
        backends: Sequence[Backend],
        display: Display,
        *,
        refresh_per_second: float = 4,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        tick: float = 0.05,
        finish_timeout: float = 10.0,
        flush_interval: float = 2.0,
        stall_timeout: float = 10.0,
        max_pending: int = DEFAULT_MAX_PENDING,
        report: Callable[[str], None] = stderr_line,
        on_tick: Callable[[], object] | None = None,
        live_dir: str = "",
        system: SystemSampler | None = None,
        overflow_label: tuple[int, str] | None = None,
        run_summary: RunSummary | None = None,
    ) -> None:
        if refresh_per_second <= 0:
            raise ValueError(f"refresh_per_second must be > 0, got {refresh_per_second!r}")
        self.buffer = buffer
        self.state = state
        self.clock = clock
        self.on_tick = on_tick
        self.tick = min(tick, 1.0 / refresh_per_second)
        self.finish_timeout = finish_timeout
        self.report_line = OnceReporter(report)
        self.runners = [
            BackendRunner(
                b,
                report=self.report_line.always,  # a runner reports at most twice
                flush_interval=flush_interval,
                stall_timeout=stall_timeout,
                max_pending=max_pending,
            )
            for b in backends
        ]
        self.screen = Screen(
            display,
            state,
            self.runners,
            report=report,
            say_always=self.report_line.always,
            refresh_per_second=refresh_per_second,
            clock=clock,
            monotonic=monotonic,
        )
        self.intake = Intake(
            buffer,
            state,
            self.runners,
            self.report_line,
            finish_timeout=finish_timeout,
            on_change=self.screen.touch,
            on_slice=self.show_dropped,
        )
        self.summary = True
        self.result: FinishReport | None = None  # set when run() has ended
        self._stop: anyio.Event | None = None
        self._stop_requested = False
        self._finished = False
        self.say: Callable[[str], None] = self.screen.display.say
        #: where printed text goes (``(stream, text)``; a ``Forwarding`` appends to it)
        self.text: collections.deque[tuple[str, str]] = self.screen.text
        # dropped before events reached this process (the training process's buffer, when
        # this pump runs in the agent), and the policy that dropped them
        self._upstream_dropped = 0
        self._overflow_label = overflow_label or (buffer.capacity, buffer.overflow)
        # `aoff attach`: the run folder whose socket serves viewers (see _channel._server)
        self.live_dir = live_dir
        self.live: LiveServer | None = None
        #: producers (``log.remote()``) feeding this pump through ``live``
        self.producers: ProducerHub | None = None
        #: system metrics (``_sysmetrics``): sampled in its own thread, folded here
        self.system = system
        #: ``aoff-summary.json`` for ``aoff ls``/``show`` (``_summaryfile``), if any
        self.summary_file: SummaryKeeper | None = None
        if run_summary is not None:
            keeper = SummaryKeeper(run_summary, monotonic=monotonic, say=self.report_line)
            self.summary_file = keeper
            self.intake.on_records = keeper.offer
            keeper.media_counts = lambda: (self.intake.media_written, self.state.media_refused)

    # -- input from outside (call on the pump's loop, or before it runs) -----------------------
    def hold_first(self, events: list[Event]) -> None:
        """Fold ``events`` before anything in the buffer (the agent's unsent events)."""
        self.intake.hold_first(events)

    def note_upstream_dropped(self, total: int) -> None:
        """Events dropped before they reached this process, so far (the agent's sender)."""
        self._upstream_dropped = total

    def note_unresolved(self, count: int) -> None:
        """Pending events given up on elsewhere (a lost agent's shipper): dropped."""
        self.intake.unresolved += count

    def drop_summary_file(self) -> None:
        """Keep no run summary: this pump sees only part of the run (a lost agent's)."""
        self.summary_file = self.intake.on_records = None

    def echo(self, stream: str, text: str) -> None:
        """Text the training process printed: drawn above the panel, in whole lines."""
        self.text.append((stream, text))

    # -- one tick ---------------------------------------------------------------------------
    async def drain_once(self, *, final: bool = False) -> int:
        return await self.intake.drain_once(final=final)

    def _fold_system(self) -> None:
        """Fold the sampler's newest sample (it joins the next step's record)."""
        sampler = self.system
        if sampler is None:
            return
        problem = sampler.problem()
        if problem is not None:
            self.report_line(problem)
        sample = sampler.take()
        if sample is not None:
            self.intake.folder.apply((SYSTEM, self.clock(), sample))
            self.screen.touch()

    async def maybe_render(self) -> None:
        if self.on_tick is not None:
            self.on_tick()
        self.screen.echo_text()
        self.show_dropped()
        self.screen.render(self.live)

    # -- accounting -----------------------------------------------------------------------------
    def show_dropped(self) -> None:
        """The dashboard's dropped count: the run's total (earlier sessions' too, from
        ``load_state_dict``)."""
        self.state.dropped_events = self.dropped() + self.state.dropped_before

    def state_dict(self) -> dict[str, Any]:
        """aoff's counters for ``state_dict()`` (``_core/_checkpoint.py``); on the loop."""
        return to_state_dict(self.state, self.clock(), self.dropped())

    def dropped(self) -> int:
        """Events that never reached the fold: the overflow policy and lost device values."""
        hub = self.producers
        remote = hub.dropped() if hub is not None else 0
        return self.buffer.dropped + self.intake.unresolved + self._upstream_dropped + remote

    def held(self) -> list[Event]:
        """Drained events still waiting (for device values) to be folded."""
        return list(self.intake.held)

    def report(self, *, partial: bool = False) -> FinishReport:
        """The run's :class:`FinishReport`: final after :meth:`run` returned, else
        ``partial`` (what is known now; events still buffered or held count as dropped,
        and a backend's unwritten records as lost)."""
        left = len(self.buffer) + len(self.intake.held) if partial else 0
        res = FinishReport(
            dropped_events=self.dropped() + left,
            invalid_values=self.state.invalid_values,
            steps=self.state.steps_logged,
            interrupted=self.state.interrupted or partial,
            partial=partial,
            media_written=self.intake.media_written,
            media_refused=self.state.media_refused,
        )
        for r in self.runners:
            res.backend_written[r.name] = r.written
            unconfirmed = len(r.pending) + r.in_flight if partial else 0
            res.backend_lost[r.name] = r.lost + unconfirmed
            if r.error:
                res.backend_errors[r.name] = r.error
            elif partial and not r.done.is_set():
                res.backend_errors[r.name] = "did not finish"
        return res

    # -- control (call on the pump's loop) ------------------------------------------------------
    def request_stop(self, *, summary: bool = True) -> None:
        self.summary = summary
        self._stop_requested = True
        if self._stop is not None:
            self._stop.set()

    async def flush(self) -> None:
        """Deliver everything recorded so far to every healthy backend and flush it."""
        intake = self.intake
        while len(self.buffer) or intake.held:
            await intake.drain_once()
            if len(self.buffer) or intake.held:
                await anyio.sleep(0.001)
        await intake.flush_media()
        waits = [r.request_flush() for r in self.runners]
        for w in waits:
            await w.wait()

    # -- the task ----------------------------------------------------------------------------
    async def run(
        self,
        ctx: BackendContext,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        self._stop = anyio.Event()
        if self._stop_requested:
            self._stop.set()
        intake = self.intake
        async with anyio.create_task_group() as runners_tg:
            for r in self.runners:
                runners_tg.start_soon(r.run, ctx)
            task_status.started()
            if self.system is not None:
                self.system.start()
            try:
                if self.live_dir:
                    self.live = await start_serving(self.live_dir, self.report_line.always)
                    if self.live is not None:  # log.remote() producers (_channel/_produce)
                        self.live.report = self.report_line.always
                        self.producers = attach_producers(
                            self.live, self.buffer.put, self.report_line.always, self.flush
                        )
                while not self._stop_requested:
                    backlog = len(self.buffer) >= min(FOLD_SLICE, self.buffer.capacity)
                    if backlog and not intake.held and intake.may_drain():
                        await anyio.lowlevel.checkpoint()  # a backlog: no idle tick
                    elif intake.saw_full and not intake.held and intake.may_drain():
                        # overflow="block" producers are likely waiting: not a whole tick
                        await anyio.sleep(0.001)
                    else:
                        # drop_oldest over capacity (e.g. while a backend holds the pump
                        # back): trim again within 5 ms, not after a whole tick
                        over = len(self.buffer) > self.buffer.capacity
                        with anyio.move_on_after(0.005 if over else self.tick):
                            await self._stop.wait()
                    try:
                        await intake.drain_once()
                        self._fold_system()
                        await self.maybe_render()
                        if self.summary_file is not None:
                            self.summary_file.maybe_refresh(runners_tg)
                    except Exception as exc:  # pragma: no cover - defensive
                        self.report_line(f"aoff: pump error: {type(exc).__name__}: {exc}")
            finally:
                if self.system is not None:
                    self.system.stop()
                with anyio.CancelScope(shield=True):
                    try:
                        await self._end(runners_tg)
                    finally:
                        await stop_serving(self.live)

    async def _end(self, runners_tg: anyio.abc.TaskGroup) -> None:
        """The end of the run, once: the last input (:func:`end_of_input`), the report,
        the screen's close, then the report's lines."""
        if self._finished:
            return
        self._finished = True
        say = self.report_line.always
        await end_of_input(
            self.intake,
            self.runners,
            runners_tg,
            self.producers,
            finish_timeout=self.finish_timeout,
            say=say,
        )
        if self.summary_file is not None:
            await self.summary_file.final(interrupted=self.state.interrupted)
        self.show_dropped()
        self.screen.sync_problems()
        self.result = res = self.report()
        capacity, overflow = self._overflow_label
        lines = end_of_run_lines(
            res,
            overflow_dropped=self.buffer.dropped + self._upstream_dropped,
            capacity=capacity,
            overflow=overflow,
        )
        await self.screen.close(self.live, summary=self.summary, lines=lines)
        for line in lines:
            say(line)
