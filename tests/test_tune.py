"""``aoff.ray.TuneCallback`` under a real ``tune.Tuner`` on a local Ray session (2 CPUs).

One Ray session for the module. A sweep of 4 trials (2 learning rates x 2 seeds) runs
with Tune's own ``TBXLoggerCallback`` and aoff's side by side: each trial's aoff run
reads back (TensorBoard's ``EventAccumulator``) with the same scalar tags, steps and
values as the file Tune's callback wrote in the trial's folder; ``aoff compare`` on the
sweep folder groups the runs by learning rate with no flags (and draws them on Tune's
training_iteration, one of the runs' axes). A second sweep has a trial
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
from aoff._adapters._tune import AXES

pytestmark = pytest.mark.cluster

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
    # a one-node cluster of our own (never another test's on this host), without the
    # dashboard, the autoscaler monitor or the log monitor (log_to_driver=False): nothing
    # here reads them, and each is one more Python process to start (~1 s of CPU here)
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "include_dashboard": False,
            "no_monitor": True,
            "include_log_monitor": False,
        },
    )
    try:
        ray.init(address=cluster.address, logging_level=logging.WARNING, log_to_driver=False)
        yield
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
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
        # a trial's actor runs the next trial (Tune's reset of a function trainable): half
        # the actor start-ups, ~40 % of a sweep here; the callbacks run in this process,
        # on the same results either way
        tune_config=tune.TuneConfig(max_concurrent_trials=2, reuse_actors=True),
    )
    return tuner.fit()


def _leaves(d: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """A nested result's ``(key path, value)`` pairs (a key with "/" stays one part)."""
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, (*path, k))
        else:
            yield (*path, k), v


def finite(run: dict[str, list[tuple[int, float]]]) -> dict[str, list[tuple[int, float]]]:
    """A run's series without their NaN points (and the series left empty)."""
    kept = {tag: [(s, v) for s, v in points if not math.isnan(v)] for tag, points in run.items()}
    return {tag: points for tag, points in kept.items() if points}


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
        # Tune's tags are TBX's; aoff's run adds Tune's clocks as its axes
        assert sorted(t for t in got if not t.startswith("axis/")) == sorted(want)
        assert sorted(t for t in got if t.startswith("axis/")) == sorted("axis/" + k for k in AXES)
        for tag in want:
            assert got[tag] == want[tag], tag
        assert [s for s, _ in want["ray/tune/loss"]] == [100 * i for i in range(1, 9)]
    summary = json.loads((root / "aoff" / "sweep.json").read_text())["trials"]
    assert sorted(t["status"] for t in summary) == ["completed"] * 4
    config = json.loads((root / "aoff" / "lr=0.2-seed2" / "config.json").read_text())
    assert config["lr"] == 0.2 and config["seed"] == 2


def test_tunes_clocks_are_each_points_axes(sweep: tuple[Path, Any]) -> None:
    """``training_iteration``, ``timesteps_total`` and ``time_total_s`` beside every
    point, as Tune's own results (``progress.csv``) have them."""
    root, results = sweep
    result = next(r for r in results if r.config["lr"] == 0.2 and r.config["seed"] == 2)
    tune_rows = result.metrics_dataframe
    df = aoff.read_scalars(root / "aoff" / "lr=0.2-seed2", ["ray/tune/loss"], axes=True)
    assert list(df["step"]) == list(tune_rows["timesteps_total"])
    assert list(df["training_iteration"]) == list(tune_rows["training_iteration"])
    assert list(df["timesteps_total"]) == list(tune_rows["timesteps_total"])
    # TensorBoard keeps a scalar as float32
    assert list(df["time_total_s"]) == pytest.approx(list(tune_rows["time_total_s"]), rel=1e-6)


def test_compare_groups_the_sweep_by_configuration(
    sweep: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = sweep
    capsys.readouterr()
    assert main(["compare", str(root / "aoff"), "--metric", "ray/tune/loss", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {g["name"]: g["runs"] for g in got["groups"]} == {"lr=0.01": 2, "lr=0.2": 2}
    # on Tune's iterations rather than its timesteps (the TensorBoard step)
    args = ["compare", str(root / "aoff"), "--metric", "ray/tune/loss", "--json"]
    assert main([*args, "--x", "training_iteration"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["x"] == "training_iteration"
    for group in got["groups"]:  # a grid from the first iteration to the last
        assert (group["curve"]["steps"][0], group["curve"]["steps"][-1]) == (1, 8)


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
    # TensorBoard's HParams: the failed trial's run ended as a failure, the others did not
    from tensorboard.plugins.hparams import api_pb2

    from .test_config import session_infos

    for kind, want in (("raise", api_pb2.STATUS_FAILURE), ("ok", api_pb2.STATUS_SUCCESS)):
        hparams, end = session_infos(tmp_path / "aoff" / status[kind]["run"])
        assert hparams["kind"] == kind and end.status == want, kind
    # the NaN is in the run (Tune's TBX callback leaves NaN out)
    nan_run = tmp_path / "aoff" / status["nan"]["run"]
    assert any(math.isnan(v) for _, v in scalars(nan_run)["ray/tune/loss"])


@pytest.mark.slow
def test_rllib_ppo_trials_with_episode_stats(ray_session: None, tmp_path: Path) -> None:
    """PPO on CartPole, a trial of 2 iterations, tiny batches: the run reads back as
    Tune's TBX callback wrote it, with the episode returns' min, max and mean. One
    trial: a trial is a process that imports torch and RLlib (~10 s of CPU here), and
    each trial having its own run, as Tune's callback has its own file, is the sweep's
    test above (the callback's path is the same for any trainable)."""
    pytest.importorskip("ray.rllib")
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()  # type: ignore[no-untyped-call]
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0, rollout_fragment_length=64)
        .learners(num_learners=0)
        .training(
            lr=1e-3,
            train_batch_size_per_learner=64,
            minibatch_size=32,
            num_epochs=1,
        )
        .rl_module(model_config={"fcnet_hiddens": [8], "vf_share_layers": True})
        .callbacks(aoff.ray.RLlibEpisodeStats)
        .debugging(seed=3)
    )
    cb = aoff.ray.TuneCallback(tmp_path / "aoff", pump="thread")
    tuner = tune.Tuner(
        "PPO",
        param_space=config,  # type: ignore[arg-type]
        run_config=tune.RunConfig(
            storage_path=str(tmp_path),
            stop={"training_iteration": 2},
            callbacks=[TBXLoggerCallback(), cb],  # type: ignore[no-untyped-call]
            verbose=0,
        ),
    )
    # the config's classes and functions are stored as text, with one warning a trial
    with pytest.warns(aoff.AoffWarning, match="stored as str"):
        results = tuner.fit()
    assert len(results) == 1 and not results.errors
    runs = sorted(p for p in (tmp_path / "aoff").iterdir() if p.is_dir())
    assert len(runs) == 1
    # RLlib reports some learner counts as NaN: Tune's TBX callback leaves those points
    # out, aoff writes them (its nonfinite rule sees them); every other point is the same
    got_all = [finite(scalars(run)) for run in runs]
    for got in got_all:  # Tune's clocks are the runs' axes (RLlib's results: no timesteps_total)
        assert [v for _, v in got.pop("axis/training_iteration")] == [1, 2]
        assert len(got.pop("axis/time_total_s")) == 2
        assert not [t for t in got if t.startswith("axis/")]
    for result in (results[i] for i in range(len(results))):
        want = scalars(Path(result.path))
        (got,) = [g for g in got_all if g == want]
        flat = {"/".join(k): v for k, v in _leaves(result.metrics or {})}
        low, mean, high = (
            flat[f"env_runners/aoff/episode_return_{k}"] for k in ("min", "mean", "max")
        )
        assert 0 < low <= mean <= high
        assert [v for _, v in got["ray/tune/env_runners/aoff/episode_return_max"]][-1] == (
            pytest.approx(high)
        )


def test_aoff_ray_imports_tune_and_rllib_only_when_asked() -> None:
    import subprocess
    import sys

    code = (
        "import sys, aoff.ray; a = [m in sys.modules for m in ('ray.tune', 'ray.rllib')]; "
        "aoff.ray.TuneCallback; print(a, 'ray.tune' in sys.modules)"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(aoff.__file__).resolve().parent.parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.split("\n")[0] == "[False, False] True", out.stderr


def test_the_old_rllib_callback_name_is_a_deprecated_alias() -> None:
    """``aoff.ray.EpisodeStats`` read as ``aoff.torch.EpisodeStats``: renamed, the old
    name still the same class, with a warning that names the new one."""
    with pytest.warns(DeprecationWarning, match="RLlibEpisodeStats"):
        old = aoff.ray.EpisodeStats
    assert old is aoff.ray.RLlibEpisodeStats


def test_run_names_group_by_configuration() -> None:
    from aoff._adapters._tune import run_name

    seed = ("seed",)
    assert run_name({"lr": 0.001, "seed": 3}, seed, 0) == "lr=0.001-seed3"
    assert run_name({"b": {"x": 1}, "a": "x y/z"}, seed, 2) == "a=x_y_z,b_x=1-s2"
    long_a = run_name({"k": "v" * 200, "seed": 1}, seed, 0)
    long_b = run_name({"k": "v" * 199 + "w", "seed": 1}, seed, 0)
    assert long_a != long_b and len(long_a) < 120 and long_a.endswith("-seed1")
    with pytest.raises(TypeError, match="seed_keys"):
        aoff.ray.TuneCallback("x", seed_keys="seed")
    with pytest.raises(TypeError, match="dashboard"):
        aoff.ray.TuneCallback("x", dashboard=True)
