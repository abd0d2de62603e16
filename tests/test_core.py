"""The core pipeline: seed-compatible records from both faces, ordering, no loss."""

from __future__ import annotations

import contextlib
import itertools
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from aoff import AoffWarning, AsyncOffPolicyLogger, OffPolicyLogger
from aoff.testing import ManualClock, MemoryBackend, RecordingDisplay

from .conftest import make_async_logger, make_logger
from .seedcase import CALLS, EXPECTED, assert_records_equal, thread_call, thread_expected


def test_sync_face_writes_the_seed_records() -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    log.start()
    for name, args, kwargs in CALLS:
        assert getattr(log, name)(*args, **kwargs) is None  # fire-and-forget
    report = log.finish()
    assert_records_equal(mem.records, EXPECTED)
    assert report.steps == 3 and report.complete
    assert mem.opened == 1 and mem.closed == 1


@pytest.mark.anyio
async def test_async_face_writes_the_seed_records() -> None:
    mem = MemoryBackend()
    async with make_async_logger(mem) as log:
        for name, args, kwargs in CALLS:
            await getattr(log, name)(*args, **kwargs)
    assert_records_equal(mem.records, EXPECTED)
    assert mem.closed == 1


@pytest.mark.anyio
async def test_async_face_records_at_call_time_even_without_await() -> None:
    mem = MemoryBackend()
    async with make_async_logger(mem) as log:
        for name, args, kwargs in CALLS:
            getattr(log, name)(*args, **kwargs)  # no await: still recorded, in order
    assert_records_equal(mem.records, EXPECTED)


def test_sync_face_from_four_threads_each_with_its_own_keys() -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    n = 2_000

    def worker(t: int) -> None:
        for i in range(n):
            thread_call(log, t, i)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    log.finish()
    assert len(mem.records) == 4 * n
    for t in range(4):
        mine = [r for r in mem.records if r.scalars[2][0] == f"train/t{t}_loss"]
        assert_records_equal(mine, [thread_expected(t, i) for i in range(n)])


@pytest.mark.slow  # ~15 s
def test_steps_from_four_threads_wrap_a_full_buffer_many_times_and_arrive_in_order() -> None:
    """200,000 log_step calls from 4 threads through a 10,000-event buffer (it fills and
    is drained 20 times over); overflow='block' so producers wait, never drop."""
    mem = MemoryBackend()
    log = make_logger(mem, overflow="block", capacity=10_000)
    per_thread = 50_000

    def worker(t: int) -> None:
        for i in range(per_thread):
            log.log_step(t * 1_000_000 + i)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    report = log.finish()
    assert report.dropped_events == 0
    assert len(mem.records) == 4 * per_thread
    by_thread: list[list[int]] = [[], [], [], []]
    for r in mem.records:
        by_thread[r.iteration // 1_000_000].append(r.iteration % 1_000_000)
    for seq in by_thread:
        assert seq == list(range(per_thread))


def test_finish_and_close_are_idempotent_and_later_calls_warn() -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    log.log_step(1)
    first = log.finish()
    assert log.finish() is first and log.close() is first
    with pytest.warns(AoffWarning, match=r"log_step\(\) called after finish"):
        log.log_step(2)
    assert len(mem.records) == 1 and mem.closed == 1


def test_flush_delivers_everything_logged_so_far() -> None:
    mem = MemoryBackend()
    log = make_logger(mem)
    for i in range(100):
        log.log_step(i + 1)
    log.flush()
    assert len(mem.records) == 100 and mem.flushes >= 1
    log.close()


def test_context_manager_finishes_and_marks_exceptions_as_interrupted() -> None:
    mem = MemoryBackend()
    display = RecordingDisplay()
    with (
        pytest.raises(ValueError),
        make_logger(mem, display=display) as log,
    ):
        log.log_step(1)
        raise ValueError("boom")
    assert len(mem.records) == 1
    (_, state, summary) = display.closed[0]
    assert summary and state.interrupted and state.finished


def test_wrong_twin_errors_name_the_right_one() -> None:
    log = OffPolicyLogger(log_backend="no_print", handle_sigterm=False)
    with pytest.raises(AttributeError, match=r"'OffPolicyLogger' object has no attribute"):
        getattr(log, "__aenter__")  # noqa: B009 - what a static checker rejects
    # no twin for the context-manager protocol: the sync face is not an async one
    assert not isinstance(log, contextlib.AbstractAsyncContextManager)
    assert "aflush" not in dir(log) and "aflush" not in dir(OffPolicyLogger)
    for name, right in (("aflush", "flush()"), ("afinish", "finish()"), ("aclose", "close()")):
        with pytest.raises(
            AttributeError, match=re.escape(f"no {name}: it is the sync face, use {right}")
        ):
            getattr(log, name)
    assert not hasattr(log, "astate_dict")

    async def enter() -> None:
        async with log:  # type: ignore[attr-defined]
            pass

    with pytest.raises((TypeError, AttributeError)):
        anyio.run(enter)
    log.close()
    alog = AsyncOffPolicyLogger(log_backend="no_print")
    with pytest.raises(TypeError, match=r"await log.aflush\(\)"):
        alog.flush()
    with pytest.raises(TypeError, match=r"await log.afinish\(\)"):
        alog.finish()
    with pytest.raises(TypeError, match=r"await log.aclose\(\)"):
        alog.close()
    with pytest.raises(TypeError, match=r"async with AsyncOffPolicyLogger"), alog:
        pass


@pytest.mark.anyio
async def test_async_face_drains_on_cancellation() -> None:
    mem = MemoryBackend()
    with anyio.move_on_after(0.2):
        async with make_async_logger(mem) as log:
            for i in range(10):
                await log.log_step(i + 1)
            await anyio.sleep(5)  # on purpose: move_on_after cancels the body here
    assert [r.iteration for r in mem.records] == list(range(1, 11))


def test_display_refreshes_no_more_than_refresh_per_second() -> None:
    clock = ManualClock()
    display = RecordingDisplay()
    mem = MemoryBackend()
    log = make_logger(mem, display=display, clock=clock, refresh_per_second=4)
    log.start()
    for i in range(10_000):  # 10,000 steps over 1 s of clock time
        log.log_step(i + 1)
        clock.advance(1.0 / 10_000)
        if i % 500 == 0:
            log.flush()  # let the pump tick mid-run
    log.finish()
    times = [t for t, _ in display.frames]
    assert 1 <= len(times) <= 4 + 2
    assert all(b - a >= 0.25 for a, b in itertools.pairwise(times))


def test_import_does_not_pull_in_wandb_or_torch() -> None:
    code = "import sys, aoff; print('wandb' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


#: what ``import aoff`` and a run in process mode leave out of the training process: the
#: pump and what it folds, draws and writes with live in the agent (~0.15 s of imports)
HEAVY = ("numpy", "rich.live", "aoff._pump._pump", "aoff._runfolder.summary._writer", "psutil")


def test_import_and_a_process_mode_run_leave_the_pump_to_the_agent(tmp_path: Path) -> None:
    """The training process imports the pump (and Rich's Live, numpy, the backends) only
    when it runs one: thread mode, or a fallback after a lost agent."""
    code = f"""
import sys, aoff
heavy = {HEAVY!r}
print(*[m for m in heavy if m in sys.modules], "|", end=" ")
log = aoff.OffPolicyLogger(log_dir=sys.argv[1], display="none", handle_sigterm=False)
for i in range(10):
    log.log_step(i, {{"x": 1.0}})
assert log.finish().complete
print(*[m for m in heavy if m in sys.modules], "|", end=" ")
log = aoff.OffPolicyLogger(log_dir=sys.argv[1] + "/t", pump="thread", display="none",
                           handle_sigterm=False)
log.finish()
print(*[m for m in heavy if m in sys.modules])
"""
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    imported, after_run, thread_mode = out.stdout.split("|")
    assert imported.split() == [] and after_run.split() == [], out.stdout
    assert "aoff._pump._pump" in thread_mode.split(), out.stdout


def test_bad_constructor_arguments_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="overflow must be one of"):
        OffPolicyLogger(log_backend="none", overflow="wait", handle_sigterm=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="refresh_per_second"):
        OffPolicyLogger(log_backend="none", refresh_per_second=0, handle_sigterm=False)
    with pytest.raises(ValueError, match="unknown backend 'parquet'"):
        OffPolicyLogger(log_backend="none", backends=("parquet",), handle_sigterm=False)


def test_warnings_filter_is_clean() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = make_logger(MemoryBackend())
        log.log_step(1)
        log.finish()


#: the sync face's public methods, as docs/guides/sync.md documents them
DOCUMENTED_SYNC_API = {
    "alerts", "close", "finish", "flush", "load_state_dict", "log_buffer_fill", "log_collector",
    "log_config", "log_episodes", "log_figure", "log_histogram", "log_image", "log_save",
    "log_status", "log_step", "log_video", "remote", "should_stop",
    "set_collection_sync", "start", "start_training_timer", "state_dict",
    "update_buffer_utilization", "update_collector_timing", "update_done_rates",
    "update_ep_length", "update_replay_queue", "update_staging_pool",
}  # fmt: skip


def test_the_sync_faces_public_names_are_the_documented_api() -> None:
    """``dir(OffPolicyLogger)`` lists what it does: no async-only twins that only raise,
    no undocumented helper; and each name is in the guide's table of calls."""
    public = {n for n in dir(OffPolicyLogger) if not n.startswith("_")}
    assert public == DOCUMENTED_SYNC_API
    assert "__aenter__" not in dir(OffPolicyLogger)
    guide = Path(__file__).resolve().parent.parent / "docs" / "guides" / "sync.md"
    text = guide.read_text()
    for name in sorted(public):
        assert re.search(rf"`{name}\b", text), f"{name} is not in {guide}"


def test_every_recorder_call_builds_its_event_in_the_named_field_order() -> None:
    """``_events.FIELDS`` names each kind's fields once and the fold reads STEP events by
    ``_events.S_*``: each public call's tuple must hold its arguments at those positions."""
    from aoff._core import _events as ev
    from aoff._core._recorder import Recorder

    events: list[ev.Event] = []
    rec: Recorder[None] = Recorder()
    rec._init_recorder(events.append, lambda: 1234.5)
    calls: list[tuple[Callable[[], None], int, dict[str, object]]] = [
        (
            lambda: rec.log_step(
                7,
                {"m": 1.0},
                reward=2.5,
                reward_metrics={"r": 3.0},
                reward_components={"c": 4.0},
                train_time=0.1,
                wait_time=0.2,
                learner_incremental_h2d_time=0.3,
                weight_sync_time=0.4,
                extra_info={"throughput_steps": 99},
            ),
            ev.STEP,
            {
                "iteration": 7,
                "metrics": {"m": 1.0},
                "reward": 2.5,
                "reward_metrics": {"r": 3.0},
                "reward_components": {"c": 4.0},
                "train_time": 0.1,
                "wait_time": 0.2,
                "h2d_time": 0.3,
                "weight_sync_time": 0.4,
                "throughput": 99,
            },
        ),
        (
            lambda: rec.update_collector_timing({"env": 5.0}),
            ev.COLLECTOR_TIMING,
            {"timing_ms": {"env": 5.0}},
        ),
        (
            lambda: rec.update_done_rates(0.1, 0.2),
            ev.DONE_RATES,
            {"timeout_rate": 0.1, "terminated_rate": 0.2},
        ),
        (
            lambda: rec.log_collector(10, 20, -1.5),
            ev.COLLECTOR,
            {"total_steps": 10, "buffer_size": 20, "mean_reward": -1.5},
        ),
        (lambda: rec.log_buffer_fill(3, 9), ev.BUFFER_FILL, {"current": 3, "target": 9}),
        (lambda: rec.update_buffer_utilization(0.5), ev.BUFFER_UTIL, {"utilization": 0.5}),
        (lambda: rec.update_staging_pool(4, 8), ev.STAGING_POOL, {"current_len": 4, "max_size": 8}),
        (
            lambda: rec.set_collection_sync(True, 6),
            ev.COLLECTION_SYNC,
            {"enabled": True, "env_steps_per_sync": 6},
        ),
        (lambda: rec.update_ep_length(200.0), ev.EP_LENGTH, {"length": 200.0}),
        (lambda: rec.log_config({"lr": 0.001}), ev.CONFIG, {"values": {"lr": 0.001}}),
        (lambda: rec.log_status("warming up"), ev.STATUS, {"status": "warming up"}),
        (lambda: rec.log_save("ckpt.pt"), ev.SAVE, {"path": "ckpt.pt"}),
        (lambda: rec.start_training_timer(), ev.TRAINING_TIMER, {}),
        (lambda: rec._start_event("go"), ev.START, {"status": "go"}),
        (
            lambda: rec.log_episodes([1.0, 2.0], [10, 20]),
            ev.EPISODES,
            {"returns": (1.0, 2.0), "lengths": (10, 20)},
        ),
    ]
    for call, kind, fields in calls:
        events.clear()
        call()
        [event] = events
        assert event[ev.KIND] == kind and event[ev.WALL] == 1234.5
        assert len(event) == 2 + len(ev.FIELDS[kind]), ev.name_of(event)
        assert set(fields) == set(ev.FIELDS[kind]), ev.name_of(event)
        for name, value in fields.items():
            assert event[2 + ev.FIELDS[kind].index(name)] == value, (ev.name_of(event), name)
    step_positions = [
        ev.S_ITERATION,
        ev.S_METRICS,
        ev.S_REWARD,
        ev.S_REWARD_METRICS,
        ev.S_COMPONENTS,
        ev.S_TRAIN_TIME,
        ev.S_WAIT_TIME,
        ev.S_H2D_TIME,
        ev.S_WEIGHT_SYNC_TIME,
        ev.S_THROUGHPUT,
    ]
    assert step_positions == [2 + ev.FIELDS[ev.STEP].index(n) for n in ev.FIELDS[ev.STEP]]
