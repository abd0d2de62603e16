"""``read_scalars(..., workers=N)`` (``_runfolder/reading/_scalarpool.py``): CleanRL's runs read by
worker processes give the same table and the same warnings as one process."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

import aoff
from aoff._runfolder.reading._scalarpool import check_workers, deal

from .tbruns import write_cleanrl_runs

pd = pytest.importorskip("pandas")


def test_workers_give_the_same_table_and_warnings(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    folders = write_cleanrl_runs(tmp_path / "runs", seeds=(1, 2, 3), total_timesteps=1000)
    events = sorted(p for p in folders[2].iterdir() if "tfevents" in p.name)[-1]
    os.truncate(events, os.path.getsize(events) - 5)  # a torn last record: one warning

    def read(workers: int) -> tuple[Any, list[str]]:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            df = aoff.read_scalars(tmp_path / "runs", workers=workers)
        return df, [str(w.message) for w in said if issubclass(w.category, aoff.AoffWarning)]

    one, said_one = read(1)
    two, said_two = read(2)
    pd.testing.assert_frame_equal(one, two)
    assert len(one["run"].cat.categories) == 6 and len(one) > 500
    assert said_one == said_two and len(said_one) == 1 and "torn" in said_one[0]


@pytest.mark.parametrize(
    ("workers", "error"), [(-1, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_a_bad_workers_is_refused(tmp_path: Path, workers: object, error: type) -> None:
    with pytest.raises(error, match="workers"):
        aoff.read_scalars(tmp_path, workers=workers)  # type: ignore[arg-type]
    assert check_workers(0) == (os.cpu_count() or 1)  # 0: one a core


def test_a_reader_with_workers_reads_what_was_appended_as_one_does(tmp_path: Path) -> None:
    """``ScalarReader(..., workers=2)``: each worker keeps its runs' offsets, so a second
    read gives only the appended points, as the same reader in one process does; its
    properties agree; a missing run is the same error; a closed reader says so."""
    pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter

    runs = [tmp_path / f"run{i}" for i in range(3)]
    writers = [SummaryWriter(str(r)) for r in runs]

    def write(steps: range) -> None:
        for i, w in enumerate(writers):
            for step in steps:
                w.add_scalar("loss", (i + 1) / (step + 1), step)
            w.flush()

    write(range(0, 50))
    one, two = aoff.ScalarReader(runs), aoff.ScalarReader(runs, workers=2)
    with two:
        for steps in (range(0, 50), range(50, 80)):
            if steps.start:
                write(steps)
            a, b = one.read(), two.read()
            pd.testing.assert_frame_equal(a, b)
            assert sorted(set(b["step"])) == list(steps) and len(b) == 3 * len(steps)
            assert (one.bytes_read, one.problems) == (two.bytes_read, two.problems)
            assert one.bulk_records == two.bulk_records
    with pytest.raises(RuntimeError, match="closed"):
        two.read()
    for w in writers:
        w.close()
    for gone in ([runs[0], tmp_path / "gone"], [tmp_path / "gone", tmp_path / "gone2"]):
        # the missing run read by the worker, then by the caller's own share
        with (
            aoff.ScalarReader(gone, workers=2) as missing,
            pytest.raises(FileNotFoundError, match="gone"),
        ):
            missing.read()


def test_runs_are_dealt_by_bytes() -> None:
    """Shares of about equal bytes (the heaviest first, to the lightest share), not of
    equal counts; each share in the runs' order."""
    assert deal([100, 1, 1, 1, 1, 96], 2) == [[0], [1, 2, 3, 4, 5]]  # 100 bytes each
    assert deal([5, 5, 5], 2) == [[0, 2], [1]]
    assert deal([1], 4) == [[0]]
