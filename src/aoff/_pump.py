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
import anyio.to_thread

from ._backends._base import Backend, BackendContext
from ._core._buffer import EventBuffer
from ._core._checkpoint import to_state_dict
from ._core._events import SYSTEM, Event
from ._core._fold import Folder
from ._core._pending import PendingEvent, event_ready, resolve_event
from ._core._records import StepRecord
from ._core._state import State
from ._display._api import Display
from ._display._guard import GuardedDisplay
from ._live._produce import ProducerHub, attach_producers
from ._live._server import LiveServer, start_serving, stop_serving
from ._pump_end import await_room, end_of_run
from ._report import FinishReport, OnceReporter, stderr_line
from ._runner import DEFAULT_MAX_PENDING, BackendRunner
from ._streams import LineJoiner

if TYPE_CHECKING:
    from ._backends._summary import RunSummary
    from ._sysmetrics import SystemSampler

FOLD_SLICE = 512
#: real seconds the dashboard waits, after start, for the backends' "logging to" lines
NOTICE_WAIT = 2.0


class Pump:
    """Drains one :class:`EventBuffer` into a :class:`State`, the backends and a display.

    Parts: ``folder`` (the pure fold), ``runners`` (one :class:`BackendRunner` a backend),
    ``display``; ``_held`` keeps drained events that wait for device values. It runs as
    one anyio task (:meth:`run`) and is driven from its own loop only: :meth:`request_stop`,
    :meth:`flush`; :meth:`report` is the one place a :class:`FinishReport` is made.
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
        run_summary: RunSummary | None = None,
    ) -> None:
        if refresh_per_second <= 0:
            raise ValueError(f"refresh_per_second must be > 0, got {refresh_per_second!r}")
        self.buffer = buffer
        self.state = state
        # the pump never waits for the display: frames go to their own thread (_guard)
        self.display = GuardedDisplay(display, report=report)
        self.clock = clock
        self.monotonic = monotonic
        self.on_tick = on_tick
        self.tick = min(tick, 1.0 / refresh_per_second)
        self.min_frame_interval = 1.0 / refresh_per_second
        self.finish_timeout = finish_timeout
        self.report_line = OnceReporter(report)
        self.folder = Folder(state, self.report_line)
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
        self.frames = 0
        self.last_frame: float | None = None
        self.dirty = False
        self.display_open = False
        self.summary = True
        self.result: FinishReport | None = None  # set when run() has ended
        self._stop: anyio.Event | None = None
        self._stop_requested = False
        self._finished = False
        self._saw_full = False
        self._backend_wait_left = finish_timeout  # finish's budget for waiting on backends
        self.say: Callable[[str], None] = self.display.say
        # what the training process printed (see _streams): whole lines go above the panel
        self.text: collections.deque[tuple[str, str]] = collections.deque()
        self._lines = LineJoiner()
        # events drained but not folded yet because an earlier one still waits for values
        # from a device (a PendingEvent); they are folded, in order, before anything newer
        self._held: list[Event] = []
        self.unresolved = 0  # pending events given up on at finish (counted as dropped)
        # dropped before events reached this process (the training process's buffer, when
        # this pump runs in the agent), and the policy that dropped them
        self.upstream_dropped = 0
        self.overflow_label: tuple[int, str] = (buffer.capacity, buffer.overflow)
        self._give_up = False
        # `aoff attach`: the run folder whose socket serves viewers (see _live._server)
        self.live_dir = live_dir
        self.live: LiveServer | None = None
        #: producers (``log.remote()``) feeding this pump through ``live``
        self.producers: ProducerHub | None = None
        self._notice_deadline: float | None = None
        #: system metrics (``_sysmetrics``): sampled in its own thread, folded here
        self.system = system
        #: ``aoff-summary.json`` for ``aoff ls``/``show`` (``_backends/_summary``)
        self.run_summary = run_summary
        self._summary_due: float | None = None
        self._summary_busy = False

    # -- folding (synchronous, on the pump's loop) -------------------------------------------
    def _may_drain(self) -> bool:
        return not any(r.holds_back() for r in self.runners)

    def _pending_ready(self, e: PendingEvent) -> bool | None:
        """Whether a pending event's values are known (None: they never will be)."""
        try:
            return event_ready(e)
        except Exception as exc:  # e.g. a CUDA error surfacing in Event.query()
            self.report_line(f"aoff: could not read device values: {type(exc).__name__}: {exc}")
            return None

    def fold(self, events: Sequence[Event]) -> list[StepRecord]:
        """Fold ``events`` in order; stop at the first whose device values are not ready.

        The rest (that event included) is kept in ``_held`` and folded first next time:
        ``PendingEvent.waits`` are polled (never waited for), so the loop is never blocked,
        and no event is folded before an earlier one, so order and steps are kept.
        """
        apply = self.folder.apply
        records: list[StepRecord] = []
        folded = 0
        for i, e in enumerate(events):
            if type(e) is PendingEvent:
                ready = self._pending_ready(e)
                if not ready:
                    if ready is False and not self._give_up:
                        self._held = list(events[i:])
                        break
                    self.unresolved += 1
                    folded += 1
                    continue
                e = resolve_event(e)
            folded += 1
            try:
                rec = apply(e)
            except Exception as exc:  # a bug or an exotic input: report, keep going
                self.state.invalid_values += 1
                self.report_line(
                    f"aoff: could not process {e[0]!r} event: {type(exc).__name__}: {exc}"
                )
                continue
            if rec is not None:
                records.append(rec)
        if folded:
            self.dirty = True
        return records

    def _offer(self, records: list[StepRecord]) -> None:
        for r in self.runners:
            r.offer(records)
        if self.run_summary is not None and records:
            self.run_summary.add(records)

    async def drain_once(self, *, final: bool = False) -> int:
        """Drain what is buffered now, fold it in slices, offer records to backends."""
        total = 0
        buffer = self.buffer
        self._saw_full = len(buffer) >= buffer.capacity
        # Not final: fold at most what is buffered now (then the caller renders), so a
        # producer faster than the fold cannot keep the pump in here forever.
        budget = None if final else len(buffer) + FOLD_SLICE
        while True:
            # drop_oldest: trim before every slice, so the buffer stays bounded even while
            # a long backlog is being folded (not only once per tick)
            if buffer.trim():
                self.dirty = True
            self.show_dropped()
            if not self._may_drain():
                if not final:
                    break
                # final drain: fold no faster than the backends write, so that the last
                # buffer-full does not become records all at once (memory stays bounded)
                await await_room(self)
            if self._held:  # older than anything in the buffer: fold these first
                held, self._held = self._held, []
                records = self.fold(held)
                self._offer(records)
                if self._held:
                    break  # still waiting for a device; poll again on a later tick
                continue
            events = buffer.drain(FOLD_SLICE)
            if not events:
                break
            total += len(events)
            records = self.fold(events)
            self._offer(records)
            if self._held or len(events) < FOLD_SLICE or (budget is not None and total >= budget):
                break
            await anyio.lowlevel.checkpoint()
        return total

    # -- rendering --------------------------------------------------------------------------
    def frame_due(self, now: float) -> bool:
        if not self.dirty or not self.display_open or self.display.failed:
            return False
        return not (self.last_frame is not None and now - self.last_frame < self.min_frame_interval)

    def _sync_problems(self) -> None:
        for r in self.runners:
            if r.status == "failed" and r.error:
                self.state.backend_problems[r.name] = r.error
            elif r.stalled():
                self.state.backend_problems[r.name] = "stalled (write in progress)"
            else:
                self.state.backend_problems.pop(r.name, None)

    def _echo_text(self, *, final: bool = False) -> None:
        lines: list[str] = []
        while self.text:
            stream, chunk = self.text.popleft()
            lines += self._lines.feed(stream, chunk)
        if final:
            lines += self._lines.rest()
        if lines:
            self.display.echo("\n".join(lines))

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
            self.folder.apply((SYSTEM, self.clock(), sample))
            self.dirty = True

    def _notices_said(self) -> bool:
        """Whether every backend has opened (and said where it logs), or ``NOTICE_WAIT``
        real seconds went by since the run started.

        A backend opens concurrently with the run (a cold import of TensorBoard's protobuf
        module takes ~0.3 s), so its "logging to" line used to come after the first
        progress line, or after the last of a short run. The dashboard opens after it.
        """
        if not any(r.status == "opening" for r in self.runners):
            return True
        if self._notice_deadline is None:
            self._notice_deadline = time.monotonic() + NOTICE_WAIT
        return time.monotonic() >= self._notice_deadline

    async def maybe_render(self) -> None:
        if self.on_tick is not None:
            self.on_tick()
        self._echo_text()
        self.show_dropped()
        if (
            self.state.started
            and not self.display_open
            and not self.display.failed
            and self._notices_said()
        ):
            self.display_open = True
            self.display.open(self.state.snapshot(), self.clock())
        mono = self.monotonic()
        if self.frame_due(mono):
            self._sync_problems()
            self.dirty = False
            self.last_frame = mono
            self.frames += 1
            self.display.update(self.state.snapshot(), self.clock())
        live = self.live
        if live is not None and live.due(mono):  # only while a viewer is attached
            self._sync_problems()
            live.publish(self.state.snapshot(), self.clock(), mono)

    # -- the run summary file ------------------------------------------------------------------
    def _maybe_refresh_summary(self, tg: anyio.abc.TaskGroup) -> None:
        """Every ``SUMMARY_INTERVAL`` s, rewrite the summary file in a worker thread."""
        if self.run_summary is None or self._summary_busy:
            return
        from ._backends._summary import SUMMARY_INTERVAL

        now = self.monotonic()
        if self._summary_due is None:
            self._summary_due = now + SUMMARY_INTERVAL
        if now < self._summary_due or not self.run_summary.records:
            return
        self._summary_due = now + SUMMARY_INTERVAL
        self._summary_busy = True
        tg.start_soon(self._write_summary, self.run_summary.snapshot())

    async def _write_summary(self, content: dict[str, Any]) -> None:
        summary = self.run_summary
        assert summary is not None
        try:
            # a disk that hangs must not hold finish(): final_summary gives up on it
            await anyio.to_thread.run_sync(summary.write, content, abandon_on_cancel=True)
        except Exception as exc:  # a full disk, a removed folder: said once, run goes on
            self.report_line(
                f"aoff: could not write {summary.path}: {type(exc).__name__}: {exc} "
                "(aoff ls/show read the event files instead)"
            )
        finally:
            self._summary_busy = False

    async def final_summary(self) -> None:
        """The summary's last write, at the end of the run (at most 2 s)."""
        if self.run_summary is None or not self.run_summary.records:
            return
        state = "interrupted" if self.state.interrupted else "finished"
        with anyio.move_on_after(2.0):
            await self._write_summary(self.run_summary.snapshot(state))

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
        return self.buffer.dropped + self.unresolved + self.upstream_dropped + remote

    def held(self) -> list[Event]:
        """Drained events still waiting (for device values) to be folded."""
        return list(self._held)

    def hold_first(self, events: list[Event]) -> None:
        """Fold ``events`` before anything in the buffer (the agent's unsent events)."""
        self._held = events + self._held

    def report(self, *, partial: bool = False) -> FinishReport:
        """The run's :class:`FinishReport`: final after :meth:`run` returned, else
        ``partial`` (what is known now; events still buffered or held count as dropped,
        and a backend's unwritten records as lost)."""
        left = len(self.buffer) + len(self._held) if partial else 0
        res = FinishReport(
            dropped_events=self.dropped() + left,
            invalid_values=self.state.invalid_values,
            steps=self.state.steps_logged,
            interrupted=self.state.interrupted or partial,
            partial=partial,
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
        while len(self.buffer) or self._held:
            await self.drain_once()
            if len(self.buffer) or self._held:
                await anyio.sleep(0.001)
        waits = [r.request_flush() for r in self.runners]
        for w in waits:
            await w.wait()

    def _flusher(self) -> Callable[[], None]:
        """:meth:`flush`, callable from another thread (a producer's connection)."""
        import anyio.from_thread
        import anyio.lowlevel

        token = anyio.lowlevel.current_token()

        def flush() -> None:
            anyio.from_thread.run(self.flush, token=token)

        return flush

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
        async with anyio.create_task_group() as runners_tg:
            for r in self.runners:
                runners_tg.start_soon(r.run, ctx)
            task_status.started()
            if self.system is not None:
                self.system.start()
            try:
                if self.live_dir:
                    self.live = await start_serving(self.live_dir, self.report_line.always)
                    if self.live is not None:  # log.remote() producers (_live/_produce)
                        self.live.report = self.report_line.always
                        self.producers = attach_producers(
                            self.live, self.buffer.put, self.report_line.always, self._flusher()
                        )
                while not self._stop_requested:
                    backlog = len(self.buffer) >= min(FOLD_SLICE, self.buffer.capacity)
                    if backlog and not self._held and self._may_drain():
                        await anyio.lowlevel.checkpoint()  # a backlog: no idle tick
                    elif self._saw_full and not self._held and self._may_drain():
                        # overflow="block" producers are likely waiting: not a whole tick
                        await anyio.sleep(0.001)
                    else:
                        # drop_oldest over capacity (e.g. while a backend holds the pump
                        # back): trim again within 5 ms, not after a whole tick
                        over = len(self.buffer) > self.buffer.capacity
                        with anyio.move_on_after(0.005 if over else self.tick):
                            await self._stop.wait()
                    try:
                        await self.drain_once()
                        self._fold_system()
                        await self.maybe_render()
                        self._maybe_refresh_summary(runners_tg)
                    except Exception as exc:  # pragma: no cover - defensive
                        self.report_line(f"aoff: pump error: {type(exc).__name__}: {exc}")
            finally:
                if self.system is not None:
                    self.system.stop()
                with anyio.CancelScope(shield=True):
                    try:
                        await end_of_run(self, runners_tg)
                    finally:
                        await stop_serving(self.live)
