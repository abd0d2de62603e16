"""``aoff export``: runs' scalars as one Parquet or CSV table, long or wide, with the
values TensorBoard's own ``EventAccumulator`` reads."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aoff.__main__ import main

pd: Any = importlib.import_module("pandas")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from aoff.tensorboard import SummaryWriter

    root = tmp_path_factory.mktemp("export")
    made = []
    for seed in (1, 2):
        run = root / f"run-seed{seed}"
        with SummaryWriter(str(run)) as w:
            for step in range(0, 50):
                w.add_scalar("loss", 1.0 / (step + seed), step)
                if step % 5 == 0:
                    w.add_scalar("charts/return", step * seed + 0.1, step)
        made.append(run)
    return made


def _ea(run: Path) -> dict[str, list[tuple[int, float]]]:
    ea = EventAccumulator(str(run), size_guidance={"scalars": 0})
    ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


def test_export_long_csv_and_parquet_hold_what_tensorboard_reads(
    runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv, parquet = tmp_path / "all.csv", tmp_path / "all.parquet"
    assert main(["export", *map(str, runs), "-o", str(csv)]) == 0
    assert main(["export", *map(str, runs), "-o", str(parquet), "--format", "parquet"]) == 0
    assert capsys.readouterr().err.count("rows to") == 2
    # round_trip: pandas 2's default float parser may miss the written value by one ulp
    long = pd.read_csv(csv, float_precision="round_trip")
    assert list(long.columns) == ["run", "tag", "step", "wall_time", "value"]
    back = pd.read_parquet(parquet)
    assert np.array_equal(back["value"].to_numpy(), long["value"].to_numpy())
    for run in runs:
        for tag, points in _ea(run).items():
            rows = long[(long["run"] == str(run)) & (long["tag"] == tag)]
            assert list(rows["step"]) == [s for s, _ in points]
            assert np.array_equal(rows["value"].to_numpy(np.float32), [v for _, v in points])


def test_export_wide_has_a_column_per_tag(
    runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "wide.csv"
    assert main(["export", str(runs[1]), "-o", str(out), "--wide"]) == 0
    wide = pd.read_csv(out)
    assert list(wide.columns) == ["run", "step", "wall_time", "loss", "charts/return"]
    assert len(wide) == 50  # one row a step
    assert wide["charts/return"].notna().sum() == 10
    assert wide.loc[wide["step"] == 10, "charts/return"].item() == pytest.approx(20.1)
    rc = main(["export", str(runs[0]), "-o", str(tmp_path / "x.txt")])
    assert rc == 2 and "give --format" in capsys.readouterr().err
    rc = main(["export", str(tmp_path / "none"), "-o", str(out)])
    assert rc == 1 and "is not a folder" in capsys.readouterr().err
