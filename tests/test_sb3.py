"""``aoff.sb3``: a real SB3 SAC run through SB3's own TensorBoard format and through aoff.

The drop-in claim is checked the way a user would see it: the same seeded run (SB3 on
CPU is deterministic for a fixed seed) written by SB3's ``configure(dir, ["tensorboard"])``
and by ``aoff.sb3.configure(dir, ["tensorboard"])``, both read back with TensorBoard's own
reader, show the same SB3 tags, steps and values (``time/fps`` and
``time/time_elapsed`` aside, which are clocks).
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aoff import AoffWarning

from .conftest import read_jsonl, read_tensorboard

sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

from stable_baselines3.common import logger as sb3_logger  # noqa: E402

import aoff.sb3  # noqa: E402

CLOCKS = {"time/fps", "time/time_elapsed"}


def train_sac(logger: Any, steps: int = 1500) -> None:
    torch.set_num_threads(1)
    model = sb3.SAC(
        "MlpPolicy",
        "Pendulum-v1",
        learning_starts=100,
        batch_size=32,
        buffer_size=2000,
        train_freq=4,
        gradient_steps=2,
        policy_kwargs={"net_arch": [16, 16]},
        seed=3,
        device="cpu",
    )
    model.set_logger(logger)
    model.learn(total_timesteps=steps, log_interval=1)


@pytest.mark.slow  # two short SB3 trainings (~10 s on the 2-core CI machine)
def test_sac_reads_back_the_same_as_sb3s_own_tensorboard_format(tmp_path: Path) -> None:
    ref_dir, ours_dir = tmp_path / "sb3", tmp_path / "aoff"
    ref = sb3_logger.configure(str(ref_dir), ["tensorboard", "csv"])
    train_sac(ref)
    ref.close()
    logger = aoff.sb3.configure(
        str(ours_dir), ["tensorboard"], algo_name="SAC", env_name="Pendulum-v1"
    )
    assert isinstance(logger, sb3_logger.Logger)
    train_sac(logger)
    logger.close()
    assert logger.report is not None and logger.report.complete, logger.report

    want = read_tensorboard(ref_dir)
    got = read_tensorboard(ours_dir)
    assert {"train/actor_loss", "train/critic_loss", "rollout/ep_rew_mean"} <= set(want)
    assert "time/total_timesteps" not in want  # SB3 excludes it from TensorBoard
    # what SB3's dumps carry, aoff's axes, reward, sampled system metrics
    # (system_interval=0 turns them off) and the logger's own cost (aoff/*, every few
    # seconds): none of the original logger's scaffolding (done rates, learner times,
    # perf/iter_ms), which SB3 never logs
    aoff_own = {
        "axis/iteration",
        "axis/env_steps_total",
        "axis/grad_steps",
        "reward/mean",
        "episode/length",
    }
    ours = {t for t in got if not t.startswith(("system/", "aoff/"))}
    assert ours == set(want) | aoff_own, ours ^ (set(want) | aoff_own)
    assert "time/total_timesteps" not in got  # ...and respects SB3's exclusion
    for tag, points in want.items():
        steps = [s for s, _ in points]
        assert [s for s, _ in got[tag]] == steps, tag
        if tag not in CLOCKS:
            assert [v for _, v in got[tag]] == [v for _, v in points], tag
    assert steps == list(range(200, 1501, 200))
    # the dashboard's reward: SB3's ep_rew_mean at SB3's steps
    assert got["reward/mean"] == want["rollout/ep_rew_mean"]
    # SB3's gradient steps (its own CSV has them) are the grad_steps axis of each record
    with open(ref_dir / "progress.csv", newline="") as f:
        n_updates = [float(r["train/n_updates"]) for r in csv.DictReader(f)]
    assert got["axis/grad_steps"] == list(zip(steps, n_updates, strict=True))
    assert n_updates[-1] > n_updates[0] > 0


class _FakeVideo(sb3_logger.Video):
    def __init__(self, channels: int = 3) -> None:
        super().__init__(torch.zeros(1, 2, channels, 4, 4), fps=4)


def test_formats_exclusion_hparams_media_and_arrays(tmp_path: Path) -> None:
    """Without SB3 training: each kind of value, ``exclude=`` per format, the CSV and
    JSON formats, media logged (tests/test_media.py reads them back) or, when aoff cannot
    log them, warned about once per key and counted."""
    logger = aoff.sb3.configure(
        str(tmp_path), ["csv", "json", "log"], pump="thread", handle_sigterm=False
    )
    hparam = sb3_logger.HParam({"lr": 3e-4, "gamma": 0.99}, {"r": 0})
    logger.record("hparams", hparam, exclude=("stdout", "log"))  # SB3's text table refuses it
    with pytest.warns(UserWarning, match="empty key-value"):  # SB3's log.txt: nothing
        logger.dump(0)  # nothing but an HParam: no step
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in (10, 20):
            logger.record("train/loss", np.float32(step / 10))
            logger.record("rollout/ep_rew_mean", -float(step))
            logger.record("time/total_timesteps", step, exclude=("csv", "json"))
            logger.record("only/log", 1.0, exclude=("csv",))  # json still takes it
            logger.record("eval/video", _FakeVideo(), exclude="log")
            logger.record("eval/bad", _FakeVideo(channels=2), exclude="log")
            logger.record("train/q", np.arange(4.0))
            logger.dump(step)
    logger.close()
    media = [w for w in caught if issubclass(w.category, AoffWarning)]
    assert len(media) == 1 and "'eval/bad' is a _FakeVideo" in str(media[0].message)
    assert "2 channels" in str(media[0].message)
    assert logger.writer.skipped == {"eval/bad": 2}

    rows = read_jsonl(tmp_path / "metrics.jsonl")
    videos = [(r["step"], r["media"]) for r in rows if "media" in r]
    assert videos == [(10, "video"), (20, "video")]
    rows = [r for r in rows if "media" not in r]
    assert [r["step"] for r in rows] == [10, 20]
    assert [r["train/loss"] for r in rows] == [1.0, 2.0]
    assert [r["reward/mean"] for r in rows] == [-10.0, -20.0]
    assert "time/total_timesteps" not in rows[0] and rows[0]["only/log"] == 1.0
    assert rows[0]["train/q/mean"] == 1.5  # the array went to log_histogram
    assert "train/loss" in (tmp_path / "progress.csv").read_text().splitlines()[0]
    assert json.loads((tmp_path / "config.json").read_text())["gamma"] == 0.99
    table = (tmp_path / "log.txt").read_text()  # SB3's own text table
    assert "| train/" in table and "|    loss " in table


def test_bad_arguments_fail_at_configure(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        aoff.sb3.configure(str(tmp_path), ["xml"])
    with pytest.raises(TypeError, match="sets log_dir"):
        aoff.sb3.configure(str(tmp_path), ["csv"], log_dir="elsewhere")


@pytest.mark.slow  # real SB3 training in a subprocess (tests/test_examples.py's conventions)
def test_sb3_sac_example_runs_and_logs(tmp_path: Path) -> None:
    from .test_examples import EXAMPLES, _run

    logdir = tmp_path / "sb3_sac"
    args = [str(EXAMPLES / "sb3_sac.py"), "--total-steps", "600", "--learning-starts", "100"]
    args += ["--logdir", str(logdir), "--hidden", "16", "--batch-size", "32"]
    proc = _run(args, tmp_path)
    assert "sb3_sac: seed 0, 600 env steps" in proc.stdout and "lost 0" in proc.stdout
    assert "Training complete" in proc.stdout  # aoff's dashboard summary ("stdout")
    sc = read_tensorboard(logdir)
    assert [s for s, _ in sc["rollout/ep_rew_mean"]] == [200, 400, 600]
    assert sc["reward/mean"] == sc["rollout/ep_rew_mean"]
    assert len(sc["train/critic_loss"]) == 3
    header = (logdir / "progress.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["step", "iteration", "wall_time"] and "train/actor_loss" in header
