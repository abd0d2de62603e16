"""Exits and faults: a full disk, two callers of finish(), the closing event, a clock jump.

Each case is checked on what reaches the disk: TensorBoard read back with its own
``EventAccumulator`` and JSONL read back line by line as strict JSON, against the
``FinishReport``. ``docs/reference/exits-and-faults.md`` lists every case and the test
that shows it.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from aoff import (
    AsyncOffPolicyLogger,
    BackendContext,
    Dashboard,
    FinishReport,
    NullDisplay,
    OffPolicyLogger,
)
from aoff._core._buffer import EventBuffer
from aoff._core._recorder import Recorder
from aoff._core._state import State
from aoff._pump._pump import Pump, PumpSettings
from aoff.testing import MemoryBackend, RecordingDisplay, probe
from aoff.testing._faults import ship_inline_after

from .conftest import ahold_still, hold_still

TIMEOUT = 60.0  # generous bounds on waits: this is a slow, shared machine


# -- reading the files back ------------------------------------------------------------------
def tb_iterations(log_dir: Path) -> list[int]:
    """``axis/iteration`` of every step event, in file order (a torn record raises)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    files = [p for p in os.listdir(log_dir) if p.startswith("events.out.tfevents.")]
    assert len(files) == 1, files
    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    if "axis/iteration" not in acc.Tags()["scalars"]:
        return []
    return [int(e.value) for e in acc.Scalars("axis/iteration")]


def _no_constants(name: str) -> float:
    raise AssertionError(f"non-strict JSON constant {name} in output")


def jsonl_rows(path: Path) -> list[dict[str, object]]:
    """Every line, strict JSON; a torn last line (no newline) fails."""
    text = path.read_text(encoding="utf-8")
    whole = text == "" or text.endswith("\n")
    assert whole, f"a torn last line: {text[-80:]!r}"
    return [json.loads(line, parse_constant=_no_constants) for line in text.splitlines()]


def jsonl_iterations(path: Path) -> list[int]:
    return [int(row["iteration"]) for row in jsonl_rows(path)]  # type: ignore[call-overload]


def assert_both_files_hold(log_dir: Path, n: int) -> None:
    expected = list(range(1, n + 1))
    assert jsonl_iterations(log_dir / "metrics.jsonl") == expected
    assert tb_iterations(log_dir) == expected


PUMPS = ["thread", "process"]


def sync_logger(log_dir: Path, pump: str = "thread", **kw: object) -> OffPolicyLogger:
    """TensorBoard + JSONL in ``log_dir``, SIGTERM left alone. ``pump="thread"``: nothing
    drawn (``NullDisplay``); ``"process"``: the agent's own dashboard (a display object
    would keep the pump in this process), on the captured stdout."""
    if pump == "thread":
        kw.setdefault("display", NullDisplay())
    return OffPolicyLogger(
        log_dir=str(log_dir),
        log_backend="tensorboard",
        backends=("jsonl",),
        handle_sigterm=False,
        pump=pump,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def async_logger(log_dir: Path, **kw: object) -> AsyncOffPolicyLogger:
    kw.setdefault("display", NullDisplay())
    return AsyncOffPolicyLogger(
        log_dir=str(log_dir),
        log_backend="tensorboard",
        backends=("jsonl",),
        handle_sigterm=False,
        pump="thread",
        **kw,  # type: ignore[arg-type]
    )


# -- disk full -------------------------------------------------------------------------------
DISK_FULL_STEPS = 500  # 64 KiB holds ~90 of them: lost in both files, many batches kept
DISK_FULL_CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    import anyio
    from aoff import AsyncOffPolicyLogger, NullDisplay, OffPolicyLogger

    face, pump, log_dir, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit get EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
    kw = dict(log_dir=log_dir, log_backend="tensorboard", backends=("jsonl",),
              handle_sigterm=False, pump=pump)
    if pump == "thread":
        kw["display"] = NullDisplay()  # process: the agent draws on the captured stdout
    metrics = {f"m{k}": float(k) for k in range(20)}  # ~0.7 KB a JSONL line, ~1 KB in TB

    if face == "sync":
        log = OffPolicyLogger(**kw)
        for i in range(n):
            log.log_step(i + 1, metrics)
            if i % 10 == 9:
                log.flush()  # small batches: many whole batches fit before the limit
        r = log.finish()
    else:
        async def main():
            async with AsyncOffPolicyLogger(**kw) as log:
                for i in range(n):
                    await log.log_step(i + 1, metrics)
                    if i % 10 == 9:
                        await log.aflush()
                return await log.afinish()
        r = anyio.run(main, backend=face)
    print(json.dumps({"steps": r.steps, "written": r.backend_written, "lost": r.backend_lost,
                      "errors": r.backend_errors, "dropped": r.dropped_events}))
    """
)


def assert_disk_full_accounting(
    log_dir: Path, report: dict[str, object], steps: int, error: str
) -> tuple[int, int]:
    """Each backend: a whole prefix on disk, exactly what the report calls written."""
    written: dict[str, int] = report["written"]  # type: ignore[assignment]
    lost: dict[str, int] = report["lost"]  # type: ignore[assignment]
    errors: dict[str, str] = report["errors"]  # type: ignore[assignment]
    assert report["steps"] == steps and report["dropped"] == 0
    on_disk = {
        "jsonl": jsonl_iterations(log_dir / "metrics.jsonl"),
        "tensorboard": tb_iterations(log_dir),
    }
    for name, its in on_disk.items():
        assert its == list(range(1, len(its) + 1)), name  # whole, in order, no gap
        assert written[name] == len(its), (name, written, len(its))
        assert written[name] + lost[name] == steps, name
        assert lost[name] > 0 and error in errors[name], (name, errors)
    return written["jsonl"], written["tensorboard"]


@pytest.mark.parametrize("pump", ["thread", pytest.param("process", marks=pytest.mark.slow)])
@pytest.mark.parametrize("face", ["sync", "asyncio", "trio"])
def test_disk_full_leaves_whole_lines_and_exact_counts(
    tmp_path: Path, face: str, pump: str
) -> None:
    """RLIMIT_FSIZE (no root needed; the agent inherits it): every file stops at a whole
    batch, and ``backend_written`` is exactly the number of steps in it, for both
    backends."""
    args = [face, pump, str(tmp_path), str(DISK_FULL_STEPS)]
    proc = subprocess.run(
        [sys.executable, "-c", DISK_FULL_CHILD, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    jl, tb = assert_disk_full_accounting(tmp_path, report, DISK_FULL_STEPS, "File too large")
    assert jl > 10 and tb > 10  # more than one batch reached each file
    for name in ("tensorboard", "jsonl"):
        assert proc.stderr.count(f"backend {name!r} disabled after error") == 1


@pytest.mark.anyio
async def test_disk_full_on_a_real_tmpfs_async_face(tiny_tmpfs: Path) -> None:
    """ENOSPC for real, both files on one 64 KiB tmpfs, on asyncio and trio."""
    metrics = {f"m{k}": float(k) for k in range(20)}
    async with async_logger(tiny_tmpfs) as log:
        for i in range(DISK_FULL_STEPS):
            await log.log_step(i + 1, metrics)
            if i % 10 == 9:
                await log.aflush()
        r = await log.afinish()
    report = {
        "steps": r.steps,
        "written": r.backend_written,
        "lost": r.backend_lost,
        "errors": r.backend_errors,
        "dropped": r.dropped_events,
    }
    assert_disk_full_accounting(tiny_tmpfs, report, DISK_FULL_STEPS, "No space left on device")


# -- two callers of finish() ------------------------------------------------------------------
BACKLOG = 15_000  # a backlog the pump needs well over 0.1 s to write


@pytest.mark.slow  # 15,000 steps through TensorBoard and JSONL
@pytest.mark.parametrize("pump", PUMPS)
def test_two_threads_finish_at_once_and_share_one_complete_report(
    tmp_path: Path, pump: str
) -> None:
    log = sync_logger(tmp_path, pump)
    for i in range(1, BACKLOG + 1):
        log.log_step(i, {"loss": i / 7})
    assert probe(log).buffered > 0  # a backlog is still waiting when finish() starts
    barrier = threading.Barrier(2)
    reports: list[FinishReport | None] = [None, None]

    def call(k: int) -> None:
        barrier.wait()
        reports[k] = log.finish()

    threads = [threading.Thread(target=call, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "finish() did not return"
    first, second = reports
    assert first is not None and second is not None
    assert first is second  # the second caller waited for the first one's report
    assert first.steps == BACKLOG and first.complete and not first.partial
    assert first.backend_written == {"tensorboard": BACKLOG, "jsonl": BACKLOG}
    assert log.finish() is first  # and a third, later call too
    assert_both_files_hold(tmp_path, BACKLOG)


@pytest.mark.slow
@pytest.mark.anyio
async def test_two_tasks_afinish_at_once_and_share_one_complete_report(tmp_path: Path) -> None:
    """The task that entered ``async with`` and a sibling task both call ``afinish()``
    with a 15,000-step backlog (the entering task first: the other order is the bug in
    the next test)."""
    reports: list[FinishReport] = []
    async with anyio.create_task_group() as outer, async_logger(tmp_path) as log:
        for i in range(1, BACKLOG + 1):
            await log.log_step(i, {"loss": i / 7})
        assert probe(log).buffered == BACKLOG + 1  # the pump has not run: start + steps

        async def call() -> None:
            reports.append(await log.afinish())

        outer.start_soon(call)  # runs while the call below waits for the pump
        await call()
    assert len(reports) == 2
    first, second = reports
    assert first is second
    assert first.steps == BACKLOG and first.complete and not first.partial
    assert first.backend_written == {"tensorboard": BACKLOG, "jsonl": BACKLOG}
    assert_both_files_hold(tmp_path, BACKLOG)


OTHER_TASK_CHILD = textwrap.dedent(
    """
    import sys
    import anyio
    from aoff import AsyncOffPolicyLogger, NullDisplay
    from aoff.testing import MemoryBackend, await_until, probe

    async def main():
        mem, reports = MemoryBackend(), []
        async with anyio.create_task_group() as outer:
            async with AsyncOffPolicyLogger(log_backend="none", backends=[mem],
                                            display=NullDisplay(), handle_sigterm=False) as log:
                for i in range(1, 1001):
                    await log.log_step(i)

                async def call():
                    reports.append(await log.afinish())

                outer.start_soon(call)
                # the sibling task is the first to call afinish()
                await await_until(lambda: probe(log).phase != "open")
                await call()
        assert reports[0] is reports[1] and reports[0].steps == 1000, reports
        assert [r.iteration for r in mem.records] == list(range(1, 1001))
        print("ok")

    anyio.run(main, backend=sys.argv[1])
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_afinish_from_a_task_other_than_the_one_that_entered(backend: str) -> None:
    """In a subprocess: the failure mode is a hang."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", OTHER_TASK_CHILD, backend],
            capture_output=True,
            text=True,
            timeout=8,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("afinish() from another task hung")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# -- the closing event never evicts a data event ----------------------------------------------
CAPACITY = 300


@contextlib.contextmanager
def gil_held_by_this_thread() -> Iterator[None]:
    """No preemptive GIL hand-off for 60 s: until this thread blocks (``finish()``
    waiting), the pump thread (and the process mode's shipper) cannot run, so exactly
    what is logged meanwhile is in the buffer when ``finish()`` appends its event."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@pytest.mark.parametrize("pump", PUMPS)
@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest", "block"])
def test_the_closing_event_never_evicts_a_data_event(
    tmp_path: Path, overflow: str, pump: str
) -> None:
    log = sync_logger(tmp_path, pump, capacity=CAPACITY, overflow=overflow)
    log.flush()  # the pump is idle and the buffer empty
    p = probe(log)
    if pump == "process":
        # the loop itself ships once half the buffer waits: not here, where the buffer
        # must be exactly full when finish() comes
        ship_inline_after(log, CAPACITY + 1)
    with gil_held_by_this_thread():
        for i in range(1, CAPACITY + 1):
            log.log_step(i, {"loss": float(i)})
        full = (p.buffered, p.buffer_dropped)
        report = log.finish()
    assert full == (CAPACITY, 0)  # exactly full when finish() came
    assert report.dropped_events == 0 and p.buffer_dropped == 0
    assert report.steps == CAPACITY and report.complete
    assert_both_files_hold(tmp_path, CAPACITY)  # the first step is there


@pytest.mark.anyio
@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest"])  # block: the full
async def test_the_closing_event_never_evicts_a_data_event_async(  # buffer's await yields
    tmp_path: Path, overflow: str
) -> None:
    async with async_logger(tmp_path, capacity=CAPACITY, overflow=overflow) as log:
        await log.aflush()  # the start event is folded: the buffer is empty
        p = probe(log)
        for i in range(1, CAPACITY + 1):  # no await yields here: the pump cannot drain
            await log.log_step(i, {"loss": float(i)})
        assert p.buffered == CAPACITY and p.buffer_dropped == 0
        report = await log.afinish()
    assert report.dropped_events == 0
    assert report.steps == CAPACITY and report.complete
    assert_both_files_hold(tmp_path, CAPACITY)


# -- a wall clock that steps back --------------------------------------------------------------
class SteppingBackClock:
    """Real wall time until :meth:`step_back`, then that much earlier (NTP, a VM resume)."""

    def __init__(self, real: Callable[[], float]) -> None:
        self.real = real
        self.offset = 0.0

    def __call__(self) -> float:
        return self.real() - self.offset

    def step_back(self, seconds: float) -> float:
        before = self()
        self.offset += seconds
        return before


JUMP = 3600.0
FRAMES = 3  # frames wanted on each side of the jump


def frames_after(display: RecordingDisplay, before: float) -> int:
    return sum(1 for now, _ in display.frames if now < before - JUMP / 2)


def log_until(
    log: OffPolicyLogger,
    display: RecordingDisplay,
    done: Callable[[], bool],
    i: int,
    *,
    pace: float,
    tick: Callable[[], object] | None = None,
) -> int:
    """Log steps after ``i`` (``tick()`` before each, ``pace`` seconds apart) until
    ``done()``; the last iteration logged."""
    deadline = time.monotonic() + TIMEOUT
    while not done():
        assert time.monotonic() < deadline, f"{len(display.frames)} frames, iteration {i}"
        i += 1
        if tick is not None:
            tick()
        log.log_step(i, {"loss": float(i)})
        hold_still(pace, "a training step takes time")
    return i


def assert_jump_in_jsonl(path: Path, n: int) -> None:
    rows = jsonl_rows(path)
    assert [r["iteration"] for r in rows] == list(range(1, n + 1))
    times: list[float] = [r["wall_time"] for r in rows]  # type: ignore[misc]
    # each record keeps its own wall time: the step back is in the file, once
    assert sum(1 for a, b in itertools.pairwise(times) if b < a - JUMP / 2) == 1


def test_a_wall_clock_stepping_back_does_not_freeze_the_dashboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default clock (no ``clock=``): the wall time steps back an hour mid-run; frames
    are throttled on ``time.monotonic`` and keep coming."""
    clock = SteppingBackClock(time.time)
    monkeypatch.setattr(time, "time", clock)  # what the logger reads as the wall clock
    display = RecordingDisplay()
    log = sync_logger(tmp_path, display=display, refresh_per_second=20)
    log.start()
    i = log_until(log, display, lambda: len(display.frames) >= FRAMES, 0, pace=0.002)
    before = clock.step_back(JUMP)
    i = log_until(log, display, lambda: frames_after(display, before) >= FRAMES, i, pace=0.002)
    report = log.finish()
    assert report.steps == i and report.complete
    assert display.closed[0][0] < before - JUMP / 2  # the summary got the stepped-back time
    assert_jump_in_jsonl(tmp_path / "metrics.jsonl", i)
    assert tb_iterations(tmp_path) == list(range(1, i + 1))


@pytest.mark.anyio
async def test_a_wall_clock_stepping_back_does_not_freeze_the_dashboard_async(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SteppingBackClock(time.time)
    monkeypatch.setattr(time, "time", clock)
    display = RecordingDisplay()
    i = 0
    async with async_logger(tmp_path, display=display, refresh_per_second=20) as log:

        async def log_until(done: Callable[[], bool]) -> None:
            nonlocal i
            with anyio.fail_after(TIMEOUT):
                while not done():
                    i += 1
                    await log.log_step(i, {"loss": float(i)})
                    await ahold_still(0.002, "a training step takes time")

        await log_until(lambda: len(display.frames) >= FRAMES)
        before = clock.step_back(JUMP)
        await log_until(lambda: frames_after(display, before) >= FRAMES)
    report = await log.afinish()
    assert report.steps == i and report.complete
    assert_jump_in_jsonl(tmp_path / "metrics.jsonl", i)
    assert tb_iterations(tmp_path) == list(range(1, i + 1))


@pytest.mark.anyio
async def test_the_pump_throttles_frames_on_its_monotonic_clock_not_the_wall_clock() -> None:
    """The same at the ``Pump``, with the wall clock injected and ``time.monotonic``
    for the throttle (the public ``clock=`` moves both: see docs/reference/exits-and-faults.md)."""
    clock = SteppingBackClock(time.time)
    buffer = EventBuffer()
    display = RecordingDisplay()
    mem = MemoryBackend()
    pump = Pump(
        buffer,
        State(),
        [mem],
        display,
        PumpSettings(refresh_per_second=20, clock=clock, monotonic=time.monotonic),
    )
    rec: Recorder[None] = Recorder()
    rec._init_recorder(buffer.put, clock)
    i = 0
    async with anyio.create_task_group() as tg:
        await tg.start(pump.run, BackendContext())

        async def log_until(done: Callable[[], bool]) -> None:
            nonlocal i
            with anyio.fail_after(TIMEOUT):
                while not done():
                    i += 1
                    rec.log_step(i, {"loss": float(i)})
                    await ahold_still(0.002, "a training step takes time")

        rec._start_event("go")
        await log_until(lambda: len(display.frames) >= FRAMES)
        before = clock.step_back(JUMP)
        await log_until(lambda: frames_after(display, before) >= FRAMES)
        pump.request_stop()
    assert pump.result is not None and pump.result.steps == i
    assert [r.iteration for r in mem.records] == list(range(1, i + 1))


class ManualClock:
    """A test clock (``clock=``): moves only when the test says; it drives both the wall
    time and the frame throttle."""

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_an_injected_clock_stepping_back_does_not_freeze_the_dashboard(tmp_path: Path) -> None:
    """``clock=`` moves the throttle too: an hour back, frames must keep coming (they did
    not until the clock had caught up with the last frame's time)."""
    clock = ManualClock()
    display = RecordingDisplay()
    log = sync_logger(tmp_path, display=display, refresh_per_second=20, clock=clock)
    log.start()

    def tick() -> None:
        clock.t += 0.1  # two frame intervals per step

    i = log_until(log, display, lambda: len(display.frames) >= FRAMES, 0, pace=0.005, tick=tick)
    before = clock.t
    clock.t -= JUMP
    i = log_until(
        log, display, lambda: frames_after(display, before) >= FRAMES, i, pace=0.005, tick=tick
    )
    report = log.finish()
    assert report.steps == i and report.complete
    assert_jump_in_jsonl(tmp_path / "metrics.jsonl", i)


def test_plain_line_dashboard_keeps_printing_after_the_wall_clock_steps_back() -> None:
    """What a run logging to a file (a cluster job) sees: one status line per
    ``plain_interval``. Display level, deterministic: the times are passed in."""
    out = io.StringIO()
    dash = Dashboard(Console(file=out, width=200), plain_interval=5.0, live=False)
    state = State()
    t = 1_000_000.0
    state.start_time = t
    dash.open(state, t)
    for k in range(1, 4):
        state.iteration = k
        dash.update(state, t + 6.0 * k)  # 6 s apart: a line each time
    assert len(out.getvalue().splitlines()) == 4
    for k in range(4, 7):  # the wall clock stepped back an hour; 6 real seconds apart
        state.iteration = k
        dash.update(state, t + 6.0 * k - JUMP)
    assert len(out.getvalue().splitlines()) == 7
