"""Reliability: nothing lost silently, overload handled, backend faults contained.

* overload: a soak of 2,000,000 events from 4 threads into a slow backend; every
  dropped event is counted (drops == events missing from the output, exactly), memory
  stays bounded, and ``overflow="block"`` loses nothing;
* backend faults: a backend that raises or hangs never costs the other backend a record,
  is reported once, and ``finish()`` gives up on it after ``finish_timeout``;
* disk full for real: a 64 KiB tmpfs under the TensorBoard backend.

No assertion here is a timing claim; the bounds on waits are deliberately generous.
Timings are in ``benchmarks/bench_soak.py`` and ``benchmarks/bench_faults.py``.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import psutil
import pytest

from aoff import AsyncOffPolicyLogger, Backend, FinishReport, OffPolicyLogger, Overflow
from aoff._core._rules import ALERT_TAG
from aoff._pump._intake import BEHIND_SLICE
from aoff.testing import (
    ManualClock,
    MemoryBackend,
    RecordingDisplay,
    await_until,
    probe,
    wait_until,
)
from aoff.testing._faults import drive_backend_clock, finish_grace, watch_backend

from .conftest import (
    ahold_still,
    hold_still,
    jsonl_agent_logger,
    make_async_logger,
    make_logger,
    pump_thread,
    read_jsonl,
    read_tensorboard,
    read_tensorboard_iterations,
)
from .faulty import (
    CountingBackend,
    GatedBackend,
    RaisingBackend,
    SlowBackend,
    number_path,  # noqa: F401 - a fixture
)

# Peak RSS growth allowed while 2,000,000 events hit a logger with the default capacity
# (100,000 events; a bare log_step event is ~0.2 KB, so a full buffer is ~20 MB) and a
# 2 ms-a-batch backend. drop_newest and block cap the buffer exactly (measured 35-45 MB
# growth here, allocator slack and the outbox included). drop_oldest's cap is soft: the
# producers never check, and four threads logging flat out can starve the pump of the
# GIL long enough to overshoot 3-6x (measured 75-130 MB; _buffer.py). Before the buffer
# was trimmed while a backlog was folded, drop_oldest grew past 400 MB here.
SOAK_RSS_BOUND = {"drop_oldest": 250 * 2**20, "drop_newest": 100 * 2**20, "block": 100 * 2**20}


def assert_accounted(log: OffPolicyLogger | AsyncOffPolicyLogger) -> None:
    """Every record offered to a backend was either written or counted as lost."""
    for r in probe(log).backends.values():
        assert r.offered == r.written + r.lost, (r.name, r.offered, r.written, r.lost)


class RssPeak:
    """Samples this process's RSS in a thread; ``growth`` is the peak minus the start."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.start = self.proc.memory_info().rss
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.on_sample: Callable[[], None] = lambda: None

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.proc.memory_info().rss)
            self.on_sample()

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def growth(self) -> int:
        return self.peak - self.start


def produce(log: OffPolicyLogger, threads: int, per_thread: int) -> None:
    """``threads`` producers at full speed; thread t logs iterations t*per .. (t+1)*per-1."""

    def work(t: int) -> None:
        log_step = log.log_step
        for i in range(t * per_thread, (t + 1) * per_thread):
            log_step(i)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()


def assert_per_thread_order(iterations: list[int], per_thread: int) -> None:
    last: dict[int, int] = {}
    for it in iterations:
        t = it // per_thread
        assert it > last.get(t, -1), "a thread's events were reordered or duplicated"
        last[t] = it


# -- overload -------------------------------------------------------------------------------
@pytest.mark.slow  # a soak: ~12 s for the three
@pytest.mark.parametrize(
    ("overflow", "total"),
    [
        ("drop_oldest", 2_000_000),
        ("drop_newest", 2_000_000),
        # block is paced by the fold (~55,000 events/s on this 2-core machine): fewer
        # events keep the test short; benchmarks/bench_soak.py runs it with 2,000,000.
        ("block", 400_000),
    ],
)
@pytest.mark.usefixtures("no_cost_events")  # drops are compared with missing steps
def test_soak_drops_are_counted_exactly_and_memory_stays_bounded(
    overflow: Overflow, total: int, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = SlowBackend(delay=0.002)
    display = RecordingDisplay()
    peak_len = [0]
    with RssPeak() as rss:
        log = make_logger(slow, overflow=overflow, display=display)
        p = probe(log)
        rss.on_sample = lambda: peak_len.__setitem__(0, max(peak_len[0], p.buffered))
        log.start()
        # drain the start event first: under drop_oldest it would otherwise be among the
        # dropped events, and the count below compares drops with missing *steps*
        log.flush()
        produce(log, 4, total // 4)
        report = log.finish()
    received = slow.iterations
    assert len(set(received)) == len(received)
    assert_per_thread_order(received, total // 4)
    missing = total - len(received)
    assert report.dropped_events == missing
    assert report.backend_lost == {"slow": 0}
    assert report.steps == len(received)
    (_, final_state, _) = display.closed[0]
    assert final_state.dropped_events == missing  # the dashboard's System column
    err = capsys.readouterr().err
    if overflow == "block":
        assert missing == 0
        assert "dropped" not in err
    else:
        assert missing > 0  # the slow backend and the fold cannot keep up with 4 threads
        assert err.count("events were dropped") == 1
        assert f"{missing:,} events were dropped" in err
    assert rss.growth < SOAK_RSS_BOUND[overflow], f"RSS grew by {rss.growth / 2**20:.0f} MB"
    if overflow != "drop_oldest":
        assert peak_len[0] <= probe(log).capacity + 4  # hard cap (+1 per thread)
    assert_accounted(log)


@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest"])
@pytest.mark.usefixtures("no_cost_events")
def test_dropped_events_scalar_is_the_running_total(overflow: Overflow) -> None:
    """With one producer, buffer order is iteration order, so each record's
    ``aoff/dropped_events`` can be checked against the iterations missing before it
    (without aoff's own ``COST`` sample, ``no_cost_events``: at load 10 one came and was
    dropped, 173,441 of 200,000 with 26,560 written)."""
    mem = MemoryBackend()
    slow = SlowBackend(delay=0.002)
    log = make_logger(mem, slow, overflow=overflow, capacity=1_000)
    n = 200_000
    for i in range(n):
        log.log_step(i)
    report = log.finish()
    assert report.dropped_events == n - len(mem.records) > 0
    seen_before = 0
    for index, rec in enumerate(mem.records):
        scalars = rec.as_dict()
        dropped_before = rec.iteration - index  # earlier iterations that never arrived
        value = scalars.get("aoff/dropped_events")
        if overflow == "drop_oldest":
            # the oldest are dropped, so the total at fold time is exactly what came before
            assert (value or 0) == dropped_before
        else:
            # refusals are counted when they happen, possibly before this record is folded
            assert (value or 0) >= dropped_before
        if value is not None:
            assert rec.scalars[-1][0] == "aoff/dropped_events"  # appended last
            assert value >= seen_before  # a running total never goes down
            seen_before = int(value)
    assert seen_before <= report.dropped_events


def test_block_policy_blocks_the_sync_caller_until_there_is_room() -> None:
    gated = GatedBackend()
    log = make_logger(gated, overflow="block", capacity=100)
    n = 20_000
    progress = [0]

    def work() -> None:
        for i in range(n):
            log.log_step(i)
            progress[0] = i + 1

    th = threading.Thread(target=work, daemon=True)
    try:
        th.start()
        assert gated.entered.wait(30)
        # the outbox filled, then the buffer
        wait_until(lambda: probe(log).buffer_full, timeout=30, what="the buffer to fill")
        hold_still(0.2, "a while in which nothing may move (no condition can say so)")
        # nothing can drain while the backend is stuck: the producer must be waiting
        assert th.is_alive() and progress[0] < n
    finally:
        gated.gate.set()
    th.join(60)
    assert not th.is_alive() and progress[0] == n
    report = log.finish()
    assert report.dropped_events == 0 and gated.iterations == list(range(n))


def test_default_policy_never_blocks_the_caller_even_when_a_backend_is_stuck() -> None:
    gated = GatedBackend()
    mem = CountingBackend("memory")
    log = make_logger(gated, mem)  # overflow="drop_oldest", capacity=100,000
    n = 20_000
    done = threading.Event()

    def work() -> None:
        for i in range(n):
            log.log_step(i)
        done.set()

    th = threading.Thread(target=work, daemon=True)
    th.start()
    try:
        assert done.wait(60), "the training thread was blocked by a stuck backend"
        assert not gated.iterations  # still stuck while training went on
    finally:
        gated.gate.set()
    report = log.finish()
    assert report.complete and mem.iterations == gated.iterations == list(range(n))


@pytest.mark.anyio
async def test_block_policy_makes_the_async_caller_await_space() -> None:
    gated = GatedBackend()
    mem = CountingBackend("memory")
    n = 20_000
    progress = [0]
    try:
        async with make_async_logger(gated, mem, overflow="block", capacity=100) as log:

            async def work() -> None:
                for i in range(n):
                    await log.log_step(i)  # completes at once unless the buffer is full
                    progress[0] = i + 1

            async with anyio.create_task_group() as tg:
                tg.start_soon(work)
                await await_until(
                    lambda: probe(log).buffer_full, timeout=30, what="the buffer to fill"
                )
                await ahold_still(0.1, "a while in which the task may not run to the end")
                # without awaiting space, the task would have run to the end in one go
                assert progress[0] < n
                gated.gate.set()
        report = probe(log).report
        assert report is not None and report.dropped_events == 0
        assert mem.iterations == gated.iterations == list(range(n))
    finally:
        gated.gate.set()


# -- backend faults -------------------------------------------------------------------------
def disk_full() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_backend_that_raises_is_isolated_and_reported_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = RaisingBackend(disk_full, name="full-disk")
    mem = MemoryBackend()
    display = RecordingDisplay()
    log = make_logger(bad, mem, display=display)
    n = 5_000
    for i in range(n):
        log.log_step(i)
        if i == 2_000:
            log.flush()  # let the failure happen mid-run
    report = log.finish()
    assert [r.iteration for r in mem.records] == list(range(n))
    assert not bad.iterations
    assert bad.attempts == 3  # one write, retried twice, then the backend is given up
    assert report.backend_lost == {"full-disk": n, "memory": 0}
    assert "No space left on device" in report.backend_errors["full-disk"]
    assert "memory" not in report.backend_errors
    err = capsys.readouterr().err
    assert err.count("backend 'full-disk' disabled after error") == 1
    assert err.count(f"backend 'full-disk': {n:,} records not written") == 1
    (_, state, _) = display.closed[0]
    assert "No space left" in state.backend_problems["full-disk"]  # System column
    assert bad.closed == 1
    assert_accounted(log)


def test_a_backend_that_cannot_open_is_not_retried_and_loses_nothing_else(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = RaisingBackend(lambda: PermissionError(13, "Permission denied"), on="open", name="ro")
    mem = MemoryBackend()
    log = make_logger(bad, mem)
    for i in range(100):
        log.log_step(i)
    report = log.finish()
    assert len(mem.records) == 100 and bad.attempts == 1
    assert report.backend_lost["ro"] == 100
    assert "Permission denied" in report.backend_errors["ro"]
    assert capsys.readouterr().err.count("backend 'ro' disabled") == 1
    assert_accounted(log)


def test_a_transient_error_is_retried_and_nothing_is_lost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flaky = RaisingBackend(disk_full, times=2, name="flaky")  # fails twice, then works
    log = make_logger(flaky)
    for i in range(1_000):
        log.log_step(i)
    report = log.finish()
    assert report.complete and flaky.iterations == list(range(1_000))
    assert "flaky" not in capsys.readouterr().err


def test_a_hung_backend_costs_finish_at_most_finish_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    hung = GatedBackend("hung")
    mem = MemoryBackend()
    display = RecordingDisplay()
    log = make_logger(hung, mem, display=display, finish_timeout=1.0)
    n = 3_000
    try:
        for i in range(n):
            log.log_step(i)
        assert hung.entered.wait(30)
        t0 = time.monotonic()
        report = log.finish()
        elapsed = time.monotonic() - t0
    finally:
        hung.gate.set()
    # generous: finish_timeout, then at most 1 s for the abandoned backend's close
    assert elapsed < 1.0 + 9.0
    assert [r.iteration for r in mem.records] == list(range(n))
    assert report.backend_written["hung"] == 0
    assert report.backend_lost["hung"] == n  # the batch in flight is counted too
    assert report.backend_errors["hung"] == "timed out at finish"
    err = capsys.readouterr().err
    assert err.count("backend 'hung' did not finish within 1s") == 1
    (_, state, _) = display.closed[0]
    assert state.backend_problems["hung"] == "timed out at finish"
    assert_accounted(log)


def test_finish_waits_for_a_slow_backend_while_it_keeps_writing() -> None:
    """Slow is not hung: each write here returns well within ``finish_timeout``, but the
    backlog at finish takes longer than it in all. finish() waits while the backend makes
    progress (as it does for the media encoder and the agent), so nothing is lost; a
    machine at load 20 slows every backend this way."""
    slow = SlowBackend(delay=0.1)  # 1,024 records a write: ~10,000 records/s
    log = make_logger(slow, finish_timeout=1.0)
    runner = probe(log).backends["slow"]
    n = 25_000
    for i in range(n):
        log.log_step(i)
    # the final drain folds no faster than the backend writes for as long as it writes,
    # not for finish_timeout only: its outbox never takes in the rest of the backlog
    most = 0
    done = threading.Event()

    def watch() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, runner.pending)
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    t0 = time.monotonic()
    try:
        report = log.finish()
    finally:
        done.set()
        watcher.join()
    assert time.monotonic() - t0 > 1.0  # longer than finish_timeout: the case at hand
    assert report.complete and report.backend_lost["slow"] == 0, report
    assert 0 < most <= runner.max_pending + BEHIND_SLICE, (most, runner.max_pending)
    assert slow.iterations == list(range(n))
    assert_accounted(log)


def test_a_stalled_backend_stops_holding_the_others_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """More records than a runner's outbox holds: without stall detection the hung
    backend would hold the pump back and the buffer would start dropping for everyone.

    The hung write is made to last past the default ``stall_timeout`` (10 s) by
    advancing a manual clock, not by waiting (``tests/test_units.py`` drives
    ``BackendRunner`` alone through the same states)."""
    hung = GatedBackend("hung")
    mem = CountingBackend("memory")
    clock = ManualClock()
    log = make_logger(hung, mem, finish_timeout=0.5, capacity=5_000)
    drive_backend_clock(log, "hung", clock)  # the logger's clock= does not reach it
    r = probe(log).backends["hung"]
    n = 20_000
    try:
        log.log_step(0)
        assert hung.entered.wait(30)  # its first write hangs
        assert not r.stalled
        clock.advance(r.stall_timeout + 0.5)
        # > outbox (4,096) + batch in flight (1,024) + capacity (5,000): without stall
        # detection the buffer overflows. Paced (<= 20 events/ms, like a training loop)
        # so that the fold keeps up with the producer.
        for i in range(1, n):
            log.log_step(i)
            if i % 20 == 0:
                hold_still(0.001, "pace the producer like a training loop")
        report = log.finish()
    finally:
        hung.gate.set()
    assert mem.iterations == list(range(n))
    assert report.dropped_events == 0 and report.backend_lost["memory"] == 0
    assert report.backend_lost["hung"] == n
    err = capsys.readouterr().err
    assert err.count("backend 'hung': write has not returned for 10s") == 1
    assert_accounted(log)


@pytest.mark.anyio
async def test_async_face_isolates_a_raising_backend() -> None:
    bad = RaisingBackend(lambda: PermissionError(13, "Permission denied"), name="bad")
    mem = MemoryBackend()
    async with make_async_logger(bad, mem) as log:
        for i in range(1_000):
            await log.log_step(i)
    report = probe(log).report
    assert report is not None
    assert len(mem.records) == 1_000 and report.backend_lost["bad"] == 1_000


# -- disk full, for real ----------------------------------------------------------------------


def read_jsonl_iterations(path: Path) -> list[int]:
    return [row["iteration"] for row in read_jsonl(path)]


def test_disk_full_on_a_real_tmpfs(tiny_tmpfs: Path, tmp_path: Path) -> None:
    from aoff._backends._jsonl import JsonlBackend
    from aoff._backends._tensorboard import TensorBoardBackend

    tb = TensorBoardBackend(tiny_tmpfs)
    jl = JsonlBackend(tmp_path / "metrics.jsonl")
    mem = MemoryBackend()
    log = make_logger(tb, jl, mem)
    n = 2_000  # ~1 KB a step in TensorBoard: far more than 64 KiB
    metrics = {f"m{k}": float(k) for k in range(20)}
    for i in range(n):
        log.log_step(i + 1, metrics)
        if i % 100 == 0:
            log.flush()
    report = log.finish()
    assert [r.iteration for r in mem.records] == list(range(1, n + 1))
    assert read_jsonl_iterations(tmp_path / "metrics.jsonl") == list(range(1, n + 1))
    assert "No space left on device" in report.backend_errors["tensorboard"]
    written, lost = report.backend_written["tensorboard"], report.backend_lost["tensorboard"]
    assert written + lost == n and lost > 0
    # what reached the disk reads back without error: a prefix, at least what was confirmed
    on_disk = read_tensorboard_iterations(tiny_tmpfs)
    assert on_disk == list(range(1, len(on_disk) + 1))
    assert written <= len(on_disk) <= n
    assert set(report.backend_errors) == {"tensorboard"}


RLIMIT_CHILD = textwrap.dedent(
    """
    import json, resource, signal, sys
    from aoff import OffPolicyLogger
    from aoff._backends._tensorboard import TensorBoardBackend
    from aoff.testing import MemoryBackend

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit get EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
    mem = MemoryBackend()
    log = OffPolicyLogger(log_backend="none", backends=[TensorBoardBackend(sys.argv[1]), mem],
                          handle_sigterm=False)
    metrics = {f"m{k}": float(k) for k in range(20)}
    for i in range(2000):
        log.log_step(i + 1, metrics)
        if i % 100 == 0:
            log.flush()
    r = log.finish()
    print(json.dumps({"memory": [x.iteration for x in mem.records], "written": r.backend_written,
                      "lost": r.backend_lost, "errors": r.backend_errors}))
    """
)


@pytest.mark.slow  # a child process
def test_disk_full_via_a_file_size_limit(tmp_path: Path) -> None:
    import json

    proc = subprocess.run(
        [sys.executable, "-c", RLIMIT_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["memory"] == list(range(1, 2001))
    assert "File too large" in out["errors"]["tensorboard"]
    assert out["written"]["tensorboard"] + out["lost"]["tensorboard"] == 2000
    assert out["lost"]["tensorboard"] > 0
    assert proc.stderr.count("backend 'tensorboard' disabled after error") == 1
    on_disk = read_tensorboard_iterations(tmp_path)
    assert on_disk == list(range(1, len(on_disk) + 1))
    assert out["written"]["tensorboard"] <= len(on_disk)


def test_finish_report_is_complete_only_when_nothing_was_lost() -> None:
    assert FinishReport().complete
    assert not FinishReport(dropped_events=1).complete
    assert not FinishReport(backend_lost={"tb": 1}).complete


# -- bad input: one test per row of docs/reference/input-handling.md -------------------------
def make_logger_with(log_dir: Path, *extra: Backend) -> OffPolicyLogger:
    """A logger writing TensorBoard and JSONL files into ``log_dir`` (plus ``extra``)."""
    from aoff._backends._jsonl import JsonlBackend
    from aoff._backends._tensorboard import TensorBoardBackend

    return make_logger(TensorBoardBackend(log_dir), JsonlBackend(log_dir / "metrics.jsonl"), *extra)


def test_nan_and_infinities_are_kept(tmp_path: Path) -> None:
    import math

    log = make_logger_with(tmp_path)
    log.log_step(1, {"n": math.nan, "p": math.inf, "m": -math.inf}, reward=math.nan)
    report = log.finish()
    assert report.complete and report.invalid_values == 0
    tb = read_tensorboard(tmp_path)
    assert math.isnan(tb["train/n"][0][1]) and math.isnan(tb["reward/mean"][0][1])
    assert tb["train/p"] == [(1, math.inf)] and tb["train/m"] == [(1, -math.inf)]
    # strict JSON; the run's alert (nonfinite()) is a text row of its own after the step's
    row, alert = read_jsonl(tmp_path / "metrics.jsonl")
    assert (row["train/n"], row["train/p"], row["train/m"]) == ("nan", "inf", "-inf")
    assert alert[ALERT_TAG] == report.alerts[0].message


def test_bools_ints_and_numpy_scalars_are_converted() -> None:
    import numpy as np

    mem = MemoryBackend()
    log = make_logger(mem)
    log.log_step(
        np.int64(3),  # type: ignore[arg-type]
        {"b": True, "i": 7, "f32": np.float32(0.5), "i64": np.int64(-2), "big": 2**70},
        reward=np.float64(-1.5),
    )
    report = log.finish()
    d = mem.records[0].as_dict()
    assert mem.records[0].iteration == 3
    assert (d["train/b"], d["train/i"], d["train/f32"], d["train/i64"]) == (1.0, 7.0, 0.5, -2.0)
    assert d["train/big"] == float(2**70) and d["reward/mean"] == -1.5
    assert all(type(v) is float for _, v in mem.records[0].scalars)
    assert report.invalid_values == 0


@pytest.mark.usefixtures("number_path")
def test_non_numbers_are_skipped_counted_and_reported_once_per_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    for i in range(100):
        log.log_step(
            i,
            {"loss": 0.5, "name": f"run-{i}", "none": None, "obj": object(), "huge": 10**400},
            reward="high",  # type: ignore[arg-type]
        )
    report = log.finish()
    assert len(mem.records) == 100
    for rec in mem.records:
        tags = [t for t, _ in rec.scalars]
        assert "train/loss" in tags  # the rest of the call is logged
        assert not {"train/name", "train/none", "train/obj", "train/huge", "reward/mean"} & set(
            tags
        )
    assert report.invalid_values == 5 * 100
    # the once-a-process notice that the pump runs here (a MemoryBackend) names
    # display='none': printed only if no earlier test in this process printed it
    err = [
        line
        for line in capsys.readouterr().err.splitlines()
        if not line.startswith("aoff: the pump runs in this process")
    ]
    for key in ("'name'", "'none'", "'obj'", "'huge'"):
        assert sum(key in line for line in err) == 1, err  # once, not once per step
    assert sum("'reward'" in line for line in err) == 1
    assert sum("500 values were not logged" in line for line in err) == 1


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda log: log.log_step(1, [("loss", 1.0)]), "log_step(metrics)"),
        (lambda log: log.log_step(1, reward_metrics="r"), "log_step(reward_metrics)"),
        (lambda log: log.log_step(1, reward_components=(1, 2)), "log_step(reward_components)"),
        (lambda log: log.log_step(1, extra_info=[4096]), "log_step(extra_info)"),
        (lambda log: log.update_collector_timing(None), "update_collector_timing(timing_ms)"),
    ],
)
def test_a_non_dict_where_a_dict_belongs_is_a_type_error_at_the_call(
    call: Callable[[OffPolicyLogger], object], argument: str
) -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    with pytest.raises(TypeError, match=rf"^{re.escape(argument)}: expected a dict, got "):
        call(log)
    log.log_step(2)
    log.finish()
    assert [r.iteration for r in mem.records] == [2]  # the bad call recorded nothing


def test_mappings_other_than_dict_are_accepted() -> None:
    import collections
    import types

    mem = MemoryBackend()
    log = make_logger(mem)
    log.log_step(
        1,
        collections.OrderedDict(a=1.0),
        reward_components=types.MappingProxyType({"c": 2.0}),
        extra_info=collections.UserDict(throughput_steps=10),
        train_time=0.5,
    )
    log.finish()
    d = mem.records[0].as_dict()
    assert (d["train/a"], d["reward/c"], d["perf/steps_per_sec"]) == (1.0, 2.0, 20.0)


def test_non_string_keys_are_skipped_and_reported_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    for i in range(10):
        log.log_step(i, {1: 1.0, ("a",): 2.0, "ok": 3.0})  # type: ignore[dict-item]
    report = log.finish()
    assert all(
        [t for t, _ in r.scalars if t.startswith("train/")] == ["train/ok"] for r in mem.records
    )
    assert report.invalid_values == 20
    err = capsys.readouterr().err
    assert err.count("key 1 is int, not str") == 1 and err.count("key ('a',) is tuple") == 1


def test_empty_dicts() -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    log.log_step(1, {}, reward_components={"c": 1.0})
    log.log_step(2, {}, reward_metrics={}, reward_components={}, extra_info={})
    log.update_collector_timing({})
    log.log_step(3, metrics={}, train_time=0.01, extra_info={})
    report = log.finish()
    assert report.complete and report.invalid_values == 0
    tags = [[t for t, _ in r.scalars] for r in mem.records]
    assert "reward/c" in tags[0] and "reward/c" not in tags[1]  # written only when given
    assert not any(t.startswith("train/") or t == "perf/steps_per_sec" for t in tags[2])
    display = probe(log).state
    assert display.reward_components == {"c": 1.0}  # an empty dict keeps the last ones


def test_negative_and_decreasing_iterations_are_kept_as_given(tmp_path: Path) -> None:
    order = [5, 10, 3, 10, -1, 0, 20]
    log = make_logger_with(tmp_path)
    for it in order:
        log.log_step(it, {"x": float(it)})
    assert log.finish().complete
    # TensorBoard keeps every point, in write order (its files are brain.Event:2: it
    # purges only after a restart marker, which aoff never writes)
    assert read_tensorboard(tmp_path)["train/x"] == [(it, float(it)) for it in order]
    assert read_jsonl_iterations(tmp_path / "metrics.jsonl") == order


def test_iterations_beyond_int64_are_reported_and_do_not_disable_tensorboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = make_logger_with(tmp_path)
    log.log_step(2**64)
    log.log_step(1.5e300)  # type: ignore[arg-type]
    log.log_step(7)
    report = log.finish()
    assert report.complete and report.invalid_values == 2
    assert read_tensorboard(tmp_path)["axis/iteration"] == [(0, 0.0), (0, 0.0), (7, 7.0)]
    assert "is not a finite 64-bit integer; using 0" in capsys.readouterr().err


def test_a_ten_thousand_key_dict_is_logged_whole(tmp_path: Path) -> None:
    metrics = {f"m{k:05d}": float(k) for k in range(10_000)}
    mem = MemoryBackend()
    log = make_logger_with(tmp_path, mem)
    for i in range(3):
        log.log_step(i + 1, metrics)
    assert log.finish().complete
    for rec in mem.records:
        d = rec.as_dict()
        assert all(d[f"train/m{k:05d}"] == float(k) for k in range(10_000))
    tb = read_tensorboard(tmp_path)
    assert len([t for t in tb if t.startswith("train/m")]) == 10_000
    assert tb["train/m09999"] == [(1, 9999.0), (2, 9999.0), (3, 9999.0)]


def test_unicode_tags_round_trip_and_invalid_unicode_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = make_logger_with(tmp_path)
    log.log_step(1, {"損失": 1.0, "é/ü": 2.0, "🚀": 3.0, "bad\ud800": 4.0})
    log.log_step(2, {"損失": 5.0})
    report = log.finish()
    assert report.complete and report.invalid_values == 1  # TensorBoard still healthy
    tb = read_tensorboard(tmp_path)
    assert tb["train/損失"] == [(1, 1.0), (2, 5.0)]
    assert tb["é/ü"] == [(1, 2.0)] and tb["train/🚀"] == [(1, 3.0)]
    rows = read_jsonl(tmp_path / "metrics.jsonl")
    assert rows[0]["train/損失"] == 1.0 and rows[0]["é/ü"] == 2.0
    assert "is not valid Unicode; skipped" in capsys.readouterr().err


ALL_CALLS: list[tuple[str, tuple[object, ...]]] = [
    ("start", ()),
    ("log_step", (1,)),
    ("log_status", ("x",)),
    ("log_save", ("p",)),
    ("log_buffer_fill", (1, 2)),
    ("update_collector_timing", ({"a": 1.0},)),
    ("update_done_rates", (0.1, 0.2)),
    ("update_buffer_utilization", (0.5,)),
    ("update_staging_pool", (1, 2)),
    ("update_replay_queue", (1, 2)),
    ("set_collection_sync", (True, 4)),
    ("log_collector", (1, 2, 3.0)),
    ("update_ep_length", (10.0,)),
    ("start_training_timer", ()),
]


def test_every_call_after_finish_warns_and_records_nothing() -> None:
    from aoff import AoffWarning

    mem = MemoryBackend()
    log = make_logger(mem)
    log.log_step(1)
    log.finish()
    for name, args in ALL_CALLS:
        with pytest.warns(AoffWarning, match="called after finish"):
            getattr(log, name)(*args)
    assert [r.iteration for r in mem.records] == [1]
    assert probe(log).buffered == 0


@pytest.mark.anyio
async def test_every_async_call_after_close_warns_and_records_nothing() -> None:
    from aoff import AoffWarning

    mem = MemoryBackend()
    async with make_async_logger(mem) as log:
        await log.log_step(1)
    for name, args in ALL_CALLS:
        with pytest.warns(AoffWarning, match="called after the logger was closed"):
            await getattr(log, name)(*args)
    assert [r.iteration for r in mem.records] == [1]


# -- finish() and a pump that is slow or stuck ------------------------------------------------
def test_finish_waits_for_a_long_final_drain_while_it_makes_progress() -> None:
    """Folding the last buffer-full can take longer than finish_timeout + grace; as long
    as it makes progress, finish() must wait (giving up would lose it at exit)."""
    counting = CountingBackend()
    log = make_logger(counting, finish_timeout=0.1)
    metrics = {f"m{k}": float(k) for k in range(10_000)}
    n = 200  # ~7 ms of fold a step here: ~1.4 s, far beyond 0.1 + 0.3 s
    for i in range(n):
        log.log_step(i, metrics)
    with finish_grace(0.3):
        report = log.finish()
    assert report.steps == n and report.complete
    assert counting.iterations == list(range(n))


def test_finish_waits_for_the_agents_long_final_drain_while_it_makes_progress(
    tmp_path: Path,
) -> None:
    """The same in the agent, where finish() sees the drain's progress only in the
    agent's acks: a backlog the agent folds for longer than finish_timeout + grace must
    be acked as it goes (between fold slices, not at the pump's next tick), or finish()
    gives up on a working agent and reports the run partial."""
    log = jsonl_agent_logger(tmp_path, display="none", finish_timeout=0.5)
    assert probe(log).pump_place == "agent"
    metrics = {f"m{k}": float(k) for k in range(100)}
    n = 60_000  # logged in ~0.3 s, folded and written by the agent in ~4.5 s quiet
    for i in range(n):
        log.log_step(i, metrics)
    # finish() gives up after 2 s with no word from the agent: the agent acks every
    # 0.25 s at most and the training process reads them once a second, so a shorter
    # window fails on a busy machine (load 8) with nothing wrong
    with finish_grace(1.5):
        report = log.finish()
    assert report.complete and report.steps == n, report
    assert [r["iteration"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == list(range(n))


class StuckDisplay(RecordingDisplay):
    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def close(self, state: object, now: float, *, summary: bool) -> None:
        self.gate.wait()  # e.g. a terminal that stopped reading


def test_finish_gives_up_on_a_pump_that_stops_making_progress(
    capsys: pytest.CaptureFixture[str],
) -> None:
    display = StuckDisplay()
    mem = MemoryBackend()
    log = make_logger(mem, display=display, finish_timeout=0.2)
    for i in range(100):
        log.log_step(i)
    try:
        with finish_grace(0.3):
            report = log.finish()  # returns although the pump thread is stuck in close()
        assert pump_thread(log).is_alive()
    finally:
        display.gate.set()
    assert report.interrupted and report.steps == 100 and len(mem.records) == 100
    assert "stopped making progress" in capsys.readouterr().err
    pump_thread(log).join(30)


def test_the_final_drain_folds_no_faster_than_the_backends_write() -> None:
    """At finish, the buffer's backlog must not turn into records all at once: a step
    record is several times the size of its event (memory bound at finish)."""
    slow = SlowBackend(delay=0.01)
    log = make_logger(slow, finish_timeout=60)
    watch = watch_backend(log, "slow")
    n = 30_000
    for i in range(n):
        log.log_step(i)
    backlog = probe(log).buffered
    report = log.finish()
    assert report.complete and slow.iterations == list(range(n))
    assert backlog > 10_000  # the slow backend held the pump back: a real backlog
    assert watch.peak_pending <= probe(log).backends["slow"].max_pending + 2 * 512
