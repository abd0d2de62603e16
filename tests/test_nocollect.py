"""The collector paused for a read: off inside, as it was after (also on an error)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import aoff
from aoff._runfolder.reading._nocollect import collector_paused


def test_off_inside_back_on_after_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        assert not gc.isenabled()
        raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_read_pauses_it_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    seen: list[bool] = []
    from aoff._runfolder.reading import _scalars

    real = _scalars._run_parts

    def spy(run: object) -> object:
        seen.append(gc.isenabled())
        return real(run)  # type: ignore[arg-type]

    monkeypatch.setattr(_scalars, "_run_parts", spy)
    df = aoff.read_scalars(tmp_path)
    assert df["value"].tolist() == [0.5]
    assert seen == [False]
    assert gc.isenabled()


def test_overlapping_reads_give_it_back_only_when_the_last_ends() -> None:
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # another read still running: stays off
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_read_leaves_no_cycles_behind_while_its_reader_lives(tmp_path: Path) -> None:
    """Why the pause costs nothing: what a read makes is the runs' state or handed back,
    never garbage in cycles the collector would have freed during the read."""
    _two_runs(tmp_path, 5, ("tensorboard", "jsonl"))
    q_losses, cycles = _in_a_fresh_process(
        """
        reader = aoff.ScalarReader(folder)
        gc.collect()
        gc.disable()
        df = reader.read()
        print(int(df["tag"].str.endswith("q_loss").sum()), gc.collect())
        """,
        tmp_path,
    )
    assert q_losses == 10
    assert cycles == 0


def test_a_dropped_reader_is_freed_without_the_collector(tmp_path: Path) -> None:
    """The runs' decoding state holds no cycle (the bulk paths reach their folder through
    a weak proxy): dropping a reader frees it at once, and a later collection, the next
    call's cost otherwise, finds nothing of it."""
    _two_runs(tmp_path, 39, ("tensorboard",))
    bulk, rows, cycles = _in_a_fresh_process(
        """
        gc.collect()
        gc.disable()
        reader = aoff.ScalarReader(folder, tags=["train/q_loss"])
        df = reader.read()
        bulk, rows = reader.bulk_records, len(df)
        del reader, df
        print(bulk, rows, gc.collect())
        """,
        tmp_path,
    )
    assert bulk > 0  # the bulk paths took part
    assert rows == 2 * 39
    assert cycles == 0


def _in_a_fresh_process(body: str, folder: Path) -> list[int]:
    """The numbers ``body`` prints, run in a new process after a first read of
    ``folder`` there (what a first read imports and caches is not the reader's; a later
    read of the folder takes the paths a process that read before takes). A process of
    its own: ``gc.collect()`` counts the whole process's cycles, and in a test worker
    other tests' threads (a cluster's, a logger's) make theirs meanwhile."""
    code = "import gc, sys\nimport aoff\nfolder = sys.argv[1]\naoff.read_scalars(folder)\n"
    proc = subprocess.run(
        [sys.executable, "-c", code + textwrap.dedent(body), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent / "src")),
    )
    assert proc.returncode == 0, proc.stderr
    return [int(x) for x in proc.stdout.split()]


def _two_runs(folder: Path, steps: int, backends: tuple[str, ...]) -> None:
    """Two runs of ``steps`` steps under ``folder`` (``run1``, ``run2``), in thread mode."""
    for seed in (1, 2):
        log = aoff.OffPolicyLogger(
            log_dir=folder / f"run{seed}",
            backends=backends,
            display="none",
            pump="thread",
            handle_sigterm=False,
        )
        for step in range(1, steps + 1):
            log.log_step(step * 10, {"q_loss": 1.0 / step, "return": float(seed)})
        log.finish()
