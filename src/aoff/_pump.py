"""The background pump: the one task that turns recorded events into output.

Every ``tick`` seconds (or at once when asked to stop or flush) it drains the event
buffer in order, folds the events into the :class:`State` (in slices, with a checkpoint
between slices, so the async face's event loop is never held for long), hands the step
records to each backend's runner, and — when the state changed and the throttle allows —
renders a snapshot in a worker thread. Written on anyio, so the same code runs on
asyncio and trio; the sync face runs it on a private event loop thread.

The throttle uses the injected ``clock`` only, so tests drive it with a manual clock.
Nothing here raises into the caller: a bad value is reported and skipped, a failing
backend is isolated by its runner, a failing display is switched off and reported.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.abc

from ._backend import Backend, BackendContext
from ._buffer import EventBuffer
from ._capture import PendingEvent, event_ready, resolve_event
from ._display_api import Display
from ._events import Event
from ._recorder import refresh_capture_mode
from ._runner import DEFAULT_MAX_PENDING, BackendRunner
from ._state import Folder, State, StepRecord

FOLD_SLICE = 512


@dataclass
class FinishReport:
    """What ``finish()``/``close()`` return: what could not be delivered, and why."""

    dropped_events: int = 0
    invalid_values: int = 0
    steps: int = 0
    backend_written: dict[str, int] = field(default_factory=dict)
    backend_lost: dict[str, int] = field(default_factory=dict)
    backend_errors: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        """True when every accepted event reached every backend."""
        return not self.dropped_events and not any(self.backend_lost.values())


class _OnceReporter:
    """Prints each distinct problem once to stderr (at most ``limit`` lines a run)."""

    def __init__(self, write: Callable[[str], None], limit: int = 50) -> None:
        self.write = write
        self.seen: set[str] = set()
        self.limit = limit
        self.count = 0

    def __call__(self, message: str) -> None:
        self.count += 1
        if message in self.seen or len(self.seen) > self.limit:
            return
        self.seen.add(message)
        if len(self.seen) > self.limit:
            message = f"aoff: more than {self.limit} distinct problems; no more are shown"
        with contextlib.suppress(Exception):
            self.write(message)

    def always(self, message: str) -> None:
        """Print regardless of the limit (the end-of-run totals)."""
        with contextlib.suppress(Exception):
            self.write(message)


def _stderr_line(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Pump:
    def __init__(
        self,
        buffer: EventBuffer,
        state: State,
        backends: Sequence[Backend],
        display: Display,
        *,
        refresh_per_second: float = 4,
        clock: Callable[[], float] = time.time,
        tick: float = 0.05,
        finish_timeout: float = 10.0,
        flush_interval: float = 2.0,
        stall_timeout: float = 10.0,
        max_pending: int = DEFAULT_MAX_PENDING,
        report: Callable[[str], None] = _stderr_line,
    ) -> None:
        if refresh_per_second <= 0:
            raise ValueError(f"refresh_per_second must be > 0, got {refresh_per_second!r}")
        self.buffer = buffer
        self.state = state
        self.display = display
        self.clock = clock
        self.tick = min(tick, 1.0 / refresh_per_second)
        self.min_frame_interval = 1.0 / refresh_per_second
        self.finish_timeout = finish_timeout
        self.report = _OnceReporter(report)
        self.folder = Folder(state, self.report)
        self.runners = [
            BackendRunner(
                b,
                report=self.report.always,  # a runner reports at most twice
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
        self.display_failed = False
        self.summary = True
        self.result = FinishReport()
        self._stop: anyio.Event | None = None
        self._stop_requested = False
        self._finished = False
        self._saw_full = False
        self._backend_wait_left = finish_timeout  # finish's budget for waiting on backends
        self.say: Callable[[str], None] = display.say
        # events drained but not folded yet because an earlier one still waits for values
        # from a device (a PendingEvent); they are folded, in order, before anything newer
        self._held: list[Event] = []
        self.unresolved = 0  # pending events given up on at finish (counted as dropped)
        self._give_up = False

    # -- folding (synchronous, on the pump's loop) -------------------------------------------
    def _may_drain(self) -> bool:
        return not any(r.holds_back() for r in self.runners)

    def _pending_ready(self, e: PendingEvent) -> bool | None:
        """Whether a pending event's values are known (None: they never will be)."""
        try:
            return event_ready(e)
        except Exception as exc:  # e.g. a CUDA error surfacing in Event.query()
            self.report(f"aoff: could not read device values: {type(exc).__name__}: {exc}")
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
                self.report(f"aoff: could not process {e[0]!r} event: {type(exc).__name__}: {exc}")
                continue
            if rec is not None:
                records.append(rec)
        if folded:
            self.dirty = True
        return records

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
            self.state.dropped_events = buffer.dropped + self.unresolved
            if not self._may_drain():
                if not final:
                    break
                # final drain: fold no faster than the backends write, so that the last
                # buffer-full does not become records all at once (memory stays bounded)
                await self._await_room()
            if self._held:  # older than anything in the buffer: fold these first
                held, self._held = self._held, []
                records = self.fold(held)
                for r in self.runners:
                    r.offer(records)
                if self._held:
                    break  # still waiting for a device; poll again on a later tick
                continue
            events = buffer.drain(FOLD_SLICE)
            if not events:
                break
            total += len(events)
            records = self.fold(events)
            for r in self.runners:
                r.offer(records)
            if self._held or len(events) < FOLD_SLICE or (budget is not None and total >= budget):
                break
            await anyio.lowlevel.checkpoint()
        return total

    # -- rendering --------------------------------------------------------------------------
    def frame_due(self, now: float) -> bool:
        if not self.dirty or not self.display_open or self.display_failed:
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

    async def _display_call(self, fn: Callable[..., None], *args: object, **kw: object) -> None:
        try:
            await anyio.to_thread.run_sync(lambda: fn(*args, **kw), abandon_on_cancel=True)
        except Exception as exc:
            self.display_failed = True
            self.report(f"aoff: dashboard disabled after error: {type(exc).__name__}: {exc}")

    async def maybe_render(self) -> None:
        refresh_capture_mode()
        self.state.dropped_events = self.buffer.dropped + self.unresolved
        now = self.clock()
        if self.state.started and not self.display_open and not self.display_failed:
            self.display_open = True
            await self._display_call(self.display.open, self.state.snapshot(), now)
        if self.frame_due(now):
            self._sync_problems()
            self.dirty = False
            self.last_frame = now
            self.frames += 1
            await self._display_call(self.display.update, self.state.snapshot(), now)

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
            try:
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
                        await self.maybe_render()
                    except Exception as exc:  # pragma: no cover - defensive
                        self.report(f"aoff: pump error: {type(exc).__name__}: {exc}")
            finally:
                with anyio.CancelScope(shield=True):
                    await self._final(runners_tg)

    async def _await_device_values(self) -> None:
        """Final drain: poll (1 ms, never blocking the loop) for values still on a device.

        Gives up after ``finish_timeout``: the events still waiting are dropped (counted
        in ``dropped_events``) and everything else is folded in order.
        """
        deadline = time.monotonic() + self.finish_timeout
        while self._held:
            if time.monotonic() < deadline:
                await anyio.sleep(0.001)
            else:
                self._give_up = True
                self.report.always(
                    f"aoff: device values still not copied after {self.finish_timeout:g}s; "
                    "events waiting for them are dropped"
                )
            await self.drain_once(final=True)

    async def _await_room(self) -> None:
        """Wait (1 ms polls) while a runner holds the pump back, out of the budget of
        ``finish_timeout`` that finish() spends waiting for backends; once that is spent,
        return at once (everything left is then folded and a stuck backend loses it)."""
        if self._backend_wait_left <= 0:
            return
        t0 = time.monotonic()
        # polled: runners have no "room" event, and this runs only at finish
        while not self._may_drain() and time.monotonic() - t0 < self._backend_wait_left:  # noqa: ASYNC110
            await anyio.sleep(0.001)
        self._backend_wait_left -= time.monotonic() - t0

    async def _final(self, runners_tg: anyio.abc.TaskGroup) -> None:
        if self._finished:
            return
        self._finished = True
        self.buffer.close()
        await self.drain_once(final=True)
        await self._await_device_values()
        for r in self.runners:
            r.close_input()
        with anyio.move_on_after(max(self._backend_wait_left, 0.0)):
            for r in self.runners:
                await r.done.wait()
        for r in self.runners:
            if not r.done.is_set():
                r.abandon()
                self.report.always(
                    f"aoff: backend {r.name!r} did not finish within "
                    f"{self.finish_timeout:g}s; {r.lost:,} records not written"
                )
        runners_tg.cancel_scope.cancel()
        self.state.dropped_events = self.buffer.dropped + self.unresolved
        self._sync_problems()
        res = self.result
        res.dropped_events = self.state.dropped_events
        res.invalid_values = self.state.invalid_values
        res.steps = self.state.steps_logged
        res.interrupted = self.state.interrupted
        for r in self.runners:
            res.backend_written[r.name] = r.written
            res.backend_lost[r.name] = r.lost
            if r.error:
                res.backend_errors[r.name] = r.error
        # always close: it restores the terminal even after a failed frame, and prints
        # the summary even if start() was never called (as the seed did)
        self.display_failed = False
        await self._display_call(
            self.display.close, self.state.snapshot(), self.clock(), summary=self.summary
        )
        if self.buffer.dropped:
            self.report.always(
                f"aoff: {self.buffer.dropped:,} events were dropped because the buffer was full "
                f"(capacity {self.buffer.capacity:,}, overflow={self.buffer.overflow!r})"
            )
        if res.invalid_values:
            self.report.always(
                f"aoff: {res.invalid_values:,} values were not logged (not real numbers, "
                "non-str keys or non-dicts; each kind was reported once above)"
            )
        for name, lost in res.backend_lost.items():
            if lost:
                why = res.backend_errors.get(name, "")
                self.report.always(f"aoff: backend {name!r}: {lost:,} records not written ({why})")
