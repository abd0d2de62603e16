"""The run fold (``_core/_fold_columns``): a run of regular iterations folded at once
gives the per-event fold's records, files and dashboard state, on adversarial input."""

from __future__ import annotations

import math
import re
import struct
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoff._core import _events as ev
from aoff._core import _fold_columns, _groupbatch
from aoff._core._blockjoin import join_blocks
from aoff._core._fold import Folder
from aoff._core._records import StepRecord
from aoff._core._state import State
from aoff._runfolder.lines._jsonl import encode_lines
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import EventEncoder

from .conftest import read_tensorboard

RUN_KINDS = frozenset((ev.STEP, ev.COLLECTOR_TIMING, ev.COLLECTOR, ev.DONE_RATES))
#: the state the dashboard, the summary and the report read
FIELDS = (
    "iteration", "steps_logged", "total_steps", "own_total_steps", "buffer_size",
    "timeout_rate", "terminated_rate", "train_time", "wait_time", "h2d_time",
    "weight_sync_time", "throughput_known", "throughput_steps", "latest_metrics",
    "reward_history", "loss_history", "loss_name", "reward_components", "collector_timing",
    "logged", "status", "last_wall_time", "invalid_values", "ep_length",
)  # fmt: skip


def fold(events: Sequence[ev.Event], runs: bool) -> tuple[list[StepRecord], State]:
    """The pump's intake loop (``_pump/_intake.Intake.fold``): runs at once where the
    folder takes them (``runs``), else event by event."""
    state = State()
    folder = Folder(state)
    out: list[StepRecord] = []
    i, run_at = 0, 0
    while i < len(events):
        kind = events[i][0]
        if kind in (ev.STEP_BLOCK, ev.RUN_BLOCK):  # the intake's own branch: a group's
            # block or pickles read as columns, joined with the blocks of its kind and
            # skeleton right after it and their markers (_core/_blockjoin)
            e, last = join_blocks(events, i)
            out += (folder.apply_block if kind == ev.STEP_BLOCK else folder.apply_runblock)(e)
            i = last + 1
            continue
        if kind == ev.FOLDED:  # a step its block folded: passed over, as the intake does
            i += 1
            continue
        if runs and i >= run_at and events[i][0] in RUN_KINDS:
            got, end, run_at = folder.apply_run(events, i)
            if got:
                out += got
                i = end
                continue
        rec = folder.apply(events[i])
        if rec is not None:
            out.append(rec)
        i += 1
    return out, state


def bits(records: list[StepRecord]) -> list[tuple[object, ...]]:
    d = struct.Struct("<d").pack
    return [
        (r.step, r.iteration, d(r.wall_time), tuple((t, d(v)) for t, v in r.scalars))
        for r in records
    ]


def same(events: list[ev.Event], blocks: list[ev.Event] | None = None) -> list[StepRecord]:
    """Fold ``events`` both ways (event by event, and with runs at once, or ``blocks``:
    the same steps in a group's blocks): the same records, bytes and state; the records."""
    want, s1 = fold(events, runs=False)
    got, s2 = fold(events if blocks is None else blocks, runs=True)
    # the readers first: each takes the rows as the fold left them (no pairs, no row
    # made), as the agent's runners do; the pairs compared last
    assert encode_lines(got) == encode_lines(want)
    assert encode_records(EventEncoder(), got) == encode_records(EventEncoder(), want)
    assert alerts(got) == alerts(want)
    assert summary(got) == summary(want)
    assert csv_text(got) == csv_text(want)
    assert bits(got) == bits(want)
    for name in FIELDS:
        a, b = getattr(s2, name), getattr(s1, name)
        if isinstance(a, set):  # a set's repr follows its insertion order and the hash seed
            assert a == b, name
        else:
            assert repr(a) == repr(b), name
    assert repr(s2.hparams.reward_last) == repr(s1.hparams.reward_last)
    assert repr(s2.hparams.reward_best) == repr(s1.hparams.reward_best)
    return got


def alerts(records: list[StepRecord]) -> tuple[str, object]:
    """What the rules say of ``records`` (a run's rows checked as columns where no rule
    can fire), and the stall clock's last step."""
    from aoff import rules
    from aoff._core._watch import Watch

    watch = Watch(
        (rules.nonfinite(), rules.above("*", 1e299), rules.below("*", -1e299),
         rules.collapse("*loss*", -1e300), rules.blowup("reward/mean", window=4),
         rules.stalled(seconds=10)),
        clock=lambda: 0.0, monotonic=lambda: 1.0,
    )  # fmt: skip
    return repr(watch.see(records)), watch._seen


def summary(records: list[StepRecord]) -> str:
    """The run summary's content from ``records`` in two batches, folded every 12
    records (a run's rows are taken as table slices, cut where a fold falls)."""
    from aoff._runfolder.summary import _writer

    keep = _writer.FOLD_ROWS
    _writer.FOLD_ROWS = 12
    try:
        s = _writer.RunSummary("/nonexistent/aoff-summary.json")
        half = len(records) // 2
        s.add(records[:half])
        s.add(records[half:])
        content = s.snapshot()
    finally:
        _writer.FOLD_ROWS = keep
    return repr(content)


def csv_text(records: list[StepRecord]) -> str:
    """``progress.csv`` of ``records`` under a header with a column they lack (a run's
    rows are cells made a column at a time)."""
    from aoff._runfolder.lines._csv import batch_cells, encode_rows, header_line, new_columns

    rows = batch_cells(records)
    columns = ["step", "iteration", "wall_time", "other"]
    columns += new_columns(columns, rows)
    return header_line(columns) + encode_rows(rows, columns)


FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e300, 3.5e38, 0.25]),
)
KEYS = st.sampled_from(["loss", "q1_loss", "ünï", "日本", "lr", "a/b", "x" * 70])


def shapes_of(keys: list[tuple[str, ...]]) -> st.SearchStrategy[tuple[object, ...]]:
    """One loop's shape: its metric keys, a reward or not, its reward components, its
    train time, its throughput (``extra_info``)."""
    return st.tuples(
        st.sampled_from(keys),
        st.booleans(),
        st.sampled_from([None, ("forward",), ("forward", "ctrl")]),
        st.sampled_from([0.004, 0.0, -1.0]),
        st.sampled_from([None, 4096, 0, -5]),
    )


@st.composite
def iterations(draw: st.DrawFn) -> list[ev.Event]:
    """Iterations of a training loop whose keys appear and vanish, with NaN, ±inf,
    huge steps and values that are not floats, and irregular events between them."""
    out: list[ev.Event] = []
    wall = 1.7e9
    shapes = [
        tuple(draw(st.lists(KEYS, max_size=4, unique=True))) for _ in range(draw(st.integers(1, 3)))
    ]
    shape = draw(shapes_of(shapes))
    for i in range(draw(st.integers(0, 40))):
        wall += 0.5
        if draw(st.integers(0, 7)) == 0:  # the loop's keys and kinds change now and then
            shape = draw(shapes_of(shapes))
        keys, with_reward, comps, t, extra = shape
        if draw(st.integers(0, 5)) == 0:
            out.append((ev.COLLECTOR_TIMING, wall, {k: draw(FLOATS) for k in keys[:2]}))
        if draw(st.booleans()):
            out.append((ev.DONE_RATES, wall, draw(FLOATS), draw(FLOATS)))
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):  # two: a point kept, one replaced
            total = draw(st.one_of(st.integers(0, 2**40), st.integers(-(2**63), 2**63 - 1)))
            out.append(
                (ev.COLLECTOR, wall, total, 100, draw(st.sampled_from([0.0, 1.5, math.nan])))
            )
        odd = draw(st.integers(0, 30))
        if odd == 0:
            out.append((ev.SYSTEM, wall, {"system/cpu": 3.0}))
        elif odd == 1:
            out.append((ev.EPISODES, wall, (1.0, 2.0), (10, 20)))
        elif odd == 2:
            out.append((ev.EP_LENGTH, wall, 12.0))
        metrics = {k: draw(FLOATS) for k in keys}
        if draw(st.integers(0, 4)) == 0:  # one step's keys in another order: its own tags
            metrics = dict(reversed(metrics.items()))
        if odd == 3 and keys:
            metrics[keys[0]] = 7  # an int: the per-event fold's checks take it
        reward = draw(FLOATS) if with_reward else None
        comps = None if comps is None else {k: draw(FLOATS) for k in comps}
        if comps is not None and draw(st.integers(0, 4)) == 0:
            comps = dict(reversed(comps.items()))
        step = (ev.STEP, wall, i, metrics, reward, None, comps, t, 0.0002, 0.0, 0.0, extra)
        out.append(step)
    return out


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(iterations())
def test_runs_fold_as_the_per_event_fold_does(events: list[ev.Event]) -> None:
    same(events)


@st.composite
def group_items(draw: st.DrawFn) -> tuple[int, list[Any]]:
    """A group's queued items: its ``log_step`` calls (each value one a run or one for
    all; now and then an int, a reward or a step beyond int64; keys that change) with
    events every run gets between them."""
    import numpy as np

    runs = draw(st.integers(1, 3))
    shapes = [tuple(draw(st.lists(KEYS, max_size=3, unique=True))) for _ in range(2)]
    keys = shapes[0]
    items: list[Any] = []
    wall = 1.7e9
    for i in range(draw(st.integers(0, 30))):
        wall += 0.5
        if draw(st.integers(0, 9)) == 0:
            keys = draw(st.sampled_from(shapes))
        odd = draw(st.integers(0, 40))
        if odd == 0:
            items.append((ev.DONE_RATES, wall, 0.01, draw(FLOATS)))
        elif odd == 1:
            items.append((ev.COLLECTOR, wall, draw(st.integers(0, 2**40)), 100, 1.5))
        elif odd == 2:
            items.append((ev.EP_LENGTH, wall, 12.0))
        elif odd == 3:
            items.append((ev.COLLECTOR_TIMING, wall, {"env_ms": 2.5}))
        per = {k: np.array([draw(FLOATS) for _ in range(runs)]) for k in keys}
        if odd == 4 and keys:
            per[keys[0]] = np.arange(runs)  # ints: the per-event fold's conversion
        if odd == 5 and keys:
            per[keys[-1]] = draw(FLOATS)  # one value for every run
        step: Any = i if odd != 6 else 2**63 + i  # beyond int64: the per-event fold's
        reward = 1.5 if odd == 7 else None
        items.append(_groupbatch.take_batch(runs, wall, step, per, reward))
    return runs, items


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_items())
def test_a_groups_blocks_fold_as_its_steps_events_do(drawn: tuple[int, list[Any]]) -> None:
    """Each run's blocks (``split_items``: plain steps in a row as columns) give the
    records, bytes and state its ``log_step`` events give folded one by one."""
    runs, items = drawn
    blocked = _groupbatch.split_items(items, runs)
    for k in range(runs):
        events = [_groupbatch.split_item(item, runs)[k] for item in items]
        same(events, blocked[k])


def test_plain_group_steps_reach_the_fold_as_blocks_of_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loop's plain group steps become one block a run, folded as columns (all but the
    first step, whose keys the per-event fold checks first)."""
    import numpy as np

    taken: list[int] = []
    real = _fold_columns.RunFold.take_block

    def spy(self: _fold_columns.RunFold, walls: Sequence[float], *args: Any) -> Any:
        got = real(self, walls, *args)
        taken.append(0 if got is None else len(got))
        return got

    monkeypatch.setattr(_fold_columns.RunFold, "take_block", spy)
    m = {f"m{j}": np.linspace(0, 1, 8) + j for j in range(4)}
    items = [_groupbatch.take_batch(8, 1.0 + i, i, m, None) for i in range(50)]
    blocked = _groupbatch.split_items(items, 8)
    assert [len(events) for events in blocked] == [1] * 8
    assert [e[0] for e in blocked[3]] == [ev.STEP_BLOCK]
    # what waits unfolded counts a call a step (a partial report's dropped, unwritten steps)
    assert ev.calls_in(blocked[3]) == ev.steps_in(blocked[3]) == 50
    events = [_groupbatch.split_item(item, 8)[3] for item in items]
    records = same(events, blocked[3])
    assert len(records) == 50 and taken == [0, 49]


def standard(n: int) -> list[ev.Event]:
    """The benchmarks' standard iteration (4 calls, 32 scalars), ``n`` times."""
    timing = {"env_step_ms": 2.5, "replay_ms": 0.4}
    metrics = {f"m{k}": k * 0.5 for k in range(12)}
    comps = {"forward": 1.2}
    out: list[ev.Event] = []
    for i in range(n):
        w = 1.0 + i
        out += [
            (ev.COLLECTOR_TIMING, w, dict(timing)),
            (ev.DONE_RATES, w, 0.01, 0.002),
            (ev.COLLECTOR, w, i * 4096, 10**6, -120.5),
            (ev.STEP, w, i, dict(metrics), -120.5, None, comps, 0.004, 2e-4, 0.0, 0.0, 4096),
        ]
    return out


def test_the_standard_iteration_folds_as_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[int] = []
    real = _fold_columns.RunFold.take

    def spy(self: _fold_columns.RunFold, run: Sequence[ev.Event], *args: object) -> object:
        taken.append(len(run))
        return real(self, run, *args)

    monkeypatch.setattr(_fold_columns.RunFold, "take", spy)
    records = same(standard(50))
    assert len(records) == 50 and sum(taken) >= 4 * 45  # all but the first iterations


def test_a_run_from_a_step_replaces_the_collectors_point_before_it() -> None:
    """A collector folded event by event, then a run that starts at its step: the step's
    reward replaces that collector's point, as event by event."""
    events = [  # each step's reward its own, not its collector's
        (*e[:4], float(e[2]), *e[5:]) if e[0] == ev.STEP else e for e in standard(12)
    ]
    start = 4 * 5 + 3  # the sixth iteration's step, its collector just before
    state = State()
    folder = Folder(state)
    for e in events[:start]:
        folder.apply(e)
    got, end, _ = folder.apply_run(events, start)
    assert got and end == len(events)
    _, want = fold(events, runs=False)
    assert list(state.reward_history) == list(want.reward_history)
    assert state.hparams.reward_best == want.hparams.reward_best


def test_the_readers_of_columns_leave_a_runs_rows_unmade(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default backends (TensorBoard, JSONL), CSV, the run summary and the default
    rules read a run fold's table: no row's floats are made (``ScalarColumns.row``),
    whole batches or a table's rows cut in two (a piece of fewer than ``MIN_RUN`` rows is
    read record by record, as any short batch); a reader that takes a record alone gets
    the table's."""
    from aoff._core._columns import MIN_RUN, ScalarColumns
    from aoff._core._rules import DEFAULT_RULES
    from aoff._core._watch import Watch
    from aoff._runfolder.summary._writer import RunSummary

    made: list[int] = []
    real = ScalarColumns.row
    monkeypatch.setattr(ScalarColumns, "row", lambda t, i: made.append(i) or real(t, i))
    got, _ = fold(standard(40), runs=True)
    table = got[-1]._table  # type: ignore[attr-defined]
    assert len(table) >= 2 * MIN_RUN
    cut = len(got) - len(table) // 2  # the last table's rows cut in two, both halves long
    for part in (got, got[:cut], got[cut:]):
        encode_lines(part), encode_records(EventEncoder(), part), csv_text(part)
        RunSummary("/nonexistent/aoff-summary.json").add(part)
        Watch(DEFAULT_RULES, clock=lambda: 0.0, monotonic=lambda: 1.0).see(part)
    assert made == []
    assert dict(got[-1].scalars) == dict(zip(table.tags, table.values[-1].tolist(), strict=True))
    assert made == [len(table) - 1]


def test_a_real_run_writes_the_same_files_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the logger (thread mode: the pump's intake dispatches runs), a loop with a
    periodic evaluation's keys, a NaN and an int: TensorBoard and JSONL read back the
    same, wall time aside, with the run fold and without it (its floor out of reach)."""
    import aoff

    def run(folder: Path) -> None:
        log = aoff.OffPolicyLogger(log_dir=folder, pump="thread", display="none",
                                   backends=("jsonl", "csv"), system_interval=0)  # fmt: skip
        for i in range(300):
            log.update_collector_timing({"env_step_ms": 2.5, "replay_ms": 0.4})
            log.update_done_rates(0.01, 0.002)
            log.log_collector(i * 64, 1000, -1.0 if i % 7 else math.nan)
            metrics = {"q_loss": 0.5 / (i + 1), "lr": 3e-4 if i != 150 else 3}
            if i % 50 == 49:
                metrics["eval/return"] = float(i)
            log.log_step(
                i, metrics, reward=-1.5, train_time=0.004, extra_info={"throughput_steps": 64}
            )
        log.finish()

    folded: list[int] = []
    real = _fold_columns.RunFold.take

    def spy(self: _fold_columns.RunFold, *args: Any) -> Any:
        got = real(self, *args)
        folded.append(0 if got is None else len(got[0]))
        return got

    monkeypatch.setattr(_fold_columns.RunFold, "take", spy)
    run(tmp_path / "columns")
    assert sum(folded) > 150  # most steps went through the run fold
    monkeypatch.setattr(_fold_columns, "MIN_STEPS", 10**9)
    run(tmp_path / "events")
    a, b = (read_tensorboard(tmp_path / n) for n in ("columns", "events"))
    assert a == b and len(a["axis/iteration"]) == 300
    lines = []
    for name in ("columns", "events"):
        rows = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        lines.append([re.sub(r'"wall_time":[^,]*,', "", row) for row in rows])
    assert lines[0] == lines[1] and len(lines[0]) == 300
    cells = []  # CSV: a new column (eval/return) rewrites the file under its new header
    for name in ("columns", "events"):
        rows = (tmp_path / name / "progress.csv").read_text().splitlines()
        cells.append([row.split(",")[:2] + row.split(",")[3:] for row in rows])
    assert cells[0] == cells[1] and len(cells[0]) == 301 and "eval/return" in cells[0][0]


def test_times_that_overflow_fold_alike_and_warn_nothing() -> None:
    """``train_time * 1000`` beyond float64 is inf in Python's arithmetic and in NumPy's
    (which would warn: the run fold silences it)."""
    huge = [
        (ev.STEP, 1.0 + i, i, {"loss": 1e308}, 1.0, None, None, 1e306, 1e307, 1e308, 1e308, 64)
        for i in range(12)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = same(huge)
    assert records[-1].as_dict()["timing/learner_train_ms"] == math.inf


def test_a_failing_run_fold_leaves_every_step_to_the_per_event_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import aoff

    def broken(*_: object) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_fold_columns.RunFold, "take", broken)
    log = aoff.OffPolicyLogger(log_dir=tmp_path, pump="thread", display="none",
                               backends=("jsonl",), system_interval=0)  # fmt: skip
    for i in range(100):
        log.log_step(i, {"loss": 1.0 / (i + 1)})
    report = log.finish()
    assert report.backend_written["jsonl"] == 100
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 100
    assert capfd.readouterr().err.count("the run fold failed (RuntimeError: a bug)") == 1


def test_the_rules_see_a_run_folds_rows_as_steps() -> None:
    """Its rows are StepRecords to every reader: the stall clock counts them, the
    nonfinite rule reads their columns."""
    from aoff import rules
    from aoff._core._columns import RowRecord
    from aoff._core._watch import Watch

    events = standard(20)
    events[-1] = (*events[-1][:3], {**events[-1][3], "m0": math.nan}, *events[-1][4:])
    records = [r for r in fold(events, runs=True)[0] if type(r) is RowRecord]
    assert len(records) >= 15
    now = [0.0]
    watch = Watch((rules.stalled(seconds=10), rules.nonfinite()), clock=lambda: 5.0,
                  monotonic=lambda: now[0])  # fmt: skip
    assert watch.see([StepRecord(1, 1, 1.0, (("x", 1.0),))]) == []  # the clock starts
    now[0] = 8.0
    got = watch.see(records)
    assert [a.rule.split("(")[0] for a in got] == ["nonfinite"] and got[0].step == records[-1].step
    now[0] = 12.0
    assert watch.tick() == []  # the rows were steps 4 s ago: not stalled
