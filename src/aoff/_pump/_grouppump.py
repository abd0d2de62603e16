"""``GroupPump``: the pumps of a run group's N runs on one event loop.

Why one loop for N runs: a run group (``aoff.RunGroup``) is many runs of one program
(seeds trained side by side, a vmapped JAX program). Each run keeps a whole pump of its
own (its state, backends, summary file, rules), but they share one loop, and the
training loop hands them one item per group call: the splitter task here turns them into
each run's events (``split_items``: one event a run and call, or for plain steps in a
row one block a run, folded as columns) and moves them into the runs' buffers, off the
training loop. Backpressure: the splitter moves events only while every run's buffer has
room, so the group's own buffer (and its overflow policy, counted) is where a flood
stops.

Where the loop runs is the caller's: the group's agent process runs it on its main
thread (``_agent/_groupserve.py``, ``pump="process"``), the training process in the
"aoff-group" thread (:meth:`GroupPump.start_thread`, ``pump="thread"``). Either way
:meth:`flush` and :meth:`stop` are called from another thread and reach the loop only
through anyio's thread bridge.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from .._core._buffer import EventBuffer
from .._core._events import Event
from .._core._groupbatch import split_items
from .._core._report import FinishReport, gave_up_line
from .._core._rules import Alert
from .._core._say import say_to_stderr
from .._core._state import State
from .._display._grouptable import GroupRow, GroupScreen
from ._options import Options
from ._progresswatch import ProgressWatch, wait_progressing
from ._thread import start_loop_thread
from ._wiring import Core

__all__ = ["GroupPump", "GroupSpec", "group_pump"]

#: group events moved per turn of the splitter before it yields to the pumps
SPLIT_SLICE = 256
#: the splitter's wait when the intake had nothing to move: a loop logging at 1 kHz hands
#: each run's pump ~100 steps a turn, not ~20 (an 8-run group of 32 metrics at 1 kHz:
#: the agent's CPU ~0.7x of 20 ms turns', ``bench_agent_cpu.py``'s group row). Latency
#: beside the other clocks: the runs' pumps fold every 50 ms, the table draws at 4/s,
#: the acks go every 0.25 s; ``flush()`` and ``finish()`` move what is queued at once
TICK = 0.1


class GroupSpec:
    """What builds a group's pumps, in this process or in the group's agent (pickled in
    its hello): each run's options, its name, and the group's table."""

    def __init__(
        self,
        options: Sequence[Options],
        names: Sequence[str],
        title: str,
        display: str,
        refresh_per_second: float,
    ) -> None:
        self.options = tuple(options)
        self.names = tuple(names)
        self.title = title
        self.display = display
        self.refresh_per_second = refresh_per_second


def group_pump(
    spec: GroupSpec,
    intake: EventBuffer,
    on_alert: Callable[[int, Alert], None],
    on_tick: Callable[[], object] | None = None,
) -> GroupPump:
    """The group's N pumps (one :class:`Core` a run) and its table, from ``spec``."""
    cores: list[Core] = []
    for k, opts in enumerate(spec.options):

        def alerted(alert: Alert, early: bool = False, k: int = k) -> None:
            on_alert(k, alert)

        cores.append(Core(opts, on_alert=alerted))
    screen = None
    if spec.display != "none":
        screen = GroupScreen(spec.title, live=spec.display == "rich")
    runs = len(cores)
    return GroupPump(
        cores,
        intake,
        lambda items: split_items(items, runs),
        names=spec.names,
        screen=screen,
        refresh_per_second=spec.refresh_per_second,
        on_tick=on_tick,
    )


class GroupPump:
    """N :class:`Core` pumps and the splitter that feeds them from ``intake``.

    ``split(items)`` returns each run's events of the items, in the runs' order; ``on_tick``
    is called on every turn of the splitter (the agent's acks). :meth:`run` is the loop's
    work; another thread calls :meth:`flush` and :meth:`stop`.
    """

    def __init__(
        self,
        cores: Sequence[Core],
        intake: EventBuffer,
        split: Callable[[Sequence[Any]], list[list[Event]]],
        *,
        names: Sequence[str] = (),
        screen: GroupScreen | None = None,
        refresh_per_second: float = 4.0,
        on_tick: Callable[[], object] | None = None,
    ) -> None:
        self.cores = list(cores)
        self._names = list(names) or [str(k) for k in range(len(self.cores))]
        self._screen = screen
        self._frame_every = 1.0 / refresh_per_second
        self._next_frame = 0.0
        self.intake = intake
        self._split = split
        self._on_tick = on_tick
        self._final: Event | None = None
        self._wake: anyio.Event | None = None
        self._token: Any = None
        #: set once :meth:`run` ended (every run's pump returned)
        self.done = threading.Event()
        self._thread: threading.Thread | None = None

    async def run(self, ready: Callable[[], None]) -> None:
        """Every run's pump and the splitter, until :meth:`stop`; ``ready()`` once
        :meth:`flush` and :meth:`stop` may be called."""
        try:
            self._token = anyio.lowlevel.current_token()
            self._wake = anyio.Event()
            ready()
            async with anyio.create_task_group() as tg:
                for core in self.cores:
                    tg.start_soon(core.pump.run, core.context)
                tg.start_soon(self._splitter)
        finally:
            self.done.set()

    def start_thread(self) -> GroupPump:
        """Run the loop in the "aoff-group" daemon thread of this process."""
        self._thread = start_loop_thread(self.run, "aoff-group", "the group's pump thread")
        return self

    # -- on the loop ------------------------------------------------------------------------
    def _room(self) -> int:
        """Group items the runs' buffers have room for (each item is one event a run)."""
        return min(c.buffer.capacity - len(c.buffer) for c in self.cores)

    def _move(self) -> int:
        """Split up to a slice of group events into the runs' buffers (while they have
        room): each run's events of the slice go into its buffer at once."""
        intake, split, cores = self.intake, self._split, self.cores
        if intake.overflow == "drop_oldest":
            intake.trim()  # over capacity: the oldest go, counted (``intake.dropped``)
        room = self._room()
        if room <= 0 or not len(intake):
            return 0
        items = intake.drain(min(SPLIT_SLICE, room))
        for core, events in zip(cores, split(items), strict=True):
            core.buffer.put_many(events)
        return len(items)

    def rows(self) -> list[GroupRow]:
        """Each run's latest values, copied (on the loop, or once the pumps ended)."""
        return [_row(n, c.state) for n, c in zip(self._names, self.cores, strict=True)]

    def _frame(self) -> None:
        now = anyio.current_time()
        if self._screen is None or now < self._next_frame:
            return
        self._next_frame = now + self._frame_every
        try:
            self._screen.show(self.rows())
        except Exception as exc:  # a display never stops the runs: off, said once
            self._screen = None
            say_to_stderr(f"aoff: the group's table is off: {type(exc).__name__}: {exc}")

    def steps(self) -> tuple[int, ...]:
        """Each run's steps folded so far."""
        return tuple(c.pump.progress().steps for c in self.cores)

    async def _splitter(self) -> None:
        while True:
            moved = self._move()
            self._frame()
            if self._on_tick is not None:
                self._on_tick()
            if self._final is not None and not len(self.intake):
                for core in self.cores:
                    core.buffer.append_final(self._final)
                    core.pump.request_stop(summary=self._summary)
                return
            if moved:
                await anyio.lowlevel.checkpoint()
            else:
                assert self._wake is not None
                with anyio.move_on_after(TICK):
                    await self._wake.wait()

    async def _flush(self) -> None:
        while len(self.intake):
            self._move()
            await anyio.sleep(0.001)
        for core in self.cores:
            await core.pump.flush()

    def _request_stop(self, final: Event, summary: bool) -> None:
        self._summary = summary
        self._final = final
        assert self._wake is not None
        self._wake.set()

    # -- from the training thread ---------------------------------------------------------------
    def flush(self) -> None:
        """Wait until every run wrote and flushed everything logged so far."""
        if not self.done.is_set():
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                anyio.from_thread.run(self._flush, token=self._token)

    def stop(self, final: Event, summary: bool, idle_timeout: float) -> list[FinishReport]:
        """Split what is left, close each run with ``final``, wait for every run's report
        (a partial one, said in a line, for a run whose pump stalled)."""
        with contextlib.suppress(RuntimeError):  # the loop is already gone
            anyio.from_thread.run_sync(
                lambda: self._request_stop(final, summary), token=self._token
            )
        self._join(idle_timeout)
        if self._screen is not None:
            with contextlib.suppress(Exception):
                self._screen.show(self.rows())
                self._screen.close()
        out: list[FinishReport] = []
        for core in self.cores:
            pump = core.pump
            if pump.result is not None:
                out.append(pump.result)
                continue
            report = pump.partial_report()
            say_to_stderr(gave_up_line(report.dropped_events - pump.dropped()))
            out.append(report)
        return out

    def _join(self, idle_timeout: float) -> bool:
        """Wait while the runs' pumps progress (events folded, records written)."""
        cores, intake = self.cores, self.intake

        def mark() -> tuple[int, ...]:
            marks = [intake.drained]
            for c in cores:
                got = c.pump.progress()
                marks += [got.drained, got.steps, got.settled]
            return tuple(marks)

        idle = ProgressWatch(mark, idle_timeout)
        thread = self._thread
        if thread is None:  # the loop is the caller's (the agent's main thread)
            done = self.done
            return wait_progressing(done.is_set, idle, lambda: done.wait(0.25))
        # the thread's end, not only the loop's: what its frames hold is let go of then
        return wait_progressing(lambda: not thread.is_alive(), idle, lambda: thread.join(0.25))


def _row(name: str, state: State) -> GroupRow:
    history = state.reward_history
    return GroupRow(
        name, state.iteration, history[-1] if history else None, dict(state.latest_metrics)
    )
