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
:class:`SummaryKeeper` (``aoff-summary.json``) and :func:`end_of_input`. It owns them and
the run's accounting, all private: outside code (``Core``, ``PumpThread``, ``AgentSide``,
the agent, the async face) has only its public methods (input, control, read-outs), each
saying who calls it and from which thread. Its :class:`FinishReport`, final or partial,
is made from its counts in one place (``_tally.finish_report``).

Nothing here raises into the caller: a bad value is reported and skipped, a failing
backend is isolated by its runner, a failing display is switched off and reported.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

from .._backends._base import Backend, BackendContext
from .._channel._produce import producer_hub
from .._channel._producers import ProducerHub
from .._channel._server import LiveServer, start_serving, stop_serving
from .._core._buffer import EventBuffer
from .._core._checkpoint import to_state_dict
from .._core._columns import Spans
from .._core._events import Event, calls_in
from .._core._records import Record
from .._core._report import FinishReport, end_of_run_lines
from .._core._rules import stopped_by
from .._core._say import SayOnce, say_to_stderr
from .._core._state import State
from .._display._api import Display
from ._cost import CostKeeper
from ._end import end_of_input
from ._intake import FOLD_SLICE, Intake
from ._runner import DEFAULT_MAX_PENDING, BackendRunner
from ._screen import Screen
from ._summarykeeper import SummaryKeeper
from ._tally import Progress, finish_report, progress, unwritten
from ._turns import apause, shared

if TYPE_CHECKING:
    from .._runfolder.summary._writer import RunSummary
    from ._alerts import AlertDesk, AlertPlan
    from ._sysmetrics import SystemSampler

__all__ = ["Progress", "Pump", "PumpSettings"]

#: the most a run's end waits for alert actions still queued (a webhook, a command)
ALERT_ACTIONS_WAIT = 5.0


@dataclass(frozen=True)
class PumpSettings:
    """How a pump runs: its pace, its clocks, how long it waits, where its own lines go
    and what it serves. The defaults are a face's; :class:`~._wiring.Wiring` makes one
    from the run's ``Options``."""

    refresh_per_second: float = 4
    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    tick: float = 0.05
    finish_timeout: float = 10.0
    flush_interval: float = 2.0
    stall_timeout: float = 10.0
    max_pending: int = DEFAULT_MAX_PENDING
    #: where aoff's own lines go
    say: Callable[[str], None] = say_to_stderr
    #: the run folder whose socket it serves (``aoff attach``, producers); "": none
    live_dir: str = ""
    #: (capacity, policy) named when events were dropped; None: the buffer's own
    overflow_label: tuple[int, str] | None = None
    seed_tags: bool = True
    #: the pump runs in the agent (its cost is then the agent's, not the loop's)
    in_agent: bool = False


class Pump:
    """Drains one :class:`EventBuffer` into a :class:`State`, the backends and a display,
    as one anyio task (:meth:`run`), as ``settings`` say. ``on_media_freed``: told the
    bytes of each media frame the encoder frees (the media budget, when the pump runs in
    the face's own process); ``system``, ``run_summary`` and ``alerts``: the run's
    system sampler, ``aoff-summary.json`` and rules, when it has them.

    Each part is built here, in order, with what it needs (its hooks are constructor
    arguments, nothing is set on a part after): the runners, the screen, the run
    summary's keeper, the intake that feeds them, the cost keeper and the alert desk.
    """

    def __init__(
        self,
        buffer: EventBuffer,
        state: State,
        backends: Sequence[Backend],
        display: Display,
        settings: PumpSettings = PumpSettings(),
        *,
        on_tick: Callable[[], object] | None = None,
        on_media_freed: Callable[[int], None] | None = None,
        system: SystemSampler | None = None,
        run_summary: RunSummary | None = None,
        alerts: AlertPlan | None = None,
    ) -> None:
        s = settings
        if s.refresh_per_second <= 0:
            raise ValueError(f"refresh_per_second must be > 0, got {s.refresh_per_second!r}")
        self._buffer = buffer
        self._state = state
        self._clock = s.clock
        self._on_tick = on_tick
        self._tick = min(s.tick, 1.0 / s.refresh_per_second)
        self._finish_timeout = s.finish_timeout
        #: aoff's problem lines, each distinct one said once (``.always``: every time)
        self._say_once = SayOnce(s.say)
        self._runners = [
            BackendRunner(
                b,
                say=self._say_once.always,  # a runner says at most twice
                flush_interval=s.flush_interval,
                stall_timeout=s.stall_timeout,
                max_pending=s.max_pending,
            )
            for b in backends
        ]
        #: the display, printed text and viewers, drawn at ``s.refresh_per_second``
        self._screen = Screen(
            display,
            state,
            self._runners,
            say=s.say,
            say_always=self._say_once.always,
            refresh_per_second=s.refresh_per_second,
            clock=s.clock,
            monotonic=s.monotonic,
        )
        self._summary_file = keeper = self._keep_summary(run_summary, s.monotonic)
        #: drains the buffer and folds in order; a change touches the screen; each
        #: slice's records go on to the run summary and the rules (``_watch``)
        self._intake = Intake(
            buffer,
            state,
            self._runners,
            self._say_once,
            finish_timeout=s.finish_timeout,
            on_change=self._screen.touch,
            on_slice=self._slice_chores,
            seed_tags=s.seed_tags,
            on_records=keeper.offer if keeper is not None else None,
            on_watch=self._watch,
            on_media_freed=on_media_freed,
            # the fold in short slices while a training loop shares the GIL (_turns)
            shares=shared,
            pause=apause,
        )
        self._summary_panel = True  # request_stop(summary=...)
        self._result: FinishReport | None = None  # set when run() has ended
        self._stop: anyio.Event | None = None
        self._stop_requested = False
        self._finished = False
        self._upstream_dropped = 0  # before events reached this process (in the agent)
        self._overflow_label = s.overflow_label or (buffer.capacity, buffer.overflow)
        # the run folder's socket (_channel): `aoff attach` viewers, log.remote() producers
        self._live_dir = s.live_dir
        self._live: LiveServer | None = None
        self._producers: ProducerHub | None = None
        self._system = system  # system metrics, sampled in their own thread (_sysmetrics)
        #: the logger's own cost, written as ``aoff/...`` tags (``_cost.py``)
        self._cost = CostKeeper(
            state, self._intake.folder, clock=s.clock, monotonic=s.monotonic, in_agent=s.in_agent
        )
        self._alerts = self._make_alerts(alerts, s)

    def _make_alerts(self, plan: AlertPlan | None, s: PumpSettings) -> AlertDesk | None:
        """The run's rules and where their alerts go (``_alerts.py``), with the runners,
        this pump's ``say`` and its screen."""
        if plan is None:
            return None
        from ._alerts import AlertDesk

        return AlertDesk(
            plan,
            self._state,
            runners=self._runners,
            say=self._say_once.always,
            on_change=self._screen.touch,
            clock=s.clock,
            monotonic=s.monotonic,
        )

    def _keep_summary(
        self, run_summary: RunSummary | None, monotonic: Callable[[], float]
    ) -> SummaryKeeper | None:
        """``aoff-summary.json``'s keeper, offered every batch of records; None: no file."""
        if run_summary is None:
            return None
        return SummaryKeeper(
            run_summary,
            monotonic=monotonic,
            say=self._say_once,
            media_counts=self._media_counts,
            stopped_by=self._stopped_by,
            late_counts=lambda: (self._state.late_records, dict(self._state.late_points)),
        )

    # -- input from outside ---------------------------------------------------------------------
    def hold_first(self, events: list[Event]) -> None:
        """Fold ``events`` first: a lost agent's unsent ones (``PumpThread``, before run)."""
        self._intake.hold_first(events)

    def note_upstream_dropped(self, total: int) -> None:
        """Events dropped before they reached this process, so far: the agent's receiver
        thread, per ``Events`` message (any thread: one int store)."""
        self._upstream_dropped = total

    def note_unresolved(self, count: int) -> None:
        """Pending events a lost agent gave up on: dropped (``AgentSide``, before run)."""
        self._intake.unresolved += count

    def drop_summary_file(self) -> bool:
        """Keep no run summary, as this pump sees only part of the run (``AgentSide``, for
        a lost agent's fallback, before it runs); True if it would have kept one."""
        kept = self._summary_file is not None
        self._summary_file = self._intake.on_records = None
        return kept

    def echo(self, stream: str, text: str) -> None:
        """Text the training process printed: drawn above the panel, in whole lines (the
        agent's receiver thread, per ``Out`` message; any thread: one deque append)."""
        self._screen.text.append((stream, text))

    def text_sink(self) -> collections.deque[tuple[str, str]]:
        """Where :meth:`echo` goes: a face's ``Forwarding`` appends to it (any thread)."""
        return self._screen.text

    def say(self, message: str) -> None:
        """A backend's message (``BackendContext.say``, by ``Core``), above the panel."""
        self._screen.display.say(message)

    # -- read-outs -------------------------------------------------------------------------------
    def progress(self) -> Progress:
        """How far the pump got (counts that only grow): the agent's acks (on the loop)
        and ``PumpThread``'s wait for the final drain (the training thread: plain reads)."""
        return progress(self._buffer.drained, self._state, self._runners, self._intake)

    def opening(self) -> bool:
        """Whether a backend is still opening (the agent's tick, on the loop)."""
        return any(r.status == "opening" for r in self._runners)

    def unwritten(self) -> dict[str, int]:
        """Per backend, steps not written yet (a forced quit's line: ``PumpThread``, from
        the training thread while the pump may run; a racy read, good for a line)."""
        return unwritten(self._runners, list(self._buffer.snapshot()) + self._intake.held)

    def dropped(self) -> int:
        """Events that never reached the fold (overflow, lost device values), on the loop."""
        hub = self._producers
        remote = hub.dropped() if hub is not None else 0
        return self._buffer.dropped + self._intake.unresolved + self._upstream_dropped + remote

    def state_dict(self) -> dict[str, Any]:
        """aoff's counters for ``state_dict()``, on the loop (or once :meth:`run` ended)."""
        return to_state_dict(self._state, self._clock(), self.dropped())

    @property
    def result(self) -> FinishReport | None:
        """The run's final :class:`FinishReport`, once :meth:`run` has ended (else None)."""
        return self._result

    def partial_report(self) -> FinishReport:
        """What is known now, for a face that gave up waiting for :meth:`run`'s end (any
        thread): events not folded count as dropped, unconfirmed records as lost."""
        return self._finish_report(partial=True)

    def _finish_report(self, *, partial: bool) -> FinishReport:
        i = self._intake
        # the calls not folded (a group's block stands for one a step): dropped if partial
        left = calls_in(self._buffer.snapshot()) + calls_in(i.held) if partial else 0
        return finish_report(self._state, self._runners, self.dropped(), i, partial, left)

    def _stopped_by(self) -> dict[str, Any] | None:
        """How a ``stop=True`` rule ended the run (``aoff-summary.json``'s ``stopped``)."""
        s = self._state
        rule = stopped_by(s.alerts, s.iteration, s.config.max_iterations)
        if rule is None:
            return None
        it, name, tag, message = s.iteration, rule.rule, rule.tag, rule.message
        return {"iteration": it, "rule": name, "tag": tag, "message": message}

    def _media_counts(self) -> tuple[int, int, dict[str, int]]:
        """Media written, refused, and not written by reason, for the run summary file."""
        lost = {why: n for why, n in self._intake.media.lost.items() if n}
        return self._intake.media_written, self._state.media_refused, lost

    def _watch(self, records: list[Record], spans: Spans) -> None:
        """Each slice's records, once offered to the runners: the rules, the agent's lag."""
        self._cost.see(records)
        if self._alerts is not None:
            self._alerts.see(records, spans)

    def _slice_chores(self) -> None:
        """Before each slice of a drain (and at the end): the owner's ``on_tick`` (the
        agent's ack: a final drain is many slices and no tick, and finish() gives up on
        an agent it hears nothing from), the dropped total handed to the fold (earlier
        sessions' too)."""
        if self._on_tick is not None:
            self._on_tick()
        self._intake.folder.dropped(self.dropped() + self._state.dropped_before)

    # -- control (on the pump's loop) ------------------------------------------------------------
    def request_stop(self, *, summary: bool = True) -> None:
        """End :meth:`run`: on the loop or before it (faces; the agent through a bridge)."""
        self._summary_panel = summary
        self._stop_requested = True
        if self._stop is not None:
            self._stop.set()

    async def flush(self) -> None:
        """Deliver everything recorded so far to every healthy backend and flush it: on the
        pump's loop (the faces' ``flush()``, the agent's ``Flush``, producers')."""
        intake = self._intake
        while len(self._buffer) or intake.held:
            await intake.drain_once()
            if len(self._buffer) or intake.held:
                await anyio.sleep(0.001)
        await intake.flush_media()
        waits = [r.request_flush() for r in self._runners]
        for w in waits:
            await w.wait()

    # -- the task ------------------------------------------------------------------------------
    async def run(
        self,
        ctx: BackendContext,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The task, until :meth:`request_stop`; its shielded end sets :attr:`result`."""
        self._stop = anyio.Event()
        if self._stop_requested:
            self._stop.set()
        intake = self._intake
        buffer = self._buffer
        async with anyio.create_task_group() as runners_tg:
            for r in self._runners:
                runners_tg.start_soon(r.run, ctx)
            task_status.started()
            if self._system is not None:
                self._system.start()
            try:
                if self._live_dir:
                    say = self._say_once.always
                    alerts = self._alerts
                    # log.remote() producers (_channel/_produce), taken by the server
                    hub = producer_hub(
                        buffer.put, say, self.flush, alerts.watch_producer if alerts else None
                    )
                    self._live = await start_serving(self._live_dir, say, hub)
                    if self._live is not None:
                        self._producers = hub
                while not self._stop_requested:
                    backlog = len(buffer) >= min(FOLD_SLICE, buffer.capacity)
                    if backlog and not intake.held and intake.may_drain():
                        await anyio.lowlevel.checkpoint()  # a backlog: no idle tick
                    elif intake.saw_full and not intake.held and intake.may_drain():
                        # overflow="block" producers are likely waiting: not a whole tick
                        await anyio.sleep(0.001)
                    else:
                        # drop_oldest over capacity (e.g. while a backend holds the pump
                        # back): trim again within 5 ms, not after a whole tick
                        over = len(buffer) > buffer.capacity
                        with anyio.move_on_after(0.005 if over else self._tick):
                            await self._stop.wait()
                    try:
                        await intake.drain_once()
                        if self._system is not None and self._system.fold_newest(
                            self._intake.folder.apply, self._clock, self._say_once
                        ):
                            self._screen.touch()
                        self._tick_chores()
                        if self._summary_file is not None:
                            self._summary_file.maybe_refresh(runners_tg)
                    except Exception as exc:  # pragma: no cover - defensive
                        self._say_once(f"aoff: pump error: {type(exc).__name__}: {exc}")
            finally:
                if self._system is not None:
                    self._system.stop()
                with anyio.CancelScope(shield=True):
                    try:
                        await self._end(runners_tg)
                    finally:
                        await stop_serving(self._live)

    def _tick_chores(self) -> None:
        """A slice's chores, then the screen: printed text, frame."""
        self._slice_chores()
        if self._alerts is not None:
            self._alerts.tick()
        self._cost.tick()
        self._screen.echo_text()
        self._screen.render(self._live)

    async def _end(self, runners_tg: anyio.abc.TaskGroup) -> None:
        """The end of the run, once: the last input (:func:`end_of_input`), the report,
        the screen's close, then the report's lines."""
        if self._finished:
            return
        self._finished = True
        say = self._say_once.always
        await end_of_input(
            self._intake,
            self._runners,
            runners_tg,
            self._producers,
            finish_timeout=self._finish_timeout,
            say=say,
            on_wait=self._slice_chores,
        )
        if self._alerts is not None:  # a webhook or command still running: bounded
            await anyio.to_thread.run_sync(
                self._alerts.close, min(self._finish_timeout, ALERT_ACTIONS_WAIT)
            )
        if self._summary_file is not None:
            await self._summary_file.final(interrupted=self._state.interrupted)
        self._slice_chores()
        self._cost.tick(final=True)  # the summary's line
        self._screen.copy_backend_problems()
        self._result = res = self._finish_report(partial=False)
        capacity, overflow = self._overflow_label
        lines = end_of_run_lines(
            res,
            overflow_dropped=self._buffer.dropped + self._upstream_dropped,
            capacity=capacity,
            overflow=overflow,
            finish_timeout=self._finish_timeout,
        )
        await self._screen.close(self._live, summary=self._summary_panel, lines=lines)
        for line in lines:
            say(line)
