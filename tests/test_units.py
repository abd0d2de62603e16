"""Unit tests of the pure core and of one backend runner, without a logger around them.

* :class:`EventBuffer`: each overflow policy's exact drop count, ``block`` waiting and
  being released, and the closing event that never evicts data;
* :class:`Folder`: events in, the seed's records out; bad values counted, and reported
  once per (argument, key);
* :class:`BackendRunner` on a manual monotonic clock: retries, failure, a stalled write
  (a fake backend awaits an ``anyio.Event``; the clock is advanced, nothing sleeps), and
  ``offered == written + lost`` at every step.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest

from aoff import BackendContext, Overflow, Record, StepRecord
from aoff._core import _events as ev
from aoff._core._buffer import EventBuffer
from aoff._core._fold import Folder
from aoff._core._fold_step import STEP_TAIL
from aoff._core._pending import Placeholder, pending_event, ready_prefix
from aoff._core._records import columns, scalars_of, step_record
from aoff._core._state import State
from aoff._pump._progresswatch import ProgressWatch, unwritten_steps, wait_progressing
from aoff._pump._runner import MAX_BATCH, BackendRunner
from aoff.testing import ManualClock, wait_until

from .faulty import CountingBackend

WAIT = 10.0  # generous bound on a real wait for another thread


def status(i: int) -> ev.Event:
    """A small data event, numbered so tests can tell which ones survived."""
    return (ev.STATUS, float(i), f"s{i}")


def numbers(events: list[ev.Event]) -> list[int]:
    return [int(e[1]) for e in events]


def eventually(condition: Callable[[], bool]) -> None:
    wait_until(condition, timeout=WAIT, interval=0.001)


# -- EventBuffer --------------------------------------------------------------------------------
def test_buffer_rejects_bad_arguments() -> None:
    for capacity in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="capacity must be a positive int"):
            EventBuffer(capacity, "drop_oldest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="overflow must be one of"):
        EventBuffer(10, "wait")  # type: ignore[arg-type]


def test_drop_oldest_never_refuses_and_trim_discards_exactly_the_oldest_excess() -> None:
    buf = EventBuffer(10, "drop_oldest")
    for i in range(25):
        buf.put(status(i))
    assert len(buf) == 25 and buf.full()  # the producer never checks: the bound is soft
    assert buf.dropped == 0 and buf.refused == 0
    assert buf.trim() == 15
    assert buf.trim() == 0  # nothing beyond capacity left
    assert buf.dropped == 15
    assert numbers(buf.drain()) == list(range(15, 25))
    assert buf.drained == 10
    for i in range(25, 37):
        buf.put(status(i))
    assert buf.trim() == 2 and buf.dropped == 17
    assert numbers(buf.drain(limit=4)) == [27, 28, 29, 30]
    assert numbers(buf.drain()) == list(range(31, 37))
    assert buf.drain() == [] and buf.drained == 20


def test_drop_newest_refuses_at_capacity_and_counts_each_refusal() -> None:
    buf = EventBuffer(10, "drop_newest")
    for i in range(25):
        buf.put(status(i))
    assert len(buf) == 10
    assert buf.refused == 15 and buf.dropped == 15
    assert buf.trim() == 0  # trimming is drop_oldest's
    assert numbers(buf.drain(limit=3)) == [0, 1, 2]
    for i in range(25, 30):
        buf.put(status(i))  # 3 fit, 2 are refused
    assert buf.refused == 17 and buf.dropped == 17
    assert numbers(buf.drain()) == [*range(3, 10), 25, 26, 27]


def test_offer_and_trim_out_say_which_events_the_policy_dropped() -> None:
    """What a producer holding bytes for an event (a media budget) needs: ``offer`` says
    whether the put was refused, ``trim_out`` returns what the trim discarded; both
    count like ``put`` and ``trim``."""
    newest = EventBuffer(3, "drop_newest")
    assert [newest.offer(status(i)) for i in range(5)] == [True, True, True, False, False]
    assert newest.refused == 2 and newest.trim_out() == []
    oldest = EventBuffer(3, "drop_oldest")
    assert all(oldest.offer(status(i)) for i in range(8))
    assert numbers(oldest.trim_out(5)) == [0, 1, 2]
    assert numbers(oldest.trim_out()) == [3, 4] and oldest.trim_out() == []
    assert oldest.dropped == 5 and numbers(oldest.drain()) == [5, 6, 7]
    block = EventBuffer(2, "block")
    assert block.offer(status(0)) and len(block) == 1


def test_block_waits_for_space_and_a_drain_releases_it() -> None:
    buf = EventBuffer(2, "block")
    buf.put(status(0))
    buf.put(status(1))
    assert buf.wait_for_space(timeout=0.01) is False  # full, and nobody drains
    done = threading.Event()

    def producer() -> None:
        buf.put(status(2))
        done.set()

    th = threading.Thread(target=producer, daemon=True)
    th.start()
    eventually(lambda: buf._waiters == 1)  # blocked in wait_for_space
    assert not done.is_set() and len(buf) == 2
    assert numbers(buf.drain(limit=1)) == [0]
    assert done.wait(WAIT)
    th.join(WAIT)
    assert numbers(buf.drain()) == [1, 2]
    assert buf.dropped == 0 and buf.trim() == 0


def test_block_is_released_by_close_and_drops_nothing() -> None:
    buf = EventBuffer(1, "block")
    buf.put(status(0))
    done = threading.Event()

    def producer() -> None:
        buf.put(status(1))  # proceeds once the buffer is closed
        done.set()

    th = threading.Thread(target=producer, daemon=True)
    th.start()
    eventually(lambda: buf._waiters == 1)
    assert not done.is_set()
    buf.close()
    assert done.wait(WAIT)
    th.join(WAIT)
    assert buf.wait_for_space() is True  # closed: never waits again
    buf.put(status(2))
    assert numbers(buf.drain()) == [0, 1, 2] and buf.dropped == 0


def test_put_many_blocks_for_room_like_put_and_keeps_the_order() -> None:
    buf = EventBuffer(3, "block")
    buf.put(status(0))
    done = threading.Event()

    def receiver() -> None:
        buf.put_many([status(i) for i in range(1, 7)])
        done.set()

    th = threading.Thread(target=receiver, daemon=True)
    th.start()
    eventually(lambda: buf._waiters == 1)  # took what fit (2), waits for the rest
    assert not done.is_set() and numbers(list(buf.snapshot())) == [0, 1, 2]
    got = numbers(buf.drain(limit=2))
    deadline = time.monotonic() + WAIT
    while (not done.is_set() or len(buf)) and time.monotonic() < deadline:
        assert len(buf) <= 3  # never beyond capacity
        got += numbers(buf.drain(limit=1))
        time.sleep(0.001)  # a poll: the receiver takes each freed place
    th.join(WAIT)
    assert got == list(range(7)) and buf.dropped == 0
    buf.close()  # closed: the rest goes in without waiting, as put does
    buf.put_many([status(i) for i in range(7, 12)])
    assert numbers(buf.drain()) == [7, 8, 9, 10, 11]


@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest"])
def test_put_many_is_put_one_by_one(overflow: Overflow) -> None:
    one, many = EventBuffer(4, overflow), EventBuffer(4, overflow)
    events = [status(i) for i in range(7)]
    for e in events:
        one.put(e)
    many.put_many(events)
    assert one.trim() == many.trim() and one.dropped == many.dropped
    assert numbers(one.drain()) == numbers(many.drain())


@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest", "block"])
def test_append_final_never_evicts_data_when_exactly_capacity_is_buffered(
    overflow: Overflow,
) -> None:
    buf = EventBuffer(3, overflow)
    for i in range(3):
        buf.put(status(i))
    final = ev.finish_event(99.0, "Training Summary", "", False)
    buf.append_final(final)  # never refused, never blocks
    assert buf.trim() == 0
    assert buf.dropped == 0
    assert buf.drain() == [status(0), status(1), status(2), final]


def test_append_final_under_drop_oldest_trims_only_data_beyond_capacity() -> None:
    buf = EventBuffer(3, "drop_oldest")
    for i in range(5):
        buf.put(status(i))
    final = ev.finish_event(99.0, "Training Summary", "", True)
    buf.append_final(final)
    assert buf.trim() == 2 and buf.dropped == 2
    assert buf.drain() == [status(2), status(3), status(4), final]


def test_dropped_is_exact_across_trims_and_refusals() -> None:
    """Rounds of bursts and partial drains: every event is drained, dropped or still
    buffered, never two of these and never none."""
    oldest = EventBuffer(100, "drop_oldest")
    newest = EventBuffer(100, "drop_newest")
    total_trimmed = 0
    for rnd in range(20):
        for i in range(37 * rnd):
            oldest.put(status(i))
            newest.put(status(i))
        total_trimmed += oldest.trim()
        assert oldest.dropped == total_trimmed
        assert len(oldest) <= 100 and len(newest) <= 100
        oldest.drain(limit=50)
        newest.drain(limit=50)
    produced = sum(37 * rnd for rnd in range(20))
    assert oldest.dropped + oldest.drained + len(oldest) == produced
    assert newest.dropped + newest.drained + len(newest) == produced
    assert newest.dropped == newest.refused > 0 and oldest.dropped > 0


# -- Folder ----------------------------------------------------------------------------------
def step_event(
    iteration: object,
    metrics: object = None,
    reward: object = None,
    *,
    wall: float = 100.0,
    reward_metrics: object = None,
    components: object = None,
    train_time: object = 0.0,
    wait_time: object = 0.0,
    throughput: object = None,
) -> ev.Event:
    return (
        ev.STEP,
        wall,
        iteration,
        metrics,
        reward,
        reward_metrics,
        components,
        train_time,
        wait_time,
        0.0,  # h2d_time
        0.0,  # weight_sync_time
        throughput,
    )


def test_the_folds_records_are_plain_records() -> None:
    """``step_record`` makes what ``StepRecord(...)`` makes, and ``Scalars`` is the same
    tuple of pairs to every reader (equal, hashed, pickled, replaced), keeping its
    columns; ``columns`` splits any other tuple of pairs."""
    pairs = (("a", 1.0), ("b/c", 2.5))
    scalars = scalars_of(("a", "b/c"), (1.0, 2.5))
    assert scalars == pairs and hash(scalars) == hash(pairs) and repr(scalars) == repr(pairs)
    assert isinstance(scalars, tuple) and list(scalars) == list(pairs)
    assert columns(scalars) == (("a", "b/c"), (1.0, 2.5)) == columns(pairs)
    rec = step_record(4096, 1, 2.0, scalars)
    assert rec == StepRecord(4096, 1, 2.0, pairs) and repr(rec) == repr(
        StepRecord(4096, 1, 2.0, pairs)
    )
    back = pickle.loads(pickle.dumps(rec))
    assert back == rec and columns(back.scalars) == columns(scalars)
    other = dataclasses.replace(rec, producer="p")
    assert other.scalars is scalars and other.producer == "p" and other.step == 4096
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.step = 1  # type: ignore[misc]


def test_fold_turns_events_into_the_seed_record() -> None:
    folder = Folder(State())
    assert folder.apply((ev.START, 10.0, "Warming up...")) is None
    assert folder.apply((ev.COLLECTOR_TIMING, 11.0, {"env_ms": 3.0})) is None
    assert folder.apply((ev.DONE_RATES, 12.0, 0.25, 0.5)) is None
    assert folder.apply((ev.COLLECTOR, 13.0, 8192, 1000, 1.5)) is None
    assert folder.apply((ev.EP_LENGTH, 14.0, 200.0)) is None
    rec = folder.apply(
        step_event(
            3,
            {"critic_loss": 0.5, "loss/actor": -1.0},
            2.0,
            wall=15.0,
            components={"speed": 0.25},
            train_time=0.002,
            wait_time=0.001,
            throughput=4096,
        )
    )
    assert rec == StepRecord(
        step=8192,  # total_steps once known, else the iteration
        iteration=3,
        wall_time=15.0,
        scalars=(
            ("axis/iteration", 3.0),
            ("axis/env_steps_total", 8192.0),
            ("train/critic_loss", 0.5),
            ("loss/actor", -1.0),
            ("reward/mean", 2.0),
            ("reward/speed", 0.25),
            ("episode/length", 200.0),
            ("episode/timeout_rate", 0.25),
            ("episode/terminated_rate", 0.5),
            ("timing/learner_wait_ms", 1.0),
            ("timing/learner_incremental_h2d_ms", 0.0),
            ("timing/learner_train_ms", 2.0),
            ("timing/learner_weight_sync_ms", 0.0),
            ("timing/collector_env_ms", 3.0),
            ("perf/steps_per_sec", 4096 / 0.002),
            ("perf/iter_ms", 2.0),
        ),
    )
    s = folder.state
    assert s.started and s.start_time == 10.0 and s.last_wall_time == 15.0
    assert (s.iteration, s.total_steps, s.buffer_size, s.steps_logged) == (3, 8192, 1000, 1)
    # one point per iteration: the step's reward took the place of the collector's mean
    assert list(s.reward_history) == [2.0]
    assert s.latest_metrics == {"critic_loss": 0.5, "loss/actor": -1.0}
    assert s.status == "Training" and s.invalid_values == 0
    assert folder.apply(ev.finish_event(16.0, "Done", "extra", True)) is None
    assert s.finished and s.interrupted and s.finish_title == "Done"


def test_fold_step_before_any_collector_uses_the_iteration_as_step() -> None:
    folder = Folder(State())
    rec = folder.apply(step_event(7))
    assert rec is not None and (rec.step, rec.iteration) == (7, 7)
    assert [t for t, _ in rec.scalars][:2] == ["axis/iteration", "axis/env_steps_total"]
    assert "reward/mean" not in rec.as_dict()


def test_every_event_kind_has_one_handler_in_the_fold_but_the_encoders() -> None:
    """The fold's table names each kind once; a kind added to ``_events.KINDS`` without a
    handler fails here (media are the encoder's, never the fold's)."""
    handled = set(Folder(State())._handlers)
    assert set(ev.KINDS) - handled == {ev.MEDIA, ev.MEDIA_REFUSED}
    assert handled <= set(ev.KINDS)
    # a block's step markers fold as nothing, wherever they reach the fold
    folder = Folder(State())
    assert folder.apply((ev.FOLDED,)) is None and not folder.state.started
    assert ev.name_of((ev.COST, 0.0)) == "the logger's cost"
    assert ev.name_of((ev.MEDIA, 0.0, "k", None, "video")) == "log_video"
    assert ev.name_of((99, 0.0)) == "99"


def test_the_fold_stamps_the_dropped_total_it_is_handed() -> None:
    s = State()
    folder = Folder(s)
    s.dropped_events = 5  # a count written into the state is not the fold's to stamp
    rec = folder.apply(step_event(1))
    assert rec is not None and "aoff/dropped_events" not in rec.as_dict()
    folder.dropped(12)
    assert s.dropped_events == 12  # the dashboard shows it
    rec = folder.apply(step_event(2))
    assert rec is not None and rec.as_dict()["aoff/dropped_events"] == 12.0


def test_fold_counts_every_bad_value_and_reports_each_argument_key_pair_once() -> None:
    lines: list[str] = []
    folder = Folder(State(), lines.append)
    for i in range(3):
        rec = folder.apply(
            step_event(
                i,
                {"loss": 0.5, "name": "run", 1: 2.0, "nan": math.nan},
                "high",
                reward_metrics={"name": None},
            )
        )
        assert rec is not None
        d = rec.as_dict()
        assert d["train/loss"] == 0.5 and math.isnan(d["train/nan"])  # the rest is kept
        assert "train/name" not in d and "reward/mean" not in d and "reward/name" not in d
    # per step: metrics 'name', metrics key 1, the reward, reward_metrics 'name'
    assert folder.state.invalid_values == 4 * 3
    assert len(lines) == 4, lines
    assert sum("'name'" in m and "log_step(metrics)" in m for m in lines) == 1
    assert sum("'name'" in m and "log_step(reward_metrics)" in m for m in lines) == 1
    assert sum("key 1 is int, not str" in m for m in lines) == 1
    assert sum("'reward'" in m for m in lines) == 1
    # a bad value outside log_step: counted, reported once, replaced by its default
    assert folder.apply((ev.DONE_RATES, 1.0, "x", 0.5)) is None
    assert folder.apply((ev.DONE_RATES, 2.0, "x", 0.5)) is None
    assert folder.state.timeout_rate == 0.0 and folder.state.terminated_rate == 0.5
    assert folder.state.invalid_values == 4 * 3 + 2 and len(lines) == 5


def test_fold_never_raises_for_a_non_dict_argument() -> None:
    lines: list[str] = []
    folder = Folder(State(), lines.append)
    rec = folder.apply(step_event(1, [("loss", 1.0)]))
    assert rec is not None and not any(t.startswith("train/") for t, _ in rec.scalars)
    assert folder.state.invalid_values == 1
    assert lines == ["log_step(metrics): expected a dict, got list; ignored"]


def test_fold_checks_every_dict_even_when_its_keys_were_seen_clean() -> None:
    """The fold skips the key checks of a key sequence it has seen clean (its tags are
    cached); a dict with those keys whose values are not all floats, or a legacy alias
    beside its canonical key, or a bad key among good ones, is still checked."""
    lines: list[str] = []
    folder = Folder(State(), lines.append)
    calls: list[tuple[dict[Any, Any], dict[str, float]]] = [
        ({"q": 1.0, "loss/x": 2.0}, {"train/q": 1.0, "loss/x": 2.0}),  # clean: cached
        ({"q": "bad", "loss/x": 2.0}, {"loss/x": 2.0}),  # same keys, a bad value
        ({"q": 3, "loss/x": True}, {"train/q": 3.0, "loss/x": 1.0}),  # converted
        ({"q": 1.0, 5: 2.0}, {"train/q": 1.0}),  # a bad key beside a good one
        ({"q": 4.0}, {"train/q": 4.0}),  # the cleaned keys of the call before, clean
        ({"entropy": 1.0, "policy/entropy": 2.0}, {"policy/entropy": 2.0}),  # an alias
        ({"entropy": 1.0, "policy/entropy": 2.0}, {"policy/entropy": 2.0}),  # again
        ({"policy/entropy": 5.0}, {"policy/entropy": 5.0}),
        ({"entropy": 6.0}, {"train/entropy": 6.0}),  # alone, the legacy key is kept
        ({"q": 1.0, "loss/x": 2.0}, {"train/q": 1.0, "loss/x": 2.0}),
    ]
    for i, (metrics, want) in enumerate(calls):
        # twice each, the second with the fold's caches warm
        for _ in range(2):
            rec = folder.apply(step_event(i, metrics, components=metrics))
            assert rec is not None
            got = {t: v for t, v in rec.scalars if t.startswith(("train/", "loss/", "policy/"))}
            assert got == want, (i, metrics)
            components = {t: v for t, v in rec.scalars if t.startswith("reward/")}
            # components: the same checks, no aliases, reward/ spelling
            assert set(components) == {
                "reward/" + k for k in metrics if type(k) is str and type(metrics[k]) is not str
            }, (i, metrics)
    # per pass: call 1's 'q' twice (metrics, components), call 3's key 5 twice
    assert folder.state.invalid_values == 2 * 4
    # collector timings share the check: a bad value among seen keys is still skipped
    for timing in ({"env": 1.0}, {"env": "x"}, {"env": 2.0}):
        folder.apply((ev.COLLECTOR_TIMING, 1.0, timing))
    assert folder.state.collector_timing == {"env": 2.0}
    assert folder.state.invalid_values == 2 * 4 + 1


# -- BackendRunner -----------------------------------------------------------------------------
def step_records(start: int, n: int) -> list[StepRecord]:
    return [
        StepRecord(i, i, float(i), (("axis/iteration", float(i)),)) for i in range(start, start + n)
    ]


def accounted(r: BackendRunner) -> bool:
    """The invariant at the end of a run: every record offered was written or lost."""
    return r.offered == r.written + r.lost


def accounted_mid_run(r: BackendRunner) -> bool:
    """At any moment: written, lost, waiting in the outbox, or in the write in flight."""
    return r.offered == r.written + r.lost + len(r.pending) + r.in_flight


class FlakyBackend(CountingBackend):
    """``write`` raises for its first ``failures`` calls (every call when None)."""

    def __init__(self, failures: int | None) -> None:
        super().__init__("flaky")
        self.failures = failures
        self.attempts = 0

    async def write(self, records: Sequence[Record]) -> None:
        self.attempts += 1
        if self.failures is None or self.attempts <= self.failures:
            raise OSError(28, "No space left on device")
        await super().write(records)


class HangingBackend(CountingBackend):
    """``write`` waits for :attr:`release`; :attr:`entered` is set once one is waiting."""

    def __init__(self) -> None:
        super().__init__("hanging")
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def write(self, records: Sequence[Record]) -> None:
        self.entered.set()
        await self.release.wait()
        await super().write(records)


def make_runner(
    backend: CountingBackend, clock: ManualClock, **kw: Any
) -> tuple[BackendRunner, list[str]]:
    lines: list[str] = []
    runner = BackendRunner(backend, say=lines.append, monotonic=clock, retry_backoff=0.0, **kw)
    return runner, lines


@pytest.mark.anyio
async def test_runner_retries_then_fails_and_counts_everything_as_lost() -> None:
    backend = FlakyBackend(failures=None)
    runner, lines = make_runner(backend, ManualClock(), retries=2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.run, BackendContext())
        runner.offer(step_records(0, 5))
        with anyio.fail_after(WAIT):
            await runner.done.wait()
    assert backend.attempts == 3  # the write, then two retries
    assert runner.status == "failed" and not runner.healthy
    assert runner.error == "write failed: OSError: [Errno 28] No space left on device"
    assert (runner.offered, runner.written, runner.lost) == (5, 0, 5)
    assert lines == [
        "aoff: backend 'flaky' disabled after error: "
        "write failed: OSError: [Errno 28] No space left on device"
    ]
    assert backend.closed == 1  # closed once, quietly
    runner.offer(step_records(5, 3))  # after the failure: counted as lost at once
    assert (runner.offered, runner.lost) == (8, 8) and accounted(runner)
    assert runner.request_flush().is_set()  # nothing to wait for


@pytest.mark.anyio
async def test_a_backlog_is_written_in_order_in_batches_of_at_most_max_batch() -> None:
    """An outbox longer than ``MAX_BATCH`` (a flat-out loop's backlog) is written a full
    batch at a time, in order, the last batch what is left."""
    backend = CountingBackend()
    runner, lines = make_runner(backend, ManualClock())
    n = 2 * MAX_BATCH + 452
    runner.offer(step_records(0, n))  # all waiting before the runner starts
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.run, BackendContext())
        with anyio.fail_after(WAIT):
            await runner.request_flush().wait()
        runner.close_input()
    assert backend.iterations == list(range(n)) and backend.writes == 3
    assert (runner.offered, runner.written, runner.lost) == (n, n, 0) and lines == []


@pytest.mark.anyio
async def test_runner_retries_a_transient_error_and_loses_nothing() -> None:
    backend = FlakyBackend(failures=2)
    runner, lines = make_runner(backend, ManualClock(), retries=2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.run, BackendContext())
        runner.offer(step_records(0, 5))
        with anyio.fail_after(WAIT):
            await runner.request_flush().wait()
        assert backend.iterations == list(range(5)) and backend.attempts == 3
        runner.close_input()
    assert runner.status == "closed" and backend.closed == 1
    assert (runner.offered, runner.written, runner.lost) == (5, 5, 0)
    assert lines == []


@pytest.mark.anyio
async def test_a_stalled_write_stops_holding_back_after_stall_timeout() -> None:
    clock = ManualClock()
    backend = HangingBackend()
    runner, lines = make_runner(backend, clock, max_pending=4, stall_timeout=10.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.run, BackendContext())
        runner.offer(step_records(0, 1))
        with anyio.fail_after(WAIT):
            await backend.entered.wait()  # record 0 is in flight, and hangs
        assert runner.in_flight == 1 and not runner.holds_back()
        runner.offer(step_records(1, 4))  # the outbox is full: the pump must wait...
        assert runner.holds_back() and not runner.stalled() and accounted_mid_run(runner)
        clock.advance(10.0)  # ...for stall_timeout, not a moment less
        assert runner.holds_back() and lines == []
        clock.advance(0.001)
        assert not runner.holds_back() and runner.stalled()
        assert lines == [
            "aoff: backend 'hanging': write has not returned for 10s; training goes on, "
            "and this backend keeps only its newest 4 records until it answers"
        ]
        assert runner.stalled() and len(lines) == 1  # reported once
        runner.offer(step_records(5, 3))  # stalled: the outbox keeps the newest 4
        assert [r.iteration for r in runner.pending] == [4, 5, 6, 7]
        assert (runner.offered, runner.lost) == (8, 3)
        assert runner.healthy and accounted_mid_run(runner)
        backend.release.set()  # the write returns: the runner carries on
        with anyio.fail_after(WAIT):
            await runner.request_flush().wait()
        assert not runner.stalled()
        runner.close_input()
    assert backend.iterations == [0, 4, 5, 6, 7]
    assert runner.status == "closed"
    assert (runner.offered, runner.written, runner.lost) == (8, 5, 3) and accounted(runner)
    assert len(lines) == 1


@pytest.mark.anyio
async def test_a_runner_abandoned_mid_write_counts_the_write_and_outbox_as_lost() -> None:
    clock = ManualClock()
    backend = HangingBackend()
    runner, _ = make_runner(backend, clock, max_pending=4, stall_timeout=10.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.run, BackendContext())
        runner.offer(step_records(0, 3))
        with anyio.fail_after(WAIT):
            await backend.entered.wait()
        runner.offer(step_records(3, 2))
        assert (runner.in_flight, len(runner.pending)) == (3, 2) and accounted_mid_run(runner)
        tg.cancel_scope.cancel()  # finish gave up on it
    backend.release.set()
    assert runner.done.is_set() and runner.status == "failed"
    assert runner.error == "timed out at finish"
    assert (runner.offered, runner.written, runner.lost) == (5, 0, 5) and accounted(runner)
    assert backend.iterations == [] and backend.closed == 1


@pytest.mark.anyio
async def test_a_failed_open_is_not_retried() -> None:
    class NoOpen(CountingBackend):
        async def open(self, ctx: BackendContext) -> None:
            raise PermissionError(13, "Permission denied")

    backend = NoOpen("ro")
    runner, lines = make_runner(backend, ManualClock(), retries=5)
    runner.offer(step_records(0, 2))  # offered before the open fails
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner.run, BackendContext())
    assert runner.status == "failed" and runner.done.is_set()
    assert (runner.offered, runner.written, runner.lost) == (2, 0, 2)
    assert len(lines) == 1 and "open failed: PermissionError" in lines[0]


# -- ready_prefix (a shipper's drained events) -------------------------------------------
class _Slot(Placeholder):
    def __init__(self, state: str, value: float = 0.0) -> None:
        self.state, self._value = state, value

    def ready(self) -> bool:
        if self.state == "broken":
            raise RuntimeError("the device is gone")
        return self.state == "ready"

    def value(self) -> float:
        return self._value


def test_ready_prefix_keeps_order_resolves_and_counts_the_unresolvable() -> None:
    plain = [(ev.STEP, 1.0, 1), (ev.STEP, 2.0, 2)]
    said: list[str] = []
    got, held, lost = ready_prefix(plain, said.append)
    assert got == plain and held == [] and lost == 0
    done = pending_event((ev.STEP, 3.0, 3, {"loss": _Slot("ready", 0.5)}))
    broken = pending_event((ev.STEP, 4.0, 4, {"loss": _Slot("broken")}))
    waiting = pending_event((ev.STEP, 5.0, 5, {"loss": _Slot("waiting")}))
    after = (ev.STEP, 6.0, 6)
    got, held, lost = ready_prefix([*plain, done, broken, waiting, after], said.append)
    assert got == [*plain, (ev.STEP, 3.0, 3, {"loss": 0.5})]
    assert held == [waiting, after]  # nothing overtakes the event still waiting
    assert lost == 1
    # the unreadable value is said, as the pump's fold says it, not swallowed
    assert said == ["aoff: could not read device values: RuntimeError: the device is gone"]


# -- waiting on a pump, and the steps not written (PumpThread and AgentSide share them) -------
def test_wait_progressing_waits_while_the_counts_move_and_gives_up_once_they_stop() -> None:
    count = [0]
    pauses = [0]

    def pause() -> None:  # each pause is progress until the 50th
        pauses[0] += 1
        if pauses[0] < 50:
            count[0] += 1

    idle = ProgressWatch(lambda: count[0], timeout=0.05)
    assert not wait_progressing(lambda: False, idle, pause)
    assert pauses[0] >= 50  # it never gave up while the count still moved
    done = ProgressWatch(lambda: 0, timeout=3600.0)
    assert wait_progressing(lambda: pauses[0] >= 60, done, pause)


def test_unwritten_steps_adds_the_waiting_steps_to_every_backend_still_taking_them() -> None:
    waiting = [(ev.STEP, 1.0, 1), status(2), (ev.STEP, 3.0, 3)]
    behind = {"tensorboard": 5, "jsonl": 0, "wandb": 7}
    got = unwritten_steps(behind, waiting, failed={"wandb"})
    assert got == {"tensorboard": 7, "jsonl": 2, "wandb": 7}
    assert unwritten_steps(behind, []) == behind


def test_the_run_starts_with_its_first_call_not_with_start() -> None:
    state = State()
    folder = Folder(state)
    saved = {"elapsed_seconds": 3.0, "reward_history": [], "dropped_events": 0}
    saved.update(reward_last=None, reward_best=None)
    folder.apply((ev.LOAD_STATE, 1.0, saved))  # restoring counters: not a start
    assert not state.started
    folder.apply(step_event(1, {"loss": 0.5}, wall=5.0))
    assert state.started and state.start_time == 5.0
    folder.apply((ev.START, 9.0, "Warming up..."))  # a later start() only sets the status
    assert state.start_time == 5.0 and state.status == "Warming up..."


def test_without_seed_tags_a_step_has_only_what_its_calls_carried() -> None:
    tail = {"episode/timeout_rate", "episode/terminated_rate", "perf/iter_ms"}
    learner = {t for t in STEP_TAIL if t.startswith("timing/")}
    seed = Folder(State())
    rec = seed.apply(step_event(1, {"loss": 0.5}, wall=1.0))
    assert rec is not None and tail | learner <= {t for t, _ in rec.scalars}  # parity
    folder = Folder(State(), seed_tags=False)
    rec = folder.apply(step_event(1, {"loss": 0.5}, wall=1.0))
    assert rec is not None
    assert [t for t, _ in rec.scalars] == ["axis/iteration", "axis/env_steps_total", "train/loss"]
    folder.apply((ev.DONE_RATES, 2.0, 0.25, 0.5))
    rec = folder.apply(step_event(2, {"loss": 0.5}, wall=2.0, train_time=0.002))
    assert rec is not None
    got = dict(rec.scalars)
    assert got["episode/timeout_rate"] == 0.25 and got["timing/learner_train_ms"] == 2.0
    assert tail | learner <= set(got)


def test_the_reward_history_has_one_point_per_iteration() -> None:
    state = State()
    folder = Folder(state)
    folder.apply((ev.COLLECTOR, 1.0, 64, 64, 1.5))
    folder.apply(step_event(1))  # no reward of its own: the collector's stays
    folder.apply((ev.COLLECTOR, 2.0, 128, 128, 2.5))
    folder.apply(step_event(2, reward=3.0))  # the README's loop: both, one point
    folder.apply(step_event(3, reward=4.0))  # the step's alone
    folder.apply((ev.COLLECTOR, 3.0, 192, 192, 5.0))
    folder.apply((ev.COLLECTOR, 3.5, 256, 256, 6.0))  # no step between: two points
    assert list(state.reward_history) == [1.5, 3.0, 4.0, 5.0, 6.0]


def test_the_charted_loss_has_one_point_per_step_as_the_reward() -> None:
    state = State()
    folder = Folder(state)
    for i in range(1, 4):
        folder.apply(step_event(i, {"q1_loss": float(i), "actor_loss": -float(i)}, -1.0))
    folder.apply(step_event(4, {"alpha": 0.1}, -1.0))  # no loss: no point
    assert state.loss_name == "actor_loss" and list(state.loss_history) == [-1.0, -2.0, -3.0]
    assert len(state.reward_history) == 4  # the same x axis: steps
    folder.apply(step_event(5, {"q1_loss": 5.0}))  # the charted loss is gone: the next
    assert state.loss_name == "q1_loss" and list(state.loss_history) == [5.0]
