"""``aoff.RunGroup``: N runs of one program, fed with one call per step.

Proved on what the readers see: each run's folder read back with TensorBoard's own
``EventAccumulator`` (values bit for bit the float32 logged), ``aoff compare``'s default
grouping, the per-run reports, rules and ``should_stop``; the group's table from a
snapshot.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aoff
from aoff import RunGroup
from aoff._cli._groups import group_runs
from aoff._core import _events as ev
from aoff._core._groupbatch import split_step, take_batch, take_block
from aoff._display._grouptable import MANY_RUNS, GroupRow, group_table, iqm
from aoff.rules import nonfinite
from aoff.testing import wait_until

from .conftest import read_jsonl, read_tensorboard


def _group(tmp_path: Path, runs: int | list[int] = 4, **kw: object) -> RunGroup:
    """A group in thread mode unless ``pump=`` says otherwise: the group's agent costs a
    process start a test, so the tests of what both modes share run in the cheaper one,
    and those marked ``both`` prove the agent (the default) too."""
    kw.setdefault("pump", "thread")
    return RunGroup(runs, tmp_path, name="sac", system_interval=0, **kw)  # type: ignore[arg-type]


both = pytest.mark.parametrize("pump", ["process", "thread"])


@both
def test_batched_values_are_split_across_runs_and_scalars_go_to_all(
    tmp_path: Path, pump: str
) -> None:
    loss = np.random.default_rng(0).standard_normal((30, 4)).astype(np.float32)
    with _group(tmp_path, config={"lr": 3e-4}, backends=("jsonl",), pump=pump) as g:
        for i in range(30):
            g.log_step(i, {"loss": loss[i], "lr": 3e-4}, reward=[1.0, 2.0, 3.0, 4.0])
    reports = g.finish()
    assert [r.steps for r in reports] == [30] * 4
    assert all(r.complete for r in reports)
    for k, run in enumerate(g.run_dirs):
        assert Path(run).name == f"sac_seed{k}"
        tb = read_tensorboard(run)
        got = np.array([v for _, v in tb["train/loss"]], dtype=np.float32)
        assert got.tobytes() == loss[:, k].tobytes()  # bit for bit, as TensorBoard reads it
        assert [s for s, _ in tb["train/loss"]] == list(range(30))
        assert {v for _, v in tb["train/lr"]} == {np.float32(3e-4)}
        assert {v for _, v in tb["reward/mean"]} == {float(k + 1)}
        config = json.loads((Path(run) / "config.json").read_text())
        assert (config["seed"], config["lr"]) == (k, 3e-4)


def test_aoff_compare_groups_the_runs_with_no_flags(tmp_path: Path) -> None:
    with _group(tmp_path, runs=[3, 7, 11]) as g:
        g.log_step(1, {"x": 1.0})
    unmatched: list[str] = []
    groups = group_runs(sorted(str(p) for p in tmp_path.iterdir()), None, unmatched)
    assert [(gr.name, len(gr.runs)) for gr in groups] == [("sac", 3)] and not unmatched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sac_seed11", "sac_seed3", "sac_seed7"]


def test_per_run_steps_and_jsonl_exact_values(tmp_path: Path) -> None:
    with _group(tmp_path, runs=2, backends=("jsonl",)) as g:
        g.log_step(np.array([5, 9]), {"q": np.array([0.1, 0.2], dtype=np.float32)})
    rows = [read_jsonl(Path(d) / "metrics.jsonl") for d in g.run_dirs]
    assert [r[0]["step"] for r in rows] == [5, 9]
    assert [np.float32(r[0]["train/q"]) for r in rows] == [np.float32(0.1), np.float32(0.2)]


def test_torch_tensors_are_split_too(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    with _group(tmp_path, runs=2, backends=("jsonl",)) as g:
        g.log_step(1, {"q": torch.tensor([0.25, 0.5]), "z": torch.tensor(3.0)})
    rows = [read_jsonl(Path(d) / "metrics.jsonl")[0] for d in g.run_dirs]
    assert [(r["train/q"], r["train/z"]) for r in rows] == [(0.25, 3.0), (0.5, 3.0)]


@both
def test_a_vector_per_run_is_each_runs_per_env_values(tmp_path: Path, pump: str) -> None:
    """``(runs, num_envs)``: each run gets its row, reduced as a single run reduces a
    per-env vector: the mean under the tag, the spread in ``<tag>/envs``."""
    ret = np.random.default_rng(2).standard_normal((3, 16)).astype(np.float32)
    with _group(tmp_path, runs=3, pump=pump) as g:
        g.log_step(1, {"ep_return": ret, "success": ret > 0}, reward=ret)
    assert all(r.complete and r.steps == 1 for r in g.finish())
    for k, run in enumerate(g.run_dirs):
        tb = read_tensorboard(run)
        mean = np.float32(ret[k].astype(np.float64).mean())
        assert tb["train/ep_return"] == [(1, mean)] and tb["reward/mean"] == [(1, mean)]
        assert tb["train/success"] == [(1, np.float32((ret[k] > 0).mean()))]
        assert tb["train/ep_return/envs/max"] == [(1, ret[k].max())]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (np.zeros(3), ValueError),  # not one per run
        (np.zeros((4, 2, 2)), ValueError),  # a vector per run is (runs, num_envs) at most
        (np.zeros((4, 0)), ValueError),  # no environments
        (np.zeros((2, 4)), ValueError),  # runs come first
        (np.array(["a"] * 4), TypeError),
        ("x", TypeError),
    ],
)
def test_bad_batches_fail_at_the_call(tmp_path: Path, value: object, error: type) -> None:
    with _group(tmp_path) as g:
        with pytest.raises(error, match="loss"):
            g.log_step(1, {"loss": value})
        with pytest.raises(TypeError, match="step"):
            g.log_step(np.array([0.5] * 4), {})
    assert [r.steps for r in g.finish()] == [0] * 4


def test_bad_constructor_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="runs"):
        RunGroup(0, tmp_path)
    with pytest.raises(ValueError, match="each seed once"):
        RunGroup([1, 1], tmp_path)
    with pytest.raises(ValueError, match="seed"):
        RunGroup(2, tmp_path, config={"seed": 1})
    with pytest.raises(ValueError, match="log_dir"):
        RunGroup(2, "")
    with pytest.raises(ValueError, match="pump must be"):
        RunGroup(2, tmp_path, pump="agent")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="agent_nice"):
        RunGroup(2, tmp_path, agent_nice=99)


def test_one_group_step_is_one_queued_item(tmp_path: Path) -> None:
    """The hot path queues one item per call, whatever the number of runs; the split
    happens beside the pumps."""
    g = _group(tmp_path, runs=64)
    seen: list[object] = []
    g._put = seen.append  # what the call hands on
    g.log_step(1, {"a": np.ones(64), "b": 2.0})
    assert len(seen) == 1
    g._put = g._intake.put
    assert [r.steps for r in g.finish()] == [0] * 64


@both
def test_rules_alert_and_stop_per_run(tmp_path: Path, pump: str) -> None:
    with _group(tmp_path, runs=3, rules=[nonfinite("train/loss", stop=True)], pump=pump) as g:
        g.log_step(1, {"loss": [0.1, math.nan, 0.3]})
        wait_until(lambda: any(g.should_stop), what="run 1's alert")
        assert g.should_stop == (False, True, False) and not g.all_stopped
        assert [len(a) for a in g.alerts] == [0, 1, 0]
        g.log_step(2, {"loss": math.nan})
        wait_until(lambda: g.all_stopped, what="every run's alert")
    reports = g.finish()
    assert [len(r.alerts) for r in reports] == [1, 1, 1]
    assert [r.alerts[0].step for r in reports] == [2, 1, 2]


@both
def test_every_call_is_counted_under_overflow(tmp_path: Path, pump: str) -> None:
    """A burst over capacity: each run's steps plus its dropped events are the calls."""
    g = _group(tmp_path, runs=3, capacity=8, overflow="drop_newest", log_backend="none", pump=pump)
    for i in range(2000):
        g.log_step(i, {"x": np.arange(3.0)})
    reports = g.finish()
    assert len({(r.steps, r.dropped_events) for r in reports}) == 1
    assert all(r.steps + r.dropped_events == 2000 for r in reports)


def test_the_agent_pumps_the_runs_and_losing_it_is_counted(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], threads_started: Callable[..., set[str]]
) -> None:
    """Process mode (the default): no pump thread in this process, what the agent wrote
    is there after ``flush()``; an agent killed mid-run ends in partial reports whose
    steps plus dropped are every call, said in one line."""
    g = RunGroup(3, tmp_path, name="sac", system_interval=0, backends=("jsonl",))
    assert g.pump == "process"
    g.log_step(1, {"x": np.array([1.0, 2.0, 3.0], dtype=np.float32)})
    g.flush()
    assert not threads_started("aoff-group", "aoff-pump")
    assert [read_jsonl(Path(d) / "metrics.jsonl")[0]["train/x"] for d in g.run_dirs] == [
        1.0,
        2.0,
        3.0,
    ]
    with pytest.raises(RuntimeError, match="agent process"):
        g.states()
    side = g._driver
    side.proc.kill()  # type: ignore[attr-defined]
    wait_until(lambda: side.lost is not None, what="the agent's loss")  # type: ignore[attr-defined]
    for i in range(2, 12):
        g.log_step(i, {"x": 0.0})
    reports = g.finish()
    got = [(r.steps, r.steps + r.dropped_events, r.partial) for r in reports]
    assert got == [(1, 11, True)] * 3
    # aoff's lines reach stderr through their own thread, which a loaded machine may run
    # after finish() returned: wait for the line, then check it came once
    err: list[str] = []
    line = "the run group's agent was lost"

    def said() -> bool:
        err.append(capfd.readouterr().err)
        return line in "".join(err)

    wait_until(said, what="the loss's line")
    assert "".join(err).count(line) == 1


def test_after_finish_a_call_warns(tmp_path: Path) -> None:
    g = _group(tmp_path, runs=2)
    g.finish()
    with pytest.warns(aoff.AoffWarning, match="after finish"):
        g.log_step(1, {"x": 1.0})
    assert g.finish() is g.finish()


def test_table_one_line_per_run_or_iqm_when_many() -> None:
    rows = [GroupRow(f"r{k}", 10, float(k), {"loss": float(k)}) for k in range(4)]
    few = group_table("g", rows)
    assert few.row_count == 4
    many = [GroupRow(f"r{k}", 10, float(k), {"loss": float(k)}) for k in range(MANY_RUNS + 8)]
    table = group_table("g", many)
    assert table.row_count == 3  # IQM, min, max: never one line per run
    assert iqm([1.0, 2.0, 3.0, 100.0]) == 2.5
    from rliable import metrics

    xs = list(np.random.default_rng(1).standard_normal(20))
    assert iqm(xs) == pytest.approx(metrics.aggregate_iqm(np.array(xs)))


_CHILD = """
import os, signal, sys
import numpy as np
import aoff
g = aoff.RunGroup(2, sys.argv[1], name="x", system_interval=0, backends=("jsonl",))
for i in range(50):
    g.log_step(i, {"v": np.array([i, -i], dtype=np.float32)})
if sys.argv[2] == "term":
    os.kill(os.getpid(), signal.SIGTERM)
"""


@pytest.mark.parametrize("how", ["exit", "term"])
def test_a_group_never_finished_is_drained_at_exit(tmp_path: Path, how: str) -> None:
    """No ``finish()``: the interpreter's exit (or SIGTERM) still writes every step."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root / "src"))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path), how],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == (143 if how == "term" else 0), proc.stderr
    for k in range(2):
        rows = read_jsonl(tmp_path / f"x_seed{k}" / "metrics.jsonl")
        assert [r["train/v"] for r in rows] == [float(i if k == 0 else -i) for i in range(50)]


def test_the_plain_table_is_printed_at_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _group(tmp_path, runs=3, display="plain") as g:
        g.log_step(4, {"loss": [0.5, 1.5, 2.5]})
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "sac_seed" in ln]
    assert len(lines) == 3 and "2.5" in lines[2] and " 4 " in lines[0]


def test_log_collector_per_run_and_for_all(tmp_path: Path) -> None:
    with _group(tmp_path, runs=2, backends=("jsonl",)) as g:
        g.log_collector([100, 200], 50)
        g.log_step(1, {"x": 1.0})
        g.log_collector(300)
        g.log_step(2, {"x": 1.0})
    rows = [read_jsonl(Path(d) / "metrics.jsonl") for d in g.run_dirs]
    assert [[r["axis/env_steps_total"] for r in rs] for rs in rows] == [[100, 300], [200, 300]]


def test_the_rich_table_is_one_table_redrawn_in_place_on_a_pty(tmp_path: Path) -> None:
    from .test_terminal import PtyRun, Screen, child_env

    run = PtyRun([str(Path(__file__).with_name("group_child.py")), str(tmp_path)], child_env())
    try:
        assert run.wait() == 0, run.text()[-3000:]
    finally:
        run.kill()
    raw = run.text()
    assert raw.count("g: 3 runs") >= 2  # drawn more than once while it ran
    screen = Screen()
    screen.feed(raw)
    lines = screen.lines()
    text = "\n".join(lines)
    assert sum("g: 3 runs" in ln for ln in lines) == 1, text  # redrawn, never N panels
    rows = [ln for ln in lines if "g_seed" in ln]
    assert len(rows) == 3 and " 39 " in rows[0] and "42" in rows[2], text


@given(
    runs=st.integers(1, 12),
    data=st.data(),
)
@settings(max_examples=60, deadline=None)
def test_split_gives_each_run_its_own_value_bit_for_bit(runs: int, data: st.DataObject) -> None:
    """``take_batch`` then ``split_step``: run k gets entry k of each batched value, as
    the same float32 (or int), and every run the same plain number."""
    floats = st.floats(width=32, allow_nan=False)
    col = np.array(data.draw(st.lists(floats, min_size=runs, max_size=runs)), dtype=np.float32)
    steps = data.draw(st.lists(st.integers(0, 2**40), min_size=runs, max_size=runs))
    axes = data.draw(st.sampled_from([None, {"g": np.array(steps), "v": 2}]))
    reward = data.draw(st.sampled_from([None, 0.5, col]))
    metrics = data.draw(st.sampled_from([{"a": col, "b": 7}, {}]))
    batch = take_batch(runs, 1.0, np.array(steps), metrics, reward, axes)
    events = split_step(batch, runs)
    assert len(events) == runs
    for k, e in enumerate(events):
        assert e[ev.S_ITERATION] == steps[k] and type(e[ev.S_ITERATION]) is int
        # the axes are the optional field: there only when the call gave them
        assert e[ev.S_AXES :] == (() if axes is None else ({"g": steps[k], "v": 2},))
        got = e[ev.S_METRICS]
        assert list(got) == list(metrics)
        if metrics:
            assert np.float32(got["a"]).tobytes() == col[k].tobytes() and got["b"] == 7
        want_r = reward if reward is None or type(reward) is float else float(col[k])
        assert e[ev.S_REWARD] == want_r


def test_a_block_is_what_its_steps_one_by_one_are() -> None:
    """``take_block`` (``aoff.jax.log_many``'s group path) gives the items ``take_batch``
    gives for each of its rows, values in their dtype's numbers; bad input is refused."""
    rng = np.random.default_rng(3)
    steps = np.arange(12, dtype=np.int32).reshape(4, 3)
    m = {"x": rng.standard_normal((4, 3)).astype(np.float32), "n": steps * 2, "b": steps > 5}
    got = take_block(3, 1.0, steps, m)
    want = [take_batch(3, 1.0, steps[j], {k: v[j] for k, v in m.items()}, None) for j in range(4)]
    assert got == want
    assert [type(v[0]) for v in got[0][2].values()] == [float, int, bool]
    with pytest.raises(TypeError, match="step: expected numbers"):
        take_block(3, 1.0, steps.astype(np.float32), m)
    with pytest.raises(ValueError, match=r"x: a block is \(steps, 3\)"):
        take_block(3, 1.0, steps, {"x": np.zeros((4, 2))})


def test_max_iterations_is_shown_only_when_given(tmp_path: Path) -> None:
    """Left out, ``max_iterations`` is not a fact of the runs (no ``/1500``, no ETA, no
    ``of 1,500`` in ``aoff show``); given, even as 1500, it is."""
    with _group(tmp_path / "unset", runs=2) as g:
        g.log_step(3, {"x": 1.0})
        g.flush()
        assert [s.config.max_iterations for s in g.states()] == [0, 0]
    with _group(tmp_path / "set", runs=2, max_iterations=1500) as given:
        given.log_step(3, {"x": 1.0})
        given.flush()
        assert [s.config.max_iterations for s in given.states()] == [1500, 1500]
    for group, want in ((g, 0), (given, 1500)):
        for run in group.run_dirs:
            summary = json.loads((Path(run) / "aoff-summary.json").read_text())
            assert summary["max_iterations"] == want, run


def test_axes_per_run_or_for_all_on_steps_and_collectors(tmp_path: Path) -> None:
    """``axes=`` on both calls: a leading axis of one value per run is split, a number
    goes to all; a collector's ``policy_version`` gives each run its own staleness."""
    with _group(tmp_path, runs=2, backends=("jsonl",)) as g:
        for i in range(1, 4):
            g.log_collector([100 * i, 200 * i], axes={"policy_version": [i - 1, i - 2]})
            grad = np.array([10 * i, 20 * i])
            g.log_step(i, {"x": 1.0}, axes={"grad_steps": grad, "policy_version": i})
        with pytest.raises(ValueError, match="axis 'grad_steps'"):
            g.log_step(4, {}, axes={"grad_steps": [1, 2, 3]})
        with pytest.raises(TypeError, match="axes must be a dict"):
            g.log_collector(1, axes=[1, 2])  # type: ignore[arg-type]
    rows = [read_jsonl(Path(d) / "metrics.jsonl") for d in g.run_dirs]
    assert [[r["axis/grad_steps"] for r in rs] for rs in rows] == [[10, 20, 30], [20, 40, 60]]
    assert [[r["axis/policy_version"] for r in rs] for rs in rows] == [[1, 2, 3]] * 2
    # the learner's version (the step before) minus each run's collector's
    staleness = [[r.get("collector/staleness") for r in rs[1:]] for rs in rows]
    assert staleness == [[0, 0], [1, 1]]
    df = aoff.read_scalars(g.run_dirs[1], ["train/x"], axes=True)
    assert list(df["grad_steps"]) == [20, 40, 60] and list(df["env_steps"]) == [200, 400, 600]


@pytest.mark.anyio
async def test_the_async_twin_waits_without_stopping_the_loop(tmp_path: Path) -> None:
    """``AsyncRunGroup``: the same runs; ``flush``/``finish`` wait in a worker thread while
    another task of the loop goes on ticking (asyncio and trio)."""
    import anyio

    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        async with aoff.AsyncRunGroup(
            2, tmp_path, name="a", system_interval=0, backends=("jsonl",), pump="thread"
        ) as g:
            for i in range(5):
                g.log_step(i, {"x": np.array([i, -i], dtype=np.float32)})
            before = ticks
            await g.flush()
            rows = [read_jsonl(Path(d) / "metrics.jsonl") for d in g.run_dirs]
            assert [[r["train/x"] for r in rs] for rs in rows] == [
                [0.0, 1.0, 2.0, 3.0, 4.0],
                [0.0, -1.0, -2.0, -3.0, -4.0],
            ]
        tg.cancel_scope.cancel()
    assert ticks > before  # the loop ran while the group flushed and finished
    reports = await g.finish()  # idempotent: the reports of the block's end
    assert [r.steps for r in reports] == [5, 5] and g.should_stop == (False, False)


def test_plain_steps_fold_as_blocks_into_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop of plain group steps (each run's folded as blocks of columns, a NaN and a
    key that comes and goes among them) writes, read back, what the same loop split one
    event a run writes: TensorBoard bit for bit, JSONL and CSV line for line (wall time
    aside)."""
    from aoff._core import _fold_columns, _groupbatch

    loss = np.random.default_rng(1).standard_normal((120, 3)).astype(np.float32)
    loss[50, 1] = np.nan
    taken: list[int] = []
    real = _fold_columns.RunFold.take_block

    def spy(self: _fold_columns.RunFold, *args: object) -> object:
        got = real(self, *args)  # type: ignore[arg-type]
        taken.append(0 if got is None else len(got))
        return got

    def run(name: str) -> list[str]:
        folder = tmp_path / name
        with _group(folder, runs=3, backends=("jsonl", "csv")) as g:
            for i in range(120):
                m = {"q_loss": loss[i], "lr": 3e-4}
                if i % 40 == 39:
                    m["eval/return"] = loss[i] * 2
                g.log_step(i, m)
        assert [r.steps for r in g.finish()] == [120] * 3
        return g.run_dirs

    monkeypatch.setattr(_fold_columns.RunFold, "take_block", spy)
    blocks = run("blocks")
    assert sum(taken) > 180  # most of the 360 run-steps went as columns
    monkeypatch.setattr(_groupbatch, "BLOCK_MIN", 10**9)
    events = run("events")
    for a, b in zip(blocks, events, strict=True):
        tb = read_tensorboard(a)
        assert repr(tb) == repr(read_tensorboard(b)) and len(tb["train/q_loss"]) == 120  # NaN
        rows = [read_jsonl(Path(d) / "metrics.jsonl") for d in (a, b)]
        for row in rows[0] + rows[1]:
            del row["wall_time"]
        assert repr(rows[0]) == repr(rows[1]) and len(rows[0]) >= 120  # and alerts
        cells = [
            [line.split(",")[:2] + line.split(",")[3:] for line in csv.read_text().splitlines()]
            for csv in (Path(a) / "progress.csv", Path(b) / "progress.csv")
        ]
        assert cells[0] == cells[1] and len(cells[0]) == 121 and "eval/return" in cells[0][0]


@pytest.mark.parametrize("first", ["fails", "refuses"])
def test_a_failing_block_fold_leaves_its_steps_to_the_per_event_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], first: str
) -> None:
    """The run fold fails on a block (a bug, forced): at once, or after refusing it, once
    the block's first step was folded by itself, which is then never folded again."""
    from aoff._core import _fold_columns

    calls: list[int] = []

    def broken(*_: object) -> None:
        calls.append(1)
        if first == "refuses" and len(calls) == 1:
            return None
        raise RuntimeError("a bug")

    monkeypatch.setattr(_fold_columns.RunFold, "take_block", broken)
    with _group(tmp_path, runs=2, backends=("jsonl",)) as g:
        for i in range(60):
            g.log_step(i, {"loss": np.array([1.0, 2.0]) / (i + 1)})
    reports = g.finish()
    assert [(r.steps, r.backend_written["jsonl"], r.invalid_values) for r in reports] == [
        (60, 60, 0)
    ] * 2
    assert "the run fold failed (RuntimeError: a bug)" in capfd.readouterr().err


@both
def test_a_log_many_block_goes_whole_and_a_dropped_one_counts_its_steps(
    tmp_path: Path, pump: str
) -> None:
    """``aoff.jax.log_many``'s group side: a block of floats crosses the group's buffer as
    one item (to the agent too), each run's values bit for bit; over capacity, a block
    is refused whole and counted as its ``K`` steps in every run's report."""
    runs, k, blocks = 3, 5, 120
    x = np.random.default_rng(4).standard_normal((blocks * k, runs)).astype(np.float32)
    g = _group(tmp_path, runs=runs, capacity=8, overflow="drop_newest", pump=pump)
    for b in range(blocks):
        rows = slice(b * k, (b + 1) * k)
        steps = np.arange(b * k, (b + 1) * k)[:, None].repeat(runs, 1)
        g._log_block(steps, {"x": x[rows]})  # the first two always fit: 0, then 5 < 8
    reports = g.finish()
    assert len({(r.steps, r.dropped_events) for r in reports}) == 1
    assert all(r.steps + r.dropped_events == blocks * k for r in reports)
    assert reports[0].dropped_events % k == 0  # whole blocks
    for r, run in enumerate(g.run_dirs):
        pts = read_tensorboard(run)["train/x"]
        assert [s for s, _ in pts][: 2 * k] == list(range(2 * k))
        got = np.array([v for _, v in pts], dtype=np.float32)
        assert got[: 2 * k].tobytes() == x[: 2 * k, r].tobytes()
