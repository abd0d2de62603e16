"""The MLflow backend against a real local tracking store, read back with ``MlflowClient``.

mlflow-skinny has no SQL store, and MLflow 3 refuses the file store unless
``MLFLOW_ALLOW_FILE_STORE=true``: the tests set it and use a ``file:`` URI in tmp_path.
"""

from __future__ import annotations

import importlib
import math
import pickle
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from aoff import MlflowBackend, OffPolicyLogger
from aoff._backends._base import Backend, BackendContext
from aoff._backends._mlflow import MAX_METRICS_PER_CALL, RUN_ID_FILE, metric_key
from aoff._core._config import HParams
from aoff._core._records import RunConfig, StepRecord
from aoff._pump._options import Options

pytestmark = pytest.mark.skipif(find_spec("mlflow") is None, reason="needs aoff[mlflow]")


def tracking() -> Any:
    """``mlflow.tracking``, imported by the tests that use it: every xdist worker collects
    every module, and only the one that runs these needs MLflow."""
    return importlib.import_module("mlflow.tracking")


TAGS = [f"train/m{j}" for j in range(7)]


def val(step: int, j: int) -> float:
    return math.sin(step * 0.1 + j) * (j + 1)


def records(n: int, start: int = 0) -> list[StepRecord]:
    return [
        StepRecord(s * 10, s, 1000.0 + s, tuple((t, val(s, j)) for j, t in enumerate(TAGS)))
        for s in range(start, start + n)
    ]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    return (tmp_path / "mlruns").as_uri()


def client(uri: str) -> Any:
    return tracking().MlflowClient(tracking_uri=uri)


def history(uri: str, run_id: str, key: str) -> list[tuple[int, float]]:
    got = client(uri).get_metric_history(run_id, key)
    return sorted((m.step, m.value) for m in got)


@pytest.mark.anyio
async def test_batches_within_limits_params_and_a_retry_that_duplicates_nothing(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = tracking().MlflowClient.log_batch

    def spy(self: Any, run_id: str, metrics: Sequence[Any] = (), **kw: Any) -> Any:
        calls.append(len(metrics) + len(kw.get("params", ())) + len(kw.get("tags", ())))
        return real(self, run_id, metrics=metrics, **kw)

    monkeypatch.setattr(tracking().MlflowClient, "log_batch", spy)
    backend = MlflowBackend(
        tracking_uri=store, experiment="sac", dir=tmp_path / "run", tags={"team": "rl"}
    )
    assert isinstance(backend, Backend) and backend.name == "mlflow"
    hp = HParams({f"p{i}": i for i in range(150)} | {"lr": 3e-4, "net": [64, 64]})
    said: list[str] = []
    cfg = RunConfig(algo_name="SAC", env_name="Pendulum-v1")
    await backend.open(BackendContext(config=cfg, say=said.append, hparams=hp))
    assert backend._state is not None
    run_id = backend._state.run_id
    assert (tmp_path / "run" / RUN_ID_FILE).read_text().strip() == run_id
    assert said[0].startswith("[dim]MLflow logging to file:") and run_id in said[0]

    await backend.write(records(300))  # 2,100 points: three log_batch calls
    # the store fails on the second chunk of the next batch once; the runner retries the
    # batch, and the chunk stored before the failure is not sent again
    batch = records(300, start=300)
    state = backend._state
    fail_once = {"at": 2}
    inner = state.client.log_batch

    def flaky(run_id: str, **kw: Any) -> Any:
        fail_once["at"] -= 1
        if fail_once["at"] == 0:
            raise OSError("store unavailable")
        return inner(run_id, **kw)

    state.client.log_batch = flaky
    with pytest.raises(OSError):
        await backend.write(batch)
    await backend.write(batch)  # the runner's retry: same batch
    state.client.log_batch = inner
    hp.merge({"lr": 1e-3, "tau": 0.005})  # lr changes (a tag), tau is new (a param)
    await backend.write(records(1, start=600))
    await backend.close()

    assert calls and max(calls) <= MAX_METRICS_PER_CALL
    assert all(n <= 100 for n in calls[:2])  # the 157 params: two calls of at most 100
    c = client(store)
    run = c.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "SAC_Pendulum-v1"
    assert c.get_experiment(run.info.experiment_id).name == "sac"
    assert run.data.tags["team"] == "rl"
    params = run.data.params
    assert params["algo"] == "SAC" and params["env"] == "Pendulum-v1"
    assert params["p149"] == "149" and params["net"] == "[64, 64]"
    assert params["lr"] == "0.0003" and params["tau"] == "0.005"
    assert run.data.tags["aoff.config.lr"] == "0.001"
    for j, tag in enumerate(TAGS):
        got = history(store, run_id, tag)
        assert [s for s, _ in got] == [s * 10 for s in range(601)], tag
        assert [v for _, v in got] == pytest.approx([val(s, j) for s in range(601)]), tag


def test_keys_mlflow_refuses_are_mapped() -> None:
    assert metric_key("train/loss") == "train/loss"
    assert metric_key("q(s,a)//mean") == "q_s_a_/mean"
    assert metric_key("/x/./y/") == "x/_/y"
    assert metric_key("") == "_"


def test_the_object_pickles_and_runs_in_the_agent(tmp_path: Path) -> None:
    backend = MlflowBackend(tracking_uri="file:///x", experiment="e", run_name="r")
    again = pickle.loads(pickle.dumps(backend))
    assert (again.tracking_uri, again.experiment, again.run_name) == ("file:///x", "e", "r")
    opts = Options(log_dir=str(tmp_path), backends=(backend,))
    assert opts.in_process_only() is None


def run_logger(log_dir: Path, steps: range, **kw: Any) -> Any:
    log = OffPolicyLogger(
        "SAC",
        env_name="Pendulum-v1",
        log_dir=str(log_dir),
        log_backend="none",
        handle_sigterm=False,
        backends=("jsonl", "mlflow"),
        system_interval=0,
        # the agent's MLflow backend imports mlflow and makes its run in open(), which a
        # 20-step run's finish() waits on: at load 8 that single call passed the default
        # 10 s and was given up (a hog run); what is tested here is MLflow's records
        finish_timeout=120,
        **kw,
    )
    for it in steps:
        log.log_step(it, metrics={"loss": it * 0.5}, reward=-float(it))
    return log.finish()


@pytest.mark.slow  # two agent processes, each importing mlflow (~1 s)
def test_by_name_in_the_agent_with_config_and_resume_into_the_same_run(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "aoff-e2e")
    log_dir = tmp_path / "run"
    report = run_logger(log_dir, range(1, 21), config={"sac": {"tau": 0.005}})
    assert report.complete and report.backend_written["mlflow"] == 20, report
    run_id = (log_dir / RUN_ID_FILE).read_text().strip()
    c = client(store)
    run = c.get_run(run_id)
    assert run.data.params["sac/tau"] == "0.005" and run.info.status == "FINISHED"
    first = dict(history(store, run_id, "reward/mean"))
    assert len(first) == 20

    resume_at = sorted(first)[9]  # the step of iteration 10
    report = run_logger(log_dir, range(11, 31), resume_step=resume_at)
    assert report.complete, report
    runs = c.search_runs([run.info.experiment_id])
    assert [r.info.run_id for r in runs] == [run_id]  # no second run
    assert c.get_run(run_id).info.status == "FINISHED"
    points = c.get_metric_history(run_id, "reward/mean")
    # 30 iterations; MLflow cannot delete points, so the first life's 11..20 stay too
    assert len({m.step for m in points}) == 30 and len(points) == 40
    assert {-m.value for m in points} == set(range(1, 31))


@pytest.mark.slow  # an agent process
def test_a_store_that_fails_costs_the_run_nothing_and_is_reported(
    store: str, tmp_path: Path
) -> None:
    # a run id that does not exist: open fails; training goes on, the report says so
    log = OffPolicyLogger(
        log_dir=str(tmp_path / "run"),
        log_backend="none",
        handle_sigterm=False,
        backends=("jsonl", MlflowBackend(tracking_uri=store, run_id="0" * 32)),
        system_interval=0,
    )
    for it in range(1, 6):
        log.log_step(it, metrics={"loss": 1.0})
    report = log.finish()
    assert report.backend_written["jsonl"] == 5
    assert report.backend_lost["mlflow"] == 5 and "mlflow" in report.backend_errors
    assert "open failed" in report.backend_errors["mlflow"]


def test_without_mlflow_the_constructor_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a)
    )
    with pytest.raises(ImportError, match=r"pip install 'aoff\[mlflow\]'"):
        OffPolicyLogger(log_backend="none", backends=("mlflow",), handle_sigterm=False)
