"""``read_scalars(..., axes=True)``: one column per axis beside each point (issue #50), on
each format aoff writes (TensorBoard, JSONL, CSV) and a producer's sub-run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from aoff import OffPolicyLogger, read_scalars
from aoff._runfolder.reading._axiscols import axis_column


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("axes")
    with OffPolicyLogger(
        log_dir=folder,
        display="none",
        handle_sigterm=False,
        system_interval=0,
        backends=("jsonl", "csv"),
    ) as log:
        log.log_step(0, {"q": 0.0})
        for it in range(1, 4):
            log.log_collector(100 * it, 10)
            log.log_step(it, {"q": float(it)}, axes={"grad_steps": 2 * it})
        with log.remote("c0") as r:
            r.log_step(1, {"q": 5.0}, axes={"rounds": 7})
    return folder


def _nan_as_none(values: list[float]) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values]


@pytest.mark.parametrize("source", ["", "metrics.jsonl", "progress.csv"])
def test_each_point_has_its_records_axes(run: Path, source: str) -> None:
    df = read_scalars(run / source if source else run, ["train/q"], axes=True)
    assert list(df.columns) == [
        "run",
        "tag",
        "step",
        "wall_time",
        "value",
        "iteration",
        "env_steps",
        "grad_steps",
        "rounds",  # the producer's (JSONL and CSV read its rows under the same tags)
    ]
    own = df[df["tag"] == "train/q"]
    assert own["value"].tolist()[:4] == [0.0, 1.0, 2.0, 3.0]
    assert own["iteration"].tolist()[:4] == [0.0, 1.0, 2.0, 3.0]
    assert own["env_steps"].tolist()[:4] == [0.0, 100.0, 200.0, 300.0]
    assert _nan_as_none(own["grad_steps"].tolist()[:4]) == [None, 2.0, 4.0, 6.0]


def test_a_producers_points_take_their_sub_runs_axes(run: Path) -> None:
    df = read_scalars(run, ["c0/train/q"], axes=True)
    assert df["tag"].tolist() == ["c0/train/q"]
    assert df["rounds"].tolist() == [7.0] and df["iteration"].tolist() == [1.0]
    assert _nan_as_none(df["grad_steps"].tolist()) == [None]  # the learner's, not its own
    plain = read_scalars(run, ["train/q"])
    assert list(plain.columns) == ["run", "tag", "step", "wall_time", "value"]


def test_which_tags_are_axes() -> None:
    assert axis_column("axis/env_steps_total") == ("", "env_steps")
    assert axis_column("axis/grad_steps") == ("", "grad_steps")
    assert axis_column("c0/axis/iteration") == ("c0/", "iteration")
    assert axis_column("train/taxis/x") is None and axis_column("axis/") is None


def test_show_names_the_axes(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aoff.__main__ import main

    assert main(["show", str(run), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["axes"] == ["step", "wall_time", "iteration", "env_steps", "grad_steps"]
    assert main(["show", str(run), "--width", "100"]) == 0
    assert "Axes: step, wall_time, iteration, env_steps, grad_steps" in capsys.readouterr().out


def test_axes_and_bucket_do_not_combine(run: Path) -> None:
    with pytest.raises(ValueError, match="axes=True and bucket= do not combine"):
        read_scalars(run, axes=True, bucket=10)
