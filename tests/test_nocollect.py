"""The collector paused for a read: off inside, as it was after (also on an error)."""

from __future__ import annotations

import gc
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
    reader = aoff.ScalarReader(tmp_path)
    gc.collect()
    gc.disable()
    try:
        df = reader.read()
        assert df["tag"].str.endswith("q_loss").sum() == 10
        assert gc.collect() == 0
    finally:
        gc.enable()
    reader.close()


def test_a_dropped_reader_is_freed_without_the_collector(tmp_path: Path) -> None:
    """The runs' decoding state holds no cycle (the bulk paths reach their folder through
    a weak proxy): dropping a reader frees it at once, and a later collection, the next
    call's cost otherwise, finds nothing of it."""
    _two_runs(tmp_path, 39, ("tensorboard",))
    aoff.read_scalars(tmp_path)  # what a first read imports and caches is not the reader's
    gc.collect()
    gc.disable()
    try:
        reader = aoff.ScalarReader(tmp_path, tags=["train/q_loss"])
        df = reader.read()
        assert reader.bulk_records > 0  # the bulk paths took part
        assert len(df) == 2 * 39
        del reader, df
        assert gc.collect() == 0
    finally:
        gc.enable()


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
