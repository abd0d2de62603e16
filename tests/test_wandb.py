"""The W&B backend against real wandb in offline mode (no mocks, no network).

What was logged is read back from the offline ``run-*.wandb`` file with
:mod:`aoff.testing`, which parses wandb's own protobuf records.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aoff._backends._base import Backend, BackendContext
from aoff._backends._wandb import WandbBackend
from aoff._core._records import RunConfig, StepRecord, TextRecord, WriterRecord
from aoff.testing import read_wandb_config as read_config
from aoff.testing import read_wandb_history as read_history
from aoff.testing import wait_for_wandb_runs
from aoff.testing._wandb_offline import iter_records

wandb = pytest.importorskip("wandb")

TAGS = ["axis/iteration", "axis/env_steps_total", *(f"train/m{j}" for j in range(28))]


def val(step: int, j: int) -> float:
    return math.cos(step * 0.01 + j) * (j + 1)


def make_records(n: int, start: int = 0) -> list[StepRecord]:
    return [
        StepRecord(s * 4, s, 1000.0 + s, tuple((t, val(s, j)) for j, t in enumerate(TAGS)))
        for s in range(start, start + n)
    ]


@pytest.fixture
def wandb_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = tmp_path / "wb"
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(d))
    monkeypatch.setenv("WANDB_SILENT", "true")
    yield d
    if wandb.run is not None:  # never leak a run into the next test
        wandb.run.finish()


def run_file(root: Path) -> Path:
    """The one offline run file under ``root``, once it holds its exit record: wandb's
    offline writer is a separate service process, and under load its last block can
    reach the file a moment after ``finish()`` has returned."""
    (path,) = wait_for_wandb_runs(root, 1)
    return path


def finished_history(root: Path) -> list[dict[str, Any]]:
    """The history of the one offline run under ``root``, all of it (see ``run_file``)."""
    return read_history(run_file(root))


def finished_runs(
    root: Path, count: int
) -> tuple[dict[str, tuple[Path, Any]], dict[str, list[dict[str, Any]]]]:
    """The ``count`` offline runs under ``root`` by display name (its file and ``run``
    record) and their history rows, once each file holds its exit record."""
    files: dict[str, tuple[Path, Any]] = {}
    for f in wait_for_wandb_runs(root, count):
        for r in iter_records(f):
            if r.WhichOneof("record_type") == "run":
                files[r.run.display_name] = (f, r.run)
    return files, {k: read_history(f) for k, (f, _) in files.items()}


@pytest.mark.slow  # starts wandb's service process
@pytest.mark.anyio
async def test_offline_run_1000_steps(wandb_dir: Path) -> None:
    backend = WandbBackend(project="aoff-test", dir=wandb_dir, tags=["t1"], config={"lr": 3e-4})
    assert isinstance(backend, Backend) and backend.name == "wandb"
    said: list[str] = []
    cfg = RunConfig(algo_name="SAC", env_name="Pendulum-v1", num_envs=8, obs_dim=3, action_dim=1)
    await backend.open(BackendContext(config=cfg, say=said.append))
    assert said == ["[dim]W&B logging to project: aoff-test, run: SAC_Pendulum-v1[/]"]
    assert backend.owns_run
    assert wandb.run is backend.run  # like the seed's reinit=True: the global run is set

    records = make_records(1000)
    for i in range(0, 1000, 100):
        await backend.write(records[i : i + 100])
        await backend.flush()
    await backend.close()
    assert wandb.run is None  # the backend created the run, so it finished it

    path = run_file(wandb_dir)
    rows = read_history(path)
    assert len(rows) == 1000
    assert [r["_step"] for r in rows] == [s * 4 for s in range(1000)]
    last = rows[-1]
    assert last["iteration"] == 999
    for j, tag in enumerate(TAGS):
        assert last[tag] == pytest.approx(val(999, j), rel=1e-12, abs=1e-12), tag
    assert rows[500]["train/m5"] == pytest.approx(val(500, 7), rel=1e-12)

    run_records = [r.run for r in iter_records(path) if r.WhichOneof("record_type") == "run"]
    assert run_records and run_records[0].display_name == "SAC_Pendulum-v1"
    assert list(run_records[0].tags) == ["t1"]
    config = {
        item.key: json.loads(item.value_json)
        for item in run_records[0].config.update
        if item.key != "_wandb"
    }
    assert {k: (v["value"] if isinstance(v, dict) else v) for k, v in config.items()} == {
        "algo": "SAC",
        "env": "Pendulum-v1",
        "num_envs": 8,
        "obs_dim": 3,
        "action_dim": 1,
        "max_iterations": 1500,
        "lr": 3e-4,
    }


@pytest.mark.slow  # starts wandb's service process
@pytest.mark.anyio
async def test_every_producer_record_is_kept_in_a_run_of_its_own(wandb_dir: Path) -> None:
    """``log.remote(name)`` records (README, "Many producers"): several per learner step
    are all kept, each a row of the producer's own W&B run (in the learner run's group),
    charted against its own ``step``; the learner's rows are untouched."""
    backend = WandbBackend(project="aoff-test", dir=wandb_dir, group="g1")
    await backend.open(BackendContext(say=lambda _: None))

    def producer(name: str, step: int, it: int, x: float) -> StepRecord:
        return StepRecord(step, it, 0.0, (("train/x", x),), producer=name)

    await backend.write(
        [
            producer("c0", 5, 1, 0.5),  # before any learner step
            StepRecord(10, 1, 0.0, (("train/loss", 1.0),)),
            producer("c0", 7, 2, 0.7),  # these three come between two learner steps
            producer("c1", 7, 1, 0.1),
            producer("c0", 7, 3, 0.9),  # the same step as the one before: kept too
            StepRecord(20, 2, 0.0, (("train/loss", 2.0),)),
        ]
    )
    await backend.close()
    files, rows = finished_runs(wandb_dir, 3)
    assert {k: len(v) for k, v in rows.items()} == {"RL_": 2, "RL_/c0": 3, "RL_/c1": 1}
    learner = files["RL_"][1]

    def points(name: str) -> list[tuple[Any, ...]]:
        return [(r["step"], r["iteration"], r["train/x"]) for r in rows[name]]

    assert points("RL_/c0") == [(5, 1, 0.5), (7, 2, 0.7), (7, 3, 0.9)]
    assert points("RL_/c1") == [(7, 1, 0.1)]
    assert [(r["_step"], r["iteration"], r["train/loss"]) for r in rows["RL_"]] == [
        (10, 1, 1.0),
        (20, 2, 2.0),
    ]
    assert not any(k.startswith(("c0", "step", "train/x")) for r in rows["RL_"] for k in r)
    for name in ("RL_/c0", "RL_/c1"):
        f, run = files[name]
        assert (run.run_group, run.job_type, run.project) == ("g1", "producer", learner.project)
        assert read_config(f) == {"producer": name[4:], "learner_run": learner.run_id}
        # W&B charts the producer against its own step (define_metric, read back)
        metrics = [r.metric for r in iter_records(f) if r.WhichOneof("record_type") == "metric"]
        assert [(m.name, m.glob_name, m.step_metric) for m in metrics] == [
            ("step", "", ""),
            ("", "*", "step"),
        ]


@pytest.mark.anyio
async def test_active_run_is_reused_and_not_finished(wandb_dir: Path) -> None:
    user_run = wandb.init(project="users-own", name="mine", dir=str(wandb_dir))
    try:
        backend = WandbBackend(project="ignored", name="ignored")
        said: list[str] = []
        await backend.open(BackendContext(say=said.append))
        assert backend.run is user_run and not backend.owns_run
        assert said == ["[dim]W&B logging to project: users-own, run: mine[/]"]
        await backend.write(make_records(10))
        await backend.close()
        assert wandb.run is user_run  # still active: not ours to finish
        user_run.log({"user/extra": 1.0}, step=100)
    finally:
        user_run.finish()
    rows = finished_history(wandb_dir)
    assert [r["_step"] for r in rows] == [*(s * 4 for s in range(10)), 100]
    assert rows[-1]["user/extra"] == 1.0
    assert rows[3]["train/m0"] == pytest.approx(val(3, 2), rel=1e-12)


@pytest.mark.anyio
async def test_all_wandb_calls_on_one_thread(
    wandb_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: set[str] = set()
    real_init = wandb.init

    def spy_init(*args: Any, **kwargs: Any) -> Any:
        seen.add(threading.current_thread().name)
        run = real_init(*args, **kwargs)
        real_log, real_finish = run.log, run.finish

        def log(*a: Any, **k: Any) -> Any:
            seen.add(threading.current_thread().name)
            return real_log(*a, **k)

        def finish(*a: Any, **k: Any) -> Any:
            seen.add(threading.current_thread().name)
            return real_finish(*a, **k)

        monkeypatch.setattr(run, "log", log)
        monkeypatch.setattr(run, "finish", finish)
        return run

    monkeypatch.setattr(wandb, "init", spy_init)
    backend = WandbBackend(project="aoff-test", dir=wandb_dir)
    await backend.open(BackendContext())
    await backend.write(make_records(5))
    await backend.write(make_records(5, start=5))
    await backend.close()
    assert seen == {"aoff-wandb"}
    assert len(finished_history(wandb_dir)) == 10


@pytest.mark.anyio
async def test_missing_wandb_is_a_noop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # what an absent package looks like
    said: list[str] = []
    backend = WandbBackend(project="p")
    await backend.open(BackendContext(say=said.append))
    await backend.write(make_records(3))
    await backend.flush()
    await backend.close()
    assert said == ["[yellow]wandb not installed[/]"]
    assert backend.disabled and backend.run is None


@pytest.mark.anyio
async def test_close_without_open() -> None:
    backend = WandbBackend(project="p")
    await backend.close()
    await backend.close()
    with pytest.raises(RuntimeError):
        await backend.write(make_records(1))


@pytest.mark.anyio
async def test_waiting_on_the_worker_never_blocks_the_loop() -> None:
    """A hung wandb call can be abandoned; the call itself still runs to completion."""
    import anyio

    from aoff._backends._threads import SerialWorker, wait_future

    worker = SerialWorker("aoff-test-worker")
    release = threading.Event()
    done: list[str] = []

    def slow() -> str:
        release.wait(10)
        done.append("slow")
        return "slow"

    ticks = 0
    with anyio.move_on_after(0.3) as scope:
        fut = worker.submit(slow)
        async with anyio.create_task_group() as tg:

            async def tick() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await anyio.sleep(0.01)  # a ticker: counts the loop's turns, waits for nothing

            tg.start_soon(tick)
            await wait_future(fut)
    assert scope.cancelled_caught and ticks >= 5  # the loop kept running meanwhile
    assert not fut.cancelled()  # abandoned, not cancelled: queued work is not lost
    nxt = worker.submit(lambda: "next")
    release.set()
    assert await wait_future(nxt) == "next"  # in order: slow ran first
    assert done == ["slow"] and fut.result() == "slow"
    worker.stop()

    failing = SerialWorker("aoff-test-worker-2")
    with pytest.raises(ZeroDivisionError):
        await wait_future(failing.submit(lambda: 1 / 0))
    failing.stop()


@pytest.mark.slow  # starts wandb's service process
@pytest.mark.anyio
async def test_summarywriter_records_are_rows_of_their_own_with_global_step(
    wandb_dir: Path,
) -> None:
    """aoff.tensorboard's records: the call's step may go back, so W&B numbers the rows
    and the step is a ``global_step`` value; a sub-run's tag is under its folder."""
    backend = WandbBackend(project="aoff-test", dir=wandb_dir)
    await backend.open(BackendContext())
    await backend.write(
        [
            WriterRecord(5, 1.0, (("loss", 0.5),)),
            WriterRecord(3, 2.0, (("loss", 0.25),)),  # back: still a row
            WriterRecord(3, 3.0, (("q", 1.0),), run="q_a"),
            TextRecord(4, 4.0, (("note", "hi"),)),  # no scalar; not an alert
        ]
    )
    await backend.close()
    rows = finished_history(wandb_dir)
    got = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    assert got == [
        {"global_step": 5, "loss": 0.5},
        {"global_step": 3, "loss": 0.25},
        {"global_step": 3, "q_a/q": 1.0},
    ]


@pytest.mark.slow  # starts wandb's service process
@pytest.mark.anyio
async def test_alerts_go_to_the_runs_summary_offline(wandb_dir: Path) -> None:
    """The run's alerts (``aoff.rules``) reach W&B as the summary key ``aoff/alerts``,
    every alert so far; offline there is no ``run.alert`` to call, and none is tried."""
    from aoff._core._rules import ALERT_TAG

    backend = WandbBackend(project="aoff-test", dir=wandb_dir)
    await backend.open(BackendContext(config=RunConfig(), say=lambda _: None))
    alert = TextRecord(3, 1000.0, ((ALERT_TAG, "q is nan at step 3"),))
    second = TextRecord(5, 1001.0, ((ALERT_TAG, "stalled"),))
    await backend.write([*make_records(3), alert, *make_records(2, 3), second])
    await backend.close()
    assert backend.alert_error is None
    summary: dict[str, Any] = {}
    for r in iter_records(run_file(wandb_dir)):
        if r.WhichOneof("record_type") == "summary":
            for item in r.summary.update:
                summary[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    assert summary[ALERT_TAG] == ["q is nan at step 3", "stalled"]
    assert len(finished_history(wandb_dir)) == 5  # the alerts are no history rows


@pytest.mark.slow  # starts wandb's service process
@pytest.mark.anyio
async def test_a_late_record_is_a_row_of_its_own_never_dropped(wandb_dir: Path) -> None:
    """W&B drops a row whose step goes back (a warning in its own log only); aoff keeps
    a late record of the run's own as a row at W&B's next step, its own step as
    ``late_step`` (defined as a metric), counted and said once (issue #50)."""
    backend = WandbBackend(project="aoff-test", dir=wandb_dir)
    said: list[str] = []
    await backend.open(BackendContext(say=said.append))

    def rec(step: int, it: int) -> StepRecord:
        return StepRecord(step, it, 0.0, (("train/loss", float(it)),))

    await backend.write([rec(10, 1), rec(20, 2), rec(15, 3), rec(12, 4), rec(30, 5)])
    await backend.close()
    rows = finished_history(wandb_dir)
    assert [(r["iteration"], r["train/loss"]) for r in rows] == [
        (1, 1.0),
        (2, 2.0),
        (3, 3.0),
        (4, 4.0),
        (5, 5.0),
    ]
    assert [r.get("late_step") for r in rows] == [None, None, 15, 12, None]
    assert [r["_step"] for r in rows] == [10, 20, 21, 22, 30]
    assert backend.late == 2
    assert [m for m in said if "late_step" in m] == [
        "[yellow]W&B: a record at step 15 came after step 20; kept as a row at W&B's next "
        "step, its own step as late_step[/]"
    ]
    metrics = [
        r.metric
        for r in iter_records(run_file(wandb_dir))
        if r.WhichOneof("record_type") == "metric"
    ]
    assert "late_step" in [m.name for m in metrics]


@pytest.mark.slow  # starts wandb's service process
@pytest.mark.anyio
async def test_x_charts_every_metric_on_an_axis_and_keeps_every_row(wandb_dir: Path) -> None:
    """``WandbBackend(x="grad_steps")``: ``define_metric("*", step_metric=...)`` on the
    axis's tag, one row a record at W&B's own row number, so a record whose step and axis
    went back is kept (issue #50); read back from the offline run."""
    with pytest.raises(ValueError, match="x must be"):
        WandbBackend(project="p", x="wall_time")
    backend = WandbBackend(project="aoff-test", dir=wandb_dir, x="grad_steps")
    said: list[str] = []
    await backend.open(BackendContext(say=said.append))

    def rec(step: int, it: int, grad: float | None) -> StepRecord:
        axis = () if grad is None else (("axis/grad_steps", grad),)
        return StepRecord(step, it, 0.0, (*axis, ("train/loss", float(it))))

    await backend.write([rec(10, 1, None), rec(20, 2, 64.0), rec(15, 3, 32.0), rec(30, 4, 96.0)])
    await backend.close()
    path = run_file(wandb_dir)
    rows = read_history(path)
    assert [(r["iteration"], r.get("axis/grad_steps")) for r in rows] == [
        (1, 0),  # W&B fills a row without the step metric with its last value
        (2, 64.0),
        (3, 32.0),
        (4, 96.0),
    ]
    assert [r["_step"] for r in rows] == [1, 2, 3, 4] and backend.late == 0
    metrics = [r.metric for r in iter_records(path) if r.WhichOneof("record_type") == "metric"]
    assert [(m.name, m.glob_name, m.step_metric) for m in metrics][:2] == [
        ("axis/grad_steps", "", ""),
        ("", "*", "axis/grad_steps"),
    ]
    assert backend.off_axis == 1
    assert [m for m in said if "x='grad_steps'" in m] == [
        "[yellow]W&B x='grad_steps': a record without a value on it is kept; W&B charts it "
        "at the axis's last value (0 before the first)[/]"
    ]


@pytest.mark.slow  # starts wandb's service process
def test_backend_options_and_the_seed_keywords_reach_wandb_init(wandb_dir: Path) -> None:
    """W&B's own options come through ``backend_options={"wandb": {...}}``; the original
    logger's ``wandb_*`` keywords are the same options (a documented conversion), merged."""
    from aoff import OffPolicyLogger

    log = OffPolicyLogger(
        log_backend="wandb",
        wandb_project="aoff-test",  # the seed's keyword
        backend_options={"wandb": {"name": "sac-b", "tags": ["sac", "b"], "notes": "n"}},
        display="none",
        pump="thread",
        handle_sigterm=False,
        system_interval=0,
    )
    log.log_step(1, {"train/loss": 0.5})
    assert log.finish().backend_written["wandb"] == 1
    (run,) = (
        r.run for r in iter_records(run_file(wandb_dir)) if r.WhichOneof("record_type") == "run"
    )
    assert (run.project, run.display_name, list(run.tags), run.notes) == (
        "aoff-test",
        "sac-b",
        ["sac", "b"],
        "n",
    )
