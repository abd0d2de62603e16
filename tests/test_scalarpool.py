"""``read_scalars(..., workers=N)`` (``_runfolder/reading/_scalarpool.py``): CleanRL's runs read by
worker processes give the same table and the same warnings as one process."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import aoff
from aoff._runfolder.reading._scalarpool import _claim, check_workers, claim_end

from .tbruns import write_cleanrl_runs

pd = pytest.importorskip("pandas")
np = pytest.importorskip("numpy")


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
    properties agree; a missing run is the same error, and that read loses nothing (the
    next one, once the run is there, gives every run's points); a closed reader says so."""
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
    cols_one, cols_two = aoff.ScalarReader(runs), aoff.ScalarReader(runs, workers=2)
    with two, cols_two:
        for steps in (range(0, 50), range(50, 80)):
            if steps.start:
                write(steps)
            a, b = one.read(), two.read()
            pd.testing.assert_frame_equal(a, b)
            c, d = cols_one.read_columns(), cols_two.read_columns()
            assert [(run, tag) for run, tag, _ in c] == [(run, tag) for run, tag, _ in d]
            for (_, _, x), (_, _, y) in zip(c, d, strict=True):
                assert all(np.array_equal(p, q) for p, q in zip(x, y, strict=True))
            assert sorted(set(b["step"])) == list(steps) and len(b) == 3 * len(steps)
            assert (one.bytes_read, one.problems) == (two.bytes_read, two.problems)
            assert one.bulk_records == two.bulk_records
    with pytest.raises(RuntimeError, match="closed"):
        two.read()
    for w in writers:
        w.close()
    for gone in ([runs[0], tmp_path / "gone"], [tmp_path / "gone", tmp_path / "gone2"]):
        with (
            aoff.ScalarReader(gone, workers=2) as missing,
            pytest.raises(FileNotFoundError, match="gone"),
        ):
            missing.read()
    late = [runs[0], runs[1], tmp_path / "late"]
    with aoff.ScalarReader(late, workers=2) as reader:
        with pytest.raises(FileNotFoundError, match="late"):
            reader.read()
        shutil.copytree(runs[2], late[2])
        pd.testing.assert_frame_equal(reader.read(), aoff.read_scalars(late))


def test_runs_are_claimed_in_shrinking_ranges_that_cover_them_once() -> None:
    """Each claim takes a (2 x participants)-th of what is left (big ranges first,
    few answers to join), down to one run at the end (no one left waiting long on
    another's last range); the ranges cover every run once."""
    for total, n in ((20_000, 2), (200, 4), (3, 2), (1, 16)):
        ends, at = [], 0
        while at < total:
            ends.append(at := claim_end(at, total, n))
        assert ends[-1] == total
        sizes = [b - a for a, b in zip([0, *ends], ends, strict=False)]
        assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 1
    assert claim_end(0, 20_000, 2) == 5_000
    assert len(ends) == 1


def test_a_claim_lock_held_by_a_dead_process_is_an_error_not_a_hang() -> None:
    """A participant killed while holding the claim lock (held for microseconds) would
    leave the others blocked for ever: they wait a bounded time, then say why."""
    import multiprocessing
    import threading

    counter = multiprocessing.get_context("forkserver").Value("q", 0)  # as Workers makes it
    assert _claim(counter, 10, 2) == (0, 3)
    held = threading.Thread(target=counter.get_lock().acquire)  # its holder gone: never let go
    held.start()
    held.join()
    with pytest.raises(RuntimeError, match="died holding it"):
        _claim(counter, 10, 2, wait=0.05)
