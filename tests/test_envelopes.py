"""``read_scalars(..., bucket=N)`` and ``aoff export --bucket N``: envelopes equal to the
same reduction done in pandas over every point; a spike survives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import aoff
from aoff.__main__ import main

from .test_read_scalars import write_irregular_runs


def _pandas_envelopes(long: pd.DataFrame, bucket: int) -> pd.DataFrame:
    long = long.assign(bstep=long["step"] // bucket * bucket)
    g = long.groupby(["run", "tag", "bstep"], observed=True, sort=False)["value"]
    want = g.agg(["min", "max", "mean", "last", "count"]).reset_index()
    return want.rename(columns={"bstep": "step"})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from torch.utils.tensorboard import SummaryWriter

    root = tmp_path_factory.mktemp("envelopes")
    made = write_irregular_runs(root, 2000)
    spiky = root / "spiky"
    w = SummaryWriter(str(spiky))
    for step in range(1000):
        w.add_scalar("loss", 1e6 if step == 437 else np.sin(step / 30), step)
    w.close()
    return [*made, spiky]


@pytest.mark.parametrize("bucket", [1, 7, 100])
def test_envelopes_equal_pandas_over_every_point(runs: list[Path], bucket: int) -> None:
    full = aoff.read_scalars(runs)
    got = aoff.read_scalars(runs, bucket=bucket)
    want = _pandas_envelopes(full, bucket)
    key = ["run", "tag", "step"]
    got_s = got.astype({"run": str, "tag": str}).sort_values(key).reset_index(drop=True)
    want_s = want.astype({"run": str, "tag": str}).sort_values(key).reset_index(drop=True)
    assert len(got_s) == len(want_s)
    for col in ["run", "tag", "step", "min", "max", "last", "count"]:
        assert got_s[col].tolist() == want_s[col].tolist(), col
    assert np.allclose(got_s["mean"], want_s["mean"], rtol=1e-12, atol=0)
    assert got["count"].sum() == len(full)


def test_a_spike_is_in_its_buckets_max(runs: list[Path]) -> None:
    env = aoff.read_scalars(runs[-1], bucket=100)
    assert len(env) == 10
    row = env[env["step"] == 400].iloc[0]
    assert row["max"] == 1e6 and row["count"] == 100 and row["min"] < 0


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_a_bucket_that_is_not_a_whole_number_of_steps_is_refused(
    runs: list[Path], bad: object
) -> None:
    with pytest.raises(ValueError, match="bucket="):
        aoff.read_scalars(runs[-1], bucket=bad)  # type: ignore[arg-type]


def test_export_bucket_writes_the_envelopes(runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "env.csv"
    assert main(["export", *map(str, runs), "-o", str(out), "--bucket", "50"]) == 0
    back = pd.read_csv(out)
    want = aoff.read_scalars(runs, bucket=50)
    assert list(back.columns) == list(want.columns)
    assert back["count"].tolist() == want["count"].tolist()
    # the values are float32s: CSV's text keeps them (not float64's last digit)
    assert np.array_equal(back["max"].to_numpy(np.float32), want["max"].to_numpy(np.float32))
    assert main(["export", str(runs[0]), "-o", str(out), "--bucket", "0"]) == 2
    assert main(["export", str(runs[0]), "-o", str(out), "--bucket", "5", "--wide"]) == 2
