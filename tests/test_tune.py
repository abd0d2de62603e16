"""``aoff.ray.TuneCallback`` under a real ``tune.Tuner`` on a local Ray session (2 CPUs).

One Ray session for the module. A sweep of 4 trials (2 learning rates x 2 seeds) runs
with Tune's own ``TBXLoggerCallback`` and aoff's side by side: each trial's aoff run
reads back (TensorBoard's ``EventAccumulator``) with the same scalar tags, steps and
values as the file Tune's callback wrote in the trial's folder; ``aoff compare`` on the
sweep folder groups the runs by learning rate with no flags. A second sweep has a trial
that goes NaN (stopped by its ``nonfinite(stop=True)`` rule through the callback's
``Stopper``), one that raises (a failed run) and one that completes: ``sweep.json`` says
which is which and why.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray.tune")
pytest.importorskip("tensorboardX")

import ray
from ray import tune
from ray.tune.logger import TBXLoggerCallback
from tensorboard.backend.event_processing import event_accumulator as ea

import aoff
import aoff.ray
from aoff import rules
from aoff.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
ITERATIONS = 8


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    """One local Ray session of 2 CPUs for the module, torn down after it."""
    src = str(Path(aoff.__file__).resolve().parent.parent)
    before = os.environ.get("PYTHONPATH")
    # Tune's workers import this module (the trainable) and aoff, as this process does
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, str(ROOT), before) if p)
    # Ray installs its own SIGINT/SIGTERM handlers in this process: put them back after
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # address="local": a new instance of our own, never another test's cluster on this host
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
    )
    try:
        yield
    finally:
        ray.shutdown()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def trainable(config: dict[str, Any]) -> None:
    """A learning curve per learning rate; ``kind`` ``"nan"`` goes NaN at iteration 3
    (and would go on for long), ``"raise"`` raises at iteration 2."""
    import random

    rng = random.Random(config["seed"])
    kind = config.get("kind", "ok")
    for i in range(1, (10_000 if kind == "nan" else ITERATIONS) + 1):
        if kind == "raise" and i == 2:
            raise RuntimeError("the trainable broke")
        loss = 1.0 / (1 + config["lr"] * 50 * i) + 0.01 * rng.random()
        if kind == "nan" and i >= 3:
            loss = math.nan
        tune.report(
            {
                "loss": loss,
                "episode": {"return": -loss * 100, "len": 200},
                "timesteps_total": 100 * i,
                "q": [rng.random() for _ in range(8)],
            }
        )


def fit(storage: Path, space: dict[str, Any], callbacks: list[Any], stop: Any = None) -> Any:
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        run_config=tune.RunConfig(
            name="sweep", storage_path=str(storage), callbacks=callbacks, stop=stop, verbose=0
        ),
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
    )
    return tuner.fit()


def scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    acc = ea.EventAccumulator(str(folder), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


@pytest.fixture(scope="module")
def sweep(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("tune")
    space = {"lr": tune.grid_search([0.01, 0.2]), "seed": tune.grid_search([1, 2])}
    cb = aoff.ray.TuneCallback(root / "aoff", pump="thread", backends=("jsonl",))
    results = fit(root, space, [TBXLoggerCallback(), cb])  # type: ignore[no-untyped-call]
    return root, results


def test_each_trial_reads_back_as_tunes_tbx_callback_wrote_it(sweep: tuple[Path, Any]) -> None:
    root, results = sweep
    assert len(results) == 4 and not results.errors
    names = sorted(p.name for p in (root / "aoff").iterdir() if p.is_dir())
    assert names == ["lr=0.01-seed1", "lr=0.01-seed2", "lr=0.2-seed1", "lr=0.2-seed2"]
    for result in results:
        cfg = result.config
        want = scalars(Path(result.path))
        got = scalars(root / "aoff" / f"lr={cfg['lr']:g}-seed{cfg['seed']}")
        assert "ray/tune/loss" in want and "ray/tune/episode/return" in want
        assert sorted(got) == sorted(want)
        for tag in want:
            assert got[tag] == want[tag], tag
        assert [s for s, _ in want["ray/tune/loss"]] == [100 * i for i in range(1, 9)]
    summary = json.loads((root / "aoff" / "sweep.json").read_text())["trials"]
    assert sorted(t["status"] for t in summary) == ["completed"] * 4
    config = json.loads((root / "aoff" / "lr=0.2-seed2" / "config.json").read_text())
    assert config["lr"] == 0.2 and config["seed"] == 2


def test_compare_groups_the_sweep_by_configuration(
    sweep: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = sweep
    capsys.readouterr()
    assert main(["compare", str(root / "aoff"), "--metric", "ray/tune/loss", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {g["name"]: g["runs"] for g in got["groups"]} == {"lr=0.01": 2, "lr=0.2": 2}


def test_a_nan_trial_is_stopped_and_a_failed_one_says_so(ray_session: None, tmp_path: Path) -> None:
    space = {"lr": 0.1, "seed": 1, "kind": tune.grid_search(["ok", "nan", "raise"])}
    cb = aoff.ray.TuneCallback(tmp_path / "aoff", pump="thread", rules=[rules.nonfinite(stop=True)])
    results = fit(tmp_path, space, [cb], stop=cb.stopper)
    by_kind = {r.config["kind"]: r for r in results}
    # stopped by Tune, long before the trainable's own end
    assert by_kind["nan"].metrics["training_iteration"] < 10_000
    assert by_kind["raise"].error is not None
    summary = json.loads((tmp_path / "aoff" / "sweep.json").read_text())["trials"]
    status = {t["run"].split("kind=")[1].split(",")[0]: t for t in summary}
    assert status["ok"]["status"] == "completed"
    assert status["nan"]["status"] == "stopped"
    assert "nonfinite on ray/tune/loss" in status["nan"]["why"][0]
    assert status["raise"]["status"] == "failed"
    # the NaN is in the run (Tune's TBX callback leaves NaN out)
    nan_run = tmp_path / "aoff" / status["nan"]["run"]
    assert any(math.isnan(v) for _, v in scalars(nan_run)["ray/tune/loss"])
