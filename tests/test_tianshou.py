"""``aoff.tianshou.Logger`` under Tianshou's own trainer (DQN on CartPole, tiny, CPU).

One real training feeds every call of the trainer to Tianshou's ``TensorboardLogger``
(torch's writer) and to aoff's logger side by side, so both see the very same numbers
(timings included): TensorBoard's reader reads the same tags, steps and values back from
both folders. A second session resumes from the first one's checkpoint through
``restore_data`` (aoff's reader, on aoff's folder and on Tianshou's), and ``aoff show``
shows the run.
"""

from __future__ import annotations

import itertools
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")
import gymnasium as gym
import numpy as np
import torch
from tensorboard.backend.event_processing import event_accumulator as ea
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils import TensorboardLogger
from tianshou.utils.logger.logger_base import BaseLogger
from torch.utils.tensorboard import SummaryWriter as TorchWriter

import aoff.tianshou
from aoff.__main__ import main
from aoff.tensorboard import SummaryWriter

from . import tianshou_nojit  # noqa: F401 - before anything imports Tianshou
from .conftest import read_jsonl

EPOCH_STEPS = 100


class Both(BaseLogger):
    """Hands each of the trainer's calls to two loggers (each keeps its own intervals)."""

    def __init__(self, first: BaseLogger, second: BaseLogger) -> None:
        super().__init__()
        self.loggers = (first, second)

    def _each(self, name: str, *args: Any) -> list[Any]:
        return [getattr(lg, name)(*args) for lg in self.loggers]

    def log_training_data(self, log_data: dict[str, Any], step: int) -> None:
        self._each("log_training_data", log_data, step)

    def log_test_data(self, log_data: dict[str, Any], step: int) -> None:
        self._each("log_test_data", log_data, step)

    def log_update_data(self, log_data: dict[str, Any], step: int) -> None:
        self._each("log_update_data", log_data, step)

    def log_info_data(self, log_data: dict[str, Any], step: int) -> None:
        self._each("log_info_data", log_data, step)

    def write(self, step_type: str, step: int, data: dict[str, Any]) -> None:
        self._each("write", step_type, step, data)

    def prepare_dict_for_logging(self, log_data: dict[str, Any]) -> dict[str, Any]:
        return log_data

    def finalize(self) -> None:
        self._each("finalize")

    def save_data(
        self,
        epoch: int,
        env_step: int,
        update_step: int,
        save_checkpoint_fn: Callable[[int, int, int], str] | None = None,
    ) -> None:
        # one checkpoint on disk; both loggers log that it was made
        first, second = self.loggers
        first.save_data(epoch, env_step, update_step, save_checkpoint_fn)
        noop = None if save_checkpoint_fn is None else (lambda *a: "")
        second.save_data(epoch, env_step, update_step, noop)

    def restore_data(self) -> tuple[int, int, int]:
        raise AssertionError("not resumed here")

    @staticmethod
    def restore_logged_data(log_path: str) -> Any:
        raise AssertionError("not used")


def train(logger: BaseLogger, epochs: int, ckpt: Path, *, resume: bool = False) -> Any:
    """A tiny DQN on CartPole through Tianshou's ``OffPolicyTrainer``; the checkpoint
    holds the algorithm (saved each epoch, loaded when resuming)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    env = gym.make("CartPole-v1")
    train_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")])
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")])
    train_envs.seed(0)
    test_envs.seed(1)
    net = Net(env)
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.1)
    algo = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=10)
    if resume:
        algo.load_state_dict(torch.load(ckpt))

    def save(epoch: int, env_step: int, gradient_step: int) -> str:
        torch.save(algo.state_dict(), ckpt)  # type: ignore[no-untyped-call]
        return str(ckpt)

    collector: Collector[Any] = Collector(
        algo, train_envs, VectorReplayBuffer(1000, 1), exploration_noise=True
    )
    collector.reset()
    collector.collect(n_step=32, random=True)
    params = OffPolicyTrainerParams(
        training_collector=collector,
        test_collector=Collector(algo, test_envs),
        max_epochs=epochs,
        epoch_num_steps=EPOCH_STEPS,
        collection_step_num_env_steps=10,
        test_step_num_episodes=1,
        batch_size=16,
        update_step_num_gradient_steps_per_sample=0.2,
        logger=logger,
        save_checkpoint_fn=save,
        resume_from_log=resume,
        show_progress=False,
        verbose=False,
    )
    return algo.run_training(params)


def Net(env: gym.Env[Any, Any]) -> torch.nn.Module:
    from tianshou.utils.net.common import Net as TianshouNet

    shape = env.observation_space.shape
    assert shape is not None
    n = int(env.action_space.n)  # type: ignore[attr-defined]
    return TianshouNet(state_shape=shape, action_shape=n, hidden_sizes=(16,))


def read(folder: Path) -> dict[str, list[tuple[int, float]]]:
    acc = ea.EventAccumulator(str(folder), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


INTERVALS: dict[str, Any] = {"training_interval": 20, "update_interval": 3, "save_interval": 1}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two epochs logged by Tianshou's logger (``torch``) and aoff's (``aoff``) at once."""
    root = tmp_path_factory.mktemp("tianshou")
    theirs = TensorboardLogger(TorchWriter(str(root / "torch")), **INTERVALS)
    ours = aoff.tianshou.Logger(SummaryWriter(root / "aoff", pump="thread"), **INTERVALS)
    assert isinstance(ours, BaseLogger)
    both = Both(theirs, ours)
    train(both, 2, root / "ckpt.pt")
    both.finalize()  # Tianshou's trainer leaves it to the caller
    return root


def test_a_dqn_run_reads_back_as_tianshous_tensorboard_logger(trained: Path) -> None:
    want, got = read(trained / "torch"), read(trained / "aoff")
    assert sorted(got) == sorted(want)
    for tag in want:
        assert got[tag] == want[tag], tag
    # the run had what it should: each scope, the intervals kept, both epochs saved
    assert {t.split("/")[0] for t in want} == {"training", "test", "update", "info", "save"}
    assert [s for s, _ in want["info/epoch"]] == [1, 2]
    assert [s for s, _ in want["save/env_step"]] == [EPOCH_STEPS, 2 * EPOCH_STEPS]
    steps = [s for s, _ in want["training/env_step"]]
    assert len(steps) > 3 and all(b - a >= 20 for a, b in itertools.pairwise(steps))


def test_show_shows_the_run(trained: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["show", str(trained / "aoff"), "--width", "160"]) == 0
    out = capsys.readouterr().out
    last = read(trained / "torch")["test/returns_stat/mean"][-1][1]
    row = next(
        line.split() for line in out.splitlines() if line.startswith("test/returns_stat/mean")
    )
    assert float(row[2]) == pytest.approx(last, rel=1e-3)


def copy(run: Path, to: Path) -> Path:
    """A copy of a finished run (its agent's socket left out)."""
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("*.sock"))
    return to


def test_restore_data_reads_the_checkpoint_from_either_logger(
    trained: Path, tmp_path: Path
) -> None:
    theirs = TensorboardLogger(
        TorchWriter(str(copy(trained / "torch", tmp_path / "t"))), **INTERVALS
    )
    want = theirs.restore_data()
    theirs.finalize()
    assert want == (2, 2 * EPOCH_STEPS, want[2]) and want[2] > 0
    for folder in ("aoff", "torch"):  # aoff's run, and a run Tianshou's logger wrote
        ours = aoff.tianshou.Logger(copy(trained / folder, tmp_path / folder), **INTERVALS)
        assert ours.restore_data() == want, folder
        counters = ("last_save_step", "last_log_test_step", "last_log_update_step")
        assert [getattr(ours, c) for c in counters] == [getattr(theirs, c) for c in counters]
        ours.finalize()
    logged = aoff.tianshou.Logger.restore_logged_data(str(trained / "aoff"))
    np.testing.assert_array_equal(logged["info"]["epoch"], [1.0, 2.0])


def test_a_resumed_training_continues_at_the_checkpoint(trained: Path, tmp_path: Path) -> None:
    """A session that died after the checkpoint left points on every axis past it;
    ``resume=True`` cuts each scope at its own counter (what TensorBoard reads is the
    first session's run again), ``restore_data`` returns the checkpoint with the
    counters carried across, and the resumed training adds each point once."""
    run = copy(trained / "aoff", tmp_path / "run")
    before = read(run)
    epoch, env_step, grad = 2, 2 * EPOCH_STEPS, before["save/gradient_step"][-1][0]
    died = aoff.tianshou.Logger(run, pump="thread", **INTERVALS)
    died.log_training_data({"returns": 1.0}, env_step + 40)
    died.log_update_data({"loss": 9.0}, grad + 5)
    died.log_info_data({"x": 1.0}, epoch + 1)
    died.log_test_data({"returns": 1.0}, env_step + 50)
    died.write("save/epoch", epoch + 1, {"save/epoch": epoch + 1})  # torn: no other two
    died.finalize()
    assert read(run) != before
    logger = aoff.tianshou.Logger(run, pump="thread", resume=True, **INTERVALS)
    assert read(run) == before  # cut per scope, read back with EventAccumulator
    assert logger.restore_data() == (epoch, env_step, grad)
    counters = ("last_log_training_step", "last_log_test_step", "last_log_update_step")
    assert [getattr(logger, c) for c in counters] == [env_step, env_step, grad]
    stats = train(logger, 3, trained / "ckpt.pt", resume=True)
    logger.finalize()
    assert stats.best_reward is not None
    got = read(run)
    assert [s for s, _ in got["info/epoch"]] == [1, 2, 3]  # the third epoch, once
    assert [s for s, _ in got["save/env_step"]] == [100, 200, 300]
    for tag, points in got.items():  # every axis goes on from its checkpoint, once
        steps = [s for s, _ in points]
        assert steps == sorted(set(steps)), tag
        assert points[: len(before.get(tag, []))] == before.get(tag, []), tag


def test_resume_cuts_each_axis_in_the_jsonl_rows_too(tmp_path: Path) -> None:
    """One JSONL row holds every tag logged at one step number, whatever its axis: the
    cut takes out only the tags past their own counter."""
    run = tmp_path / "run"
    kw: dict[str, Any] = dict(training_interval=1, update_interval=1, save_interval=1)
    kw.update(pump="thread", backends=("tensorboard", "jsonl"))
    first = aoff.tianshou.Logger(run, **kw)
    first.log_training_data({"r": 1.0}, 100)
    first.log_update_data({"loss": 1.0}, 10)
    first.save_data(1, 100, 10, save_checkpoint_fn=lambda *_: "ckpt")
    first.log_update_data({"loss": 2.0}, 100)  # at step 100: past gradient step 10
    first.log_training_data({"r": 2.0}, 150)
    first.finalize()
    resumed = aoff.tianshou.Logger(run, resume=True, **kw)
    assert resumed.restore_data() == (1, 100, 10)
    resumed.finalize()
    rows = read_jsonl(run / "metrics.jsonl")
    tags = sorted({k for r in rows for k in r} - {"step", "iteration", "wall_time"})
    got = {t: [(r["step"], r[t]) for r in rows if t in r] for t in tags}
    assert got == {k: v for k, v in read(run).items() if k in got}  # as in the event files
    assert got["update/loss"] == [(10, 1.0)] and got["training/r"] == [(100, 1.0)]
    assert got["save/epoch"] == [(1, 1.0)] and len(got) == 10
    got = read(run)
    assert got["update/loss"] == [(10, 1.0)] and got["training/r"] == [(100, 1.0)]


def test_what_it_refuses(tmp_path: Path) -> None:
    given = SummaryWriter(tmp_path / "w", pump="thread")
    with pytest.raises(TypeError, match="needs the run's folder"):
        aoff.tianshou.Logger(given, resume=True)
    given.close()  # its pump thread would outlive the test
    with pytest.raises(TypeError, match=r"from aoff.tensorboard import SummaryWriter"):
        aoff.tianshou.Logger(TorchWriter(str(tmp_path / "t")))  # type: ignore[arg-type]
    writer = SummaryWriter(tmp_path / "a", pump="thread")
    with pytest.raises(TypeError, match="go to the SummaryWriter"):
        aoff.tianshou.Logger(writer, dashboard=True)
    writer.close()


def test_a_stop_rule_reaches_should_stop(tmp_path: Path) -> None:
    from aoff import rules
    from aoff.testing import wait_until

    logger = aoff.tianshou.Logger(
        tmp_path / "run", update_interval=1, pump="thread", rules=[rules.nonfinite(stop=True)]
    )
    logger.log_update_data({"loss": 0.5}, 1)
    assert not logger.should_stop
    logger.log_update_data({"loss": float("nan")}, 2)
    wait_until(lambda: logger.should_stop, what="the nonfinite rule's stop")
    logger.finalize()
    assert math.isnan(read(tmp_path / "run")["update/loss"][-1][1])
