"""``TensorBoardBackend(x=...)``: TensorBoard's step on another axis (issue #50), read back
with TensorBoard's own ``EventAccumulator``; every axis is still a series at the same
steps, so each point's other clocks read back beside it."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from aoff import OffPolicyLogger, TensorBoardBackend
from aoff._core._records import StepRecord, WriterRecord
from aoff._runfolder.tensorboard._xaxis import OnAxis
from tests.conftest import read_tensorboard


def _run(run: Path, x: str | None) -> dict[str, list[tuple[int, float]]]:
    with OffPolicyLogger(
        log_dir=run,
        log_backend="none",
        backends=[TensorBoardBackend(run, x=x)],  # crosses to the agent with its x
        handle_sigterm=False,
        system_interval=0,
        display="none",
    ) as log:
        log.log_step(0, {"loss": 3.0})  # before any axis: written at its own step
        for it in range(1, 4):
            log.log_collector(1000 * it, 10)
            log.log_step(it, {"loss": 3.0 - it}, axes={"grad_steps": 64 * it})
    return read_tensorboard(run)


def test_x_picks_the_axis_that_is_tensorboards_step(tmp_path: Path) -> None:
    seed = _run(tmp_path / "seed", None)
    assert seed["train/loss"] == [(0, 3.0), (1000, 2.0), (2000, 1.0), (3000, 0.0)]
    grad = _run(tmp_path / "grad", "grad_steps")
    assert grad["train/loss"] == [(0, 3.0), (64, 2.0), (128, 1.0), (192, 0.0)]
    # the other clocks, at the same steps
    assert grad["axis/env_steps_total"] == [(0, 0.0), (64, 1000.0), (128, 2000.0), (192, 3000.0)]
    assert grad["axis/iteration"] == [(0, 0.0), (64, 1.0), (128, 2.0), (192, 3.0)]
    it = _run(tmp_path / "it", "iteration")
    assert [s for s, _ in it["train/loss"]] == [0, 1, 2, 3]
    assert [v for _, v in it["axis/grad_steps"]] == [64.0, 128.0, 192.0]


def test_a_record_off_the_axis_keeps_its_step_said_once() -> None:
    said: list[str] = []
    on = OnAxis("grad_steps")
    recs = [
        StepRecord(5, 1, 0.0, (("train/loss", 1.0),)),
        StepRecord(6, 2, 0.0, (("axis/grad_steps", 10.5), ("train/loss", 1.0))),
        StepRecord(7, 3, 0.0, (("train/loss", 1.0),)),
    ]
    assert [r.step for r in on.moved(recs, said.append)] == [5, 10, 7]
    assert on.kept == 2
    assert said == [
        "TensorBoard x='grad_steps': a record without a value on it is written at its own step (5)",
        "TensorBoard x='grad_steps': 10.5 is not a whole number; TensorBoard's step is "
        "written rounded down (10)",
    ]
    writer = WriterRecord(3, 0.0, (("a", 1.0),))
    assert on.moved([writer], said.append)[0].step == 3  # SummaryWriter's own global_step


def test_x_is_checked_and_travels_with_the_backend(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="every TensorBoard point has its wall time"):
        TensorBoardBackend(tmp_path, x="wall_time")
    with pytest.raises(ValueError, match="x must be an axis name"):
        TensorBoardBackend(tmp_path, x="axis/grad_steps")
    copy = pickle.loads(pickle.dumps(TensorBoardBackend(tmp_path, x="env_steps")))
    assert copy.x == "env_steps"
