"""The agent's reader of plain ``log_step`` pickles as columns (``_transport/_plainsteps``):
the same records, files and state as the same frames unpickled, on adversarial input;
as many events as the sender counted; only what matches a template read as columns."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoff._core import _events as ev
from aoff._core import _fold_columns
from aoff._pump._backlog import Backlog
from aoff._transport._batches import pack_events, unpack_events
from aoff._transport._plainsteps import MIN_STEPS, PlainSteps

from .conftest import read_tensorboard
from .test_fold_columns import FIELDS, FLOATS, KEYS, fold, same

NAN_PAYLOAD = struct.unpack(">d", bytes.fromhex("7ff8000000000abc"))[0]
VALUES = st.one_of(FLOATS, st.sampled_from([NAN_PAYLOAD, -NAN_PAYLOAD, 5e-324]))
#: iterations where pickle's integer opcodes change width (BININT1, BININT2, BININT, LONG1)
EDGES = [0, 250, 65_530, 2**31 - 6, 2**40]


def plain(i: int, wall: float, metrics: dict[str, Any]) -> ev.Event:
    return (ev.STEP, wall, i, metrics, None, None, None, 0.0, 0.0, 0.0, 0.0, None)


def same_files(tmp_path: Path, steps: int) -> None:
    """The runs in ``tmp_path``'s ``process`` and ``thread`` folders wrote the same
    TensorBoard scalars and JSONL lines (wall times aside), ``steps`` of each."""
    a, b = (read_tensorboard(tmp_path / n) for n in ("process", "thread"))
    assert a == b and len(a["axis/iteration"]) == steps
    lines = []
    for name in ("process", "thread"):
        rows = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        lines.append([re.sub(r'"wall_time":[^,]*,', "", row) for row in rows])
    assert lines[0] == lines[1] and len(lines[0]) == steps


def read_twice_and_fold(events: list[ev.Event], payloads: list[bytes]) -> None:
    """``payloads`` read once (the templates learned from the first frames), then again:
    the events the blocks stand for are ``events``, counted as the sender counted them,
    and folded they give what ``events`` give event by event (``test_fold_columns.same``)."""
    reader = PlainSteps()
    read(reader, payloads)
    got = read(reader, payloads)
    assert list(map(norm, expand(got))) == list(map(norm, events))
    assert ev.calls_in(got) == len(events)
    assert ev.steps_in(got) == ev.steps_in(events)
    same(events, [e for e in got if e[0] != ev.FOLDED])
    # as the intake folds them: the blocks of consecutive frames joined (_core/_blockjoin)
    same(events, got)


def sent(events: list[ev.Event], size: Callable[[], int], draw: st.DrawFn) -> list[bytes]:
    """``events`` as the training process sends them: cut into slices of ``size()`` events,
    each pickled by itself, 1-4 slices joined into a frame (empty slices left out)."""
    out: list[bytes] = []
    at = 0
    while at < len(events):
        parts = []
        for _ in range(draw(st.integers(1, 4))):
            n = size()
            parts.append(pack_events(events[at : at + n]))
            at += n
        frame = b"".join(p for p in parts if p != pack_events([]))
        if frame:
            out.append(frame)
    return out


@st.composite
def frames(draw: st.DrawFn) -> tuple[list[ev.Event], list[bytes]]:
    """A loop of plain ``log_step`` calls (now and then: another key order or keys, an
    int, a reward, a time, ``-0.0`` for a time, another kind of event between steps),
    iterations across the integer opcodes' widths, cut into slices pickled one by one
    and joined into frames, as the training process sends them."""
    keys = [tuple(draw(st.lists(KEYS, min_size=1, max_size=4, unique=True))) for _ in range(2)]
    it = draw(st.sampled_from(EDGES))
    wall = 1.7e9
    events: list[ev.Event] = []
    names = keys[0]
    for _ in range(draw(st.integers(0, 160))):
        wall += 0.5
        it += 1
        if draw(st.integers(0, 40)) == 0:  # the loop's keys change now and then
            names = keys[names == keys[0]]
        metrics: dict[str, Any] = {k: draw(VALUES) for k in names}
        e = list(plain(it, wall, metrics))
        odd = draw(st.integers(0, 100))
        if odd == 0:
            metrics[names[0]] = 3  # an int: the per-event fold converts it
        elif odd == 1:
            e[3] = dict(reversed(metrics.items()))
        elif odd == 2:
            e[4] = 1.5  # a reward
        elif odd == 3:
            e[7] = draw(st.sampled_from([0.004, -0.0]))  # a train time, or -0.0
        elif odd == 4:
            events.append((ev.DONE_RATES, wall, 0.01, 0.002))
        elif odd == 5:
            e[9] = math.nan
        events.append(tuple(e))
    return events, sent(events, lambda: draw(st.sampled_from([1, 8, 9, 16, 32])), draw)


def read(reader: PlainSteps, payloads: list[bytes]) -> list[ev.Event]:
    got: list[ev.Event] = []
    for p in payloads:
        part = reader.unpack(p)
        assert len(part) == len(unpack_events(p))  # as many events as the sender counted
        got += part
    return got


def norm(x: object) -> object:
    """``x`` with each float as its bits (NaN payloads and -0.0 told apart)."""
    if type(x) is float:
        return struct.pack(">d", x)
    if type(x) is tuple:
        return tuple(map(norm, x))
    if type(x) is dict:
        return [(k, norm(v)) for k, v in x.items()]
    return (type(x).__name__, x)


def expand(events: list[ev.Event]) -> list[ev.Event]:
    """The steps (or events) a block stands for, as the events they were."""
    out: list[ev.Event] = []
    for e in events:
        if e[0] == ev.RUN_BLOCK:
            out += e[2].events()
        elif e[0] == ev.STEP_BLOCK:
            _, _, walls, its, names, values = e
            for w, i, row in zip(walls, its.tolist(), values.tolist(), strict=True):
                out.append(plain(i, w, dict(zip(names, row, strict=True))))
        elif e[0] != ev.FOLDED:
            out.append(e)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_frames_read_as_columns_fold_as_their_events_do(drawn: Any) -> None:
    """Bit for bit: the events a block stands for are the pickles' events; folded, the
    blocks give the per-event fold's records, TensorBoard and JSONL bytes, rules, run
    summary, CSV and dashboard state (``test_fold_columns.same``)."""
    read_twice_and_fold(*drawn)


def steps(n: int, start: int = 1000, names: tuple[str, ...] = ("loss", "lr")) -> list[ev.Event]:
    return [
        plain(i, 1.7e9 + i, {k: 0.5 + i + j for j, k in enumerate(names)})
        for i in range(start, start + n)
    ]


def test_only_pickles_like_a_template_are_read_as_columns() -> None:
    """The first pickle of a shape is unpickled (and makes the template); the next ones
    of that shape are one block; a pickle of another shape, or of fewer than
    ``MIN_STEPS``, is unpickled."""
    reader = PlainSteps()
    first = pack_events(steps(32))
    got = reader.unpack(first)
    assert [e[0] for e in got] == [ev.STEP] * 32 and reader.read == 0
    more = b"".join(pack_events(steps(32, 1032 + 32 * k)) for k in range(3))
    got = reader.unpack(more)
    assert got[0][0] == ev.STEP_BLOCK and len(got[0][2]) == 96
    assert [e[0] for e in got[1:]] == [ev.FOLDED] * 95 and reader.read == 96
    other = pack_events(steps(32, 2000, ("loss", "q")))  # other keys: unpickled
    short = pack_events(steps(MIN_STEPS - 1, 3000))
    got = reader.unpack(other + short + pack_events(steps(32, 4000)))
    assert [e[0] for e in got[: 32 + MIN_STEPS - 1]] == [ev.STEP] * (32 + MIN_STEPS - 1)
    assert got[32 + MIN_STEPS - 1][0] == ev.STEP_BLOCK
    assert len(got) == 32 + MIN_STEPS - 1 + 32


def test_the_backlog_counts_a_block_as_its_steps() -> None:
    """A frame read as a block still holds as many events as its sender counted: the
    drain's limits, ``len`` and ``drained`` are the same as unpickled."""
    buf = Backlog(10**7)
    buf.read_plain_steps()
    buf.put_frame(pack_events(steps(32)), 32)
    payload = b"".join(pack_events(steps(32, 1032 + 32 * k)) for k in range(4))
    buf.put_frame(payload, 128)
    assert len(buf) == 160
    a = buf.drain(50)
    b = buf.drain(100)
    c = buf.drain()
    assert (len(a), len(b), len(c), len(buf), buf.drained) == (50, 100, 10, 0, 160)
    assert ev.calls_in(a + b + c) == 160 and ev.steps_in(a + b + c) == 160


def test_a_process_run_writes_what_a_thread_run_writes(tmp_path: Path) -> None:
    """Through the agent (its frames read as columns) and in thread mode (events, never
    pickled): plain ``log_step`` calls with an int, a key added now and then and a step
    with a train time write the same TensorBoard scalars and JSONL rows, wall times
    aside (NaN: the Hypothesis test above; its alert's line lands where the rules'
    timing puts it, either way)."""
    import aoff

    def run(folder: Path, pump: str) -> None:
        log = aoff.OffPolicyLogger(log_dir=folder, pump=pump, display="none",
                                   backends=("jsonl",), system_interval=0)  # fmt: skip
        for i in range(3000):
            metrics: dict[str, Any] = {"q_loss": 0.5 / (i + 1), "lr": 3e-4}
            if i % 500 == 499:
                metrics["eval/return"] = float(i)
            if i == 2345:
                metrics["lr"] = 3
            log.log_step(i, metrics, train_time=0.004 if i == 777 else 0.0)
        log.finish()

    run(tmp_path / "process", "process")
    run(tmp_path / "thread", "thread")
    same_files(tmp_path, 3000)


#: int payloads where pickle's opcodes change width (BININT1, BININT2, BININT, LONG1)
INT_EDGES = [0, 200, 255, 256, 65_535, 65_536, 2**31 - 1, 2**31, -1, -(2**31), -(2**31) - 1]


@st.composite
def iteration_frames(draw: st.DrawFn) -> tuple[list[ev.Event], list[bytes]]:
    """A loop of the standard iteration (collector timings, done rates, a collector, a
    step with a reward, components, times and ``extra_info``) whose shape changes now
    and then (a reward or none, the keys, the timing dict's keys, components, a call
    left out, ``extra_info`` or none), with NaN of every sign and payload, ±inf, ``-0.0``,
    ints across the opcodes' widths, a collector's reward of 0 or NaN, and other events
    between; cut into slices (mostly of one size, so pickles repeat) pickled one by one
    and joined into frames, as the training process sends them."""
    keys = [tuple(draw(st.lists(KEYS, min_size=1, max_size=3, unique=True))) for _ in range(2)]
    timings = [("env_ms", "replay_ms"), ("replay_ms", "env_ms"), ("env_ms",)]
    it = draw(st.sampled_from(EDGES))
    total = draw(st.sampled_from(INT_EDGES))
    wall = 1.7e9

    def shape() -> tuple[Any, ...]:
        return (
            draw(st.sampled_from(keys)),
            draw(st.booleans()),  # a reward
            draw(st.sampled_from([None, ("forward",), ("forward", "ctrl")])),
            draw(st.sampled_from(timings)),
            draw(st.sampled_from([None, 4096, 0, -5, 2**40])),  # extra_info
            draw(st.sampled_from(["all", "all", "no timing", "no done", "no collector"])),
            draw(st.sampled_from(INT_EDGES)),  # the buffer's size
        )

    now = shape()
    events: list[ev.Event] = []
    for _ in range(draw(st.integers(0, 160))):
        if draw(st.integers(0, 40)) == 0:
            now = shape()
        names, with_reward, comps, timing, extra, calls, size = now
        wall += 0.5
        it += 1
        total += 4096 if draw(st.integers(0, 3)) else 0
        if calls != "no timing":
            events.append((ev.COLLECTOR_TIMING, wall, {k: draw(VALUES) for k in timing}))
        if calls != "no done":
            events.append((ev.DONE_RATES, wall, draw(VALUES), draw(VALUES)))
        if calls != "no collector":
            reward = draw(st.one_of(VALUES, st.sampled_from([0.0, math.nan])))
            events.append((ev.COLLECTOR, wall, total, size, reward))
        odd = draw(st.integers(0, 100))
        if odd == 0:
            events.append((ev.SYSTEM, wall, {"system/cpu": 3.0}))
        elif odd == 1:
            events.append((ev.EP_LENGTH, wall, 12.0))
        elif odd == 2:
            events.append((ev.EPISODES, wall, (1.0, 2.0), (10, 20)))
        metrics: dict[str, Any] = {k: draw(VALUES) for k in names}
        if odd == 3:
            metrics[names[0]] = 3  # an int: the per-event fold converts it
        c = None if comps is None else {k: draw(VALUES) for k in comps}
        times = [draw(st.sampled_from([0.004, 0.0, -0.0, math.inf, math.nan])) for _ in range(4)]
        r = draw(VALUES) if with_reward else None
        events.append((ev.STEP, wall, it, metrics, r, None, c, *times, extra))
    cut = draw(st.sampled_from([8, 12, 16, 32]))
    # now and then another size; twice or three times the cut, as the sync face's 96
    # among its 32: pickles whose shape repeats the others' (_core/_blockjoin.repeats)
    sizes = st.sampled_from([1, 9, 33, 2 * cut, 3 * cut])
    return events, sent(events, lambda: cut if draw(st.integers(0, 9)) else draw(sizes), draw)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(iteration_frames())
def test_iterations_read_as_columns_fold_as_their_events_do(drawn: Any) -> None:
    """Bit for bit: the events a run block stands for are the pickles' events; folded
    (its columns, its first pickle event by event where the fold had not seen its keys,
    the events after its last step), the blocks give the per-event fold's records,
    TensorBoard and JSONL bytes, rules, run summary, CSV and dashboard state."""
    read_twice_and_fold(*drawn)


def iterations(n: int, start: int = 1000, reward: float | None = -120.5) -> list[ev.Event]:
    out: list[ev.Event] = []
    for i in range(start, start + n):
        w = 1.7e9 + i
        out += [
            (ev.COLLECTOR_TIMING, w, {"env_ms": 2.5 + i, "replay_ms": 0.4}),
            (ev.DONE_RATES, w, 0.01, 0.002 * i),
            (ev.COLLECTOR, w, i * 4096, 10**6, -120.5),
            (ev.STEP, w, i, {"loss": 0.5 / i, "lr": 3e-4}, reward, None, {"fwd": 1.0 * i},
             0.004, 2e-4, 0.0, 0.0, 4096),
        ]  # fmt: skip
    return out


def test_pickles_of_iterations_are_one_run_block_folded_as_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The standard iteration's pickles (four kinds of events, cut anywhere: here one
    event in, so each pickle ends with the next iteration's collector timing) after the
    first of their shape are one ``RUN_BLOCK`` a frame and its markers, folded as columns
    but for the last pickle's events after its last step; a pickle of another shape (no
    reward) is unpickled."""
    taken: list[int] = []
    real = _fold_columns.RunFold.take_runblock

    def spy(self: _fold_columns.RunFold, block: Any, producers: int) -> Any:
        got = real(self, block, producers)
        taken.append(0 if got is None else len(got[0]))
        return got

    monkeypatch.setattr(_fold_columns.RunFold, "take_runblock", spy)
    events = iterations(161)[1:641]  # 640 events from a collector timing's done rates on
    pickles = [pack_events(events[k : k + 32]) for k in range(0, len(events), 32)]
    reader = PlainSteps()
    first = reader.unpack(pickles[0])
    assert len(first) == 32 and ev.RUN_BLOCK not in {e[0] for e in first}
    got = reader.unpack(b"".join(pickles[1:]))
    assert got[0][0] == ev.RUN_BLOCK and got[0][2].pickles == 19
    assert [e[0] for e in got[1:]] == [ev.FOLDED] * (19 * 32 - 1)
    assert reader.read == 19 * 8
    other = pack_events(iterations(8, 5000, None))  # no reward: unpickled
    assert ev.RUN_BLOCK not in {e[0] for e in reader.unpack(other)}
    records = same(events, [e for e in first + got if e[0] != ev.FOLDED])
    assert len(records) == 160 and taken == [19 * 8]  # the last timing: event by event
    # a fold that meets the block first (not started, its keys never seen): its first
    # pickle event by event, then the rest as columns
    taken.clear()
    records = same(events[32:], [got[0]])
    assert len(records) == 152 and taken == [0, 18 * 8]


def test_a_run_fold_failing_after_a_blocks_first_pickle_never_folds_that_pickle_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run fold refuses a block (its keys never seen), so its first pickle is folded
    event by event, and then fails on the rest (a bug, forced here): the intake says so and
    folds the rest event by event; every step is folded once, as the per-event fold does."""
    from aoff._core._buffer import EventBuffer
    from aoff._core._say import SayOnce
    from aoff._core._state import State
    from aoff._pump._intake import Intake

    calls: list[int] = []

    def failing(self: _fold_columns.RunFold, block: Any, producers: int) -> Any:
        calls.append(block.pickles)
        if len(calls) == 1:
            return None  # not started: the first pickle goes event by event
        raise RuntimeError("forced")

    monkeypatch.setattr(_fold_columns.RunFold, "take_runblock", failing)
    events = iterations(161)[1:641]
    pickles = [pack_events(events[k : k + 32]) for k in range(0, len(events), 32)]
    reader = PlainSteps()
    reader.unpack(pickles[0])  # the template
    got = reader.unpack(b"".join(pickles[1:]))
    assert got[0][0] == ev.RUN_BLOCK
    said: list[str] = []
    folded: list[Any] = []
    state = State()
    intake = Intake(
        EventBuffer(10_000),
        state,
        [],
        SayOnce(said.append),
        finish_timeout=5.0,
        on_change=lambda: None,
        on_slice=lambda: None,
        on_records=lambda recs, _spans: folded.extend(recs),
    )
    records = intake.fold(got)
    assert calls == [19, 18]
    want, want_state = fold(events[32:], runs=False)
    assert [r.step for r in records] == [r.step for r in want] and len(records) == 152
    # the state too: the first pickle folded twice counted 160 steps, its histories twice
    for name in FIELDS:
        assert repr(getattr(state, name)) == repr(getattr(want_state, name)), name
    assert any("run fold failed (RuntimeError: forced)" in line for line in said), said


def test_a_process_run_of_iterations_writes_what_a_thread_run_writes(tmp_path: Path) -> None:
    """The standard iteration through the agent (its frames read as run blocks) and in
    thread mode: the same TensorBoard scalars and JSONL rows, wall times aside."""
    import aoff

    def run(folder: Path, pump: str) -> None:
        log = aoff.OffPolicyLogger(log_dir=folder, pump=pump, display="none",
                                   backends=("jsonl",), system_interval=0)  # fmt: skip
        for i in range(3000):
            log.update_collector_timing({"env_ms": 2.5, "replay_ms": 0.4 + (i == 1500)})
            log.update_done_rates(0.01, 0.002)
            log.log_collector(i * 64, 1000, -1.0 if i % 7 else math.nan)
            metrics: dict[str, Any] = {"q_loss": 0.5 / (i + 1), "lr": 3e-4}
            if i % 500 == 499:
                metrics["eval/return"] = float(i)
            log.log_step(
                i,
                metrics,
                reward=-1.5 if i != 2000 else None,
                train_time=0.004,
                reward_components={"fwd": 1.0},
                extra_info={"throughput_steps": 64},
            )
        log.finish()

    run(tmp_path / "process", "process")
    run(tmp_path / "thread", "thread")
    same_files(tmp_path, 3000)
