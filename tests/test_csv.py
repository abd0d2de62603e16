"""The CSV backend: ``log_dir/progress.csv`` holds what ``metrics.jsonl`` holds, for pandas.

Every run below writes JSONL and CSV side by side and reads ``progress.csv`` back with
``pandas.read_csv``: each row and column must equal the JSONL rows (a key missing from
a JSONL row is an empty cell, read as NaN).
"""

from __future__ import annotations

import errno
import importlib
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

import aoff
from aoff import AsyncOffPolicyLogger, FinishReport, NullDisplay, OffPolicyLogger
from aoff._backends._base import Backend, BackendContext
from aoff._backends._csv import CsvBackend
from aoff._core._records import StepRecord
from aoff._core._rules import ALERT_TAG
from aoff._pump._options import PumpMode
from aoff.testing import probe

from .conftest import read_jsonl
from .test_jsonl import Tearing

pd: Any = importlib.import_module("pandas")  # untyped (no pandas-stubs): used as Any

NON_FINITE = (math.nan, math.inf, -math.inf, 0.25)


def metrics(i: int) -> dict[str, float]:
    """Keys that change over time: ``q`` from step 50, ``v`` and ``pi`` together from
    step 80, ``early`` only before step 30; NaN/±inf in ``odd``."""
    m = {"loss": i / 3, "odd": NON_FINITE[i % 4]}
    if i < 30:
        m["early"] = float(i)
    if i >= 50:
        m["q"] = -i / 7
    if i >= 80:
        m["v"] = i * 1e-9
        m["pi"] = -math.inf if i % 5 == 0 else 1 / i
    return m


#: new keys arrive in two batches after the first (step 50, step 80): two rewrites
NEW_KEY_BATCHES = 2


def read_csv(path: Path) -> Any:
    if int(pd.__version__.split(".")[0]) < 3:  # pandas 3 parses floats exactly by default
        return pd.read_csv(path, float_precision="round_trip")
    return pd.read_csv(path)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def assert_csv_equals_jsonl(log_dir: Path) -> int:
    """``progress.csv`` equals ``metrics.jsonl``'s rows of numbers cell by cell (an
    alert is a text row in JSONL, and CSV takes no texts); returns the row count."""
    rows = [r for r in read_jsonl(log_dir / "metrics.jsonl") if ALERT_TAG not in r]
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    df = read_csv(log_dir / "progress.csv")
    assert list(df.columns) == columns
    assert columns[:3] == ["step", "iteration", "wall_time"]
    assert len(df) == len(rows) > 0
    assert df["step"].dtype.kind == "i" and df["iteration"].dtype.kind == "i"
    for col in columns:
        assert df[col].dtype.kind in "if", (col, df[col].dtype)
    for r, (row, got) in enumerate(zip(rows, df.itertuples(index=False), strict=True)):
        for col, cell in zip(columns, got, strict=True):
            want = float(row[col]) if col in row else math.nan  # "nan"/"inf"/"-inf" too
            assert same(float(cell), want), (r, col, cell, row.get(col))
    return len(rows)


class InodeWatch:
    """The inode of ``progress.csv`` after each flush: ``os.replace`` gives it a new one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: list[int] = []

    def look(self) -> None:
        if self.path.exists():
            self.seen.append(self.path.stat().st_ino)

    @property
    def changes(self) -> int:
        return sum(a != b for a, b in zip(self.seen, self.seen[1:], strict=False))


def run_public(log_dir: Path, pump: PumpMode, n: int = 100) -> tuple[FinishReport, InodeWatch]:
    if pump == "thread":
        log = OffPolicyLogger(
            log_dir=log_dir,
            backends=("jsonl", "csv"),
            pump="thread",
            display=NullDisplay(),
            handle_sigterm=False,
            system_interval=0,  # system/* keys would be new keys whenever a sample lands
        )
    else:  # no objects given: the agent process builds every backend from its name
        log = OffPolicyLogger(
            log_dir=log_dir, backends=("jsonl", "csv"), handle_sigterm=False, system_interval=0
        )
        assert probe(log).pump_place == "agent"
    watch = InodeWatch(log_dir / "progress.csv")
    for i in range(1, n + 1):
        log.log_step(i, metrics(i))
        if i % 5 == 0:
            log.flush()  # every flush writes a batch: many batches, few new keys
            watch.look()
    report = log.finish()
    watch.look()
    return report, watch


@pytest.fixture
def rewrites(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts calls of the rewrite (in this process)."""
    calls: list[int] = []
    real = CsvBackend._rewrite

    def counting(self: CsvBackend, *args: Any) -> BinaryIO:
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(CsvBackend, "_rewrite", counting)
    yield calls


def test_thread_pump_csv_equals_jsonl_and_rewrites_once_per_new_key(
    tmp_path: Path, rewrites: list[int]
) -> None:
    report, watch = run_public(tmp_path, "thread")
    assert report.complete and report.backend_written["csv"] == 100
    # JSONL takes texts: the run's one alert (train/odd is inf) is a row of it too
    assert report.backend_written["jsonl"] == 101 and len(report.alerts) == 1
    alerts = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if ALERT_TAG in r]
    assert [(r["step"], r[ALERT_TAG]) for r in alerts] == [(1, report.alerts[0].message)]
    assert assert_csv_equals_jsonl(tmp_path) == 100
    assert len(rewrites) == NEW_KEY_BATCHES  # not once per batch (20 batches)
    assert watch.changes == NEW_KEY_BATCHES and len(watch.seen) == 21
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_process_pump_builds_the_csv_backend_by_name(tmp_path: Path) -> None:
    report, watch = run_public(tmp_path, "process")
    assert report.complete and report.backend_written["csv"] == 100
    assert assert_csv_equals_jsonl(tmp_path) == 100
    assert watch.changes == NEW_KEY_BATCHES  # the agent, too, rewrites once per new key


def test_a_resumed_run_keeps_the_existing_header(tmp_path: Path) -> None:
    run_public(tmp_path, "thread", n=60)
    header = (tmp_path / "progress.csv").read_text(encoding="utf-8").splitlines()[0]
    log = OffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl", "csv"),
        pump="thread",
        display=NullDisplay(),
        handle_sigterm=False,
    )
    for i in range(61, 101):
        log.log_step(i, metrics(i))
    assert log.finish().backend_written["csv"] == 40
    lines = (tmp_path / "progress.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith(header + ",")  # the old columns, in order, then v and pi
    assert assert_csv_equals_jsonl(tmp_path) == 100


def test_names_and_log_dir_rules() -> None:
    assert "csv" in aoff._pump._registry.names()
    with pytest.raises(ValueError, match=r"needs log_dir \(writes log_dir/progress.csv\)"):
        OffPolicyLogger(log_backend="none", backends=("csv",), handle_sigterm=False)
    with pytest.raises(ValueError, match="'jsonl', 'csv', 'wandb'"):
        OffPolicyLogger(log_backend="none", backends=("parquet",), handle_sigterm=False)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- the backend itself ------------------------------------------------------------------------
def rec(i: int, *scalars: tuple[str, float]) -> StepRecord:
    return StepRecord(i * 10, i, 1000.0 + i / 8, scalars)


@pytest.mark.anyio
async def test_backend_format_quoting_repeats_and_fixed_names(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "progress.csv"
    backend = CsvBackend(path)
    assert isinstance(backend, Backend) and backend.name == "csv"
    said: list[str] = []
    await backend.open(BackendContext(say=said.append))
    await backend.write(
        [
            rec(1, ("a", 1.0), ("a", 2.0), ("step", 99.0), ('odd, "tag"', 0.5)),
            rec(2, ("ünï", math.nan)),
        ]
    )
    await backend.write([rec(3, ("a", math.inf))])
    await backend.close()
    assert said == [f"[dim]CSV logging to: {path}[/]"]
    assert path.read_text(encoding="utf-8") == (
        'step,iteration,wall_time,a,"odd, ""tag""",ünï\n'
        "10,1,1000.125,2.0,0.5,\n"
        "20,2,1000.25,,,nan\n"
        "30,3,1000.375,inf,,\n"
    )
    assert list(read_csv(path).columns) == [
        "step",
        "iteration",
        "wall_time",
        "a",
        'odd, "tag"',
        "ünï",
    ]
    assert backend.rewrites == 0  # every key came with the first batch: no rewrite


@pytest.mark.anyio
async def test_existing_file_without_final_newline_and_lifecycle(tmp_path: Path) -> None:
    path = tmp_path / "progress.csv"
    path.write_text("step,iteration,wall_time,a\n5,1,1.5,7", encoding="utf-8")  # cut short
    backend = CsvBackend(path)
    await backend.open(BackendContext())
    await backend.write([rec(2, ("a", 1.0))])
    await backend.close()
    await backend.close()
    with pytest.raises(RuntimeError):
        await backend.write([rec(3)])
    assert path.read_text(encoding="utf-8").splitlines() == [
        "step,iteration,wall_time,a",
        "5,1,1.5,7",
        "20,2,1000.25,1.0",
    ]
    unopened = CsvBackend(tmp_path / "x" / "progress.csv")
    await unopened.close()  # without open: fine, creates nothing
    assert not (tmp_path / "x").exists()


@pytest.mark.anyio
async def test_a_failed_rewrite_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "progress.csv"
    backend = CsvBackend(path)
    await backend.open(BackendContext())
    await backend.write([rec(1, ("a", 1.0))])
    before = path.read_bytes()
    mode = path.stat().st_mode
    real_replace = os.replace

    def full(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)  # in the worker thread
    with pytest.raises(OSError):
        await backend.write([rec(2, ("b", 2.0))])
    assert path.read_bytes() == before
    assert names(tmp_path) == ["progress.csv"]  # no temp file left
    monkeypatch.setattr(os, "replace", real_replace)
    await backend.write([rec(2, ("b", 2.0))])  # the runner's retry
    await backend.write([rec(3, ("a", 3.0))])  # appends to the new file
    await backend.close()
    assert path.read_text(encoding="utf-8").splitlines() == [
        "step,iteration,wall_time,a,b",
        "10,1,1000.125,1.0,",
        "20,2,1000.25,,2.0",
        "30,3,1000.375,3.0,",
    ]
    assert path.stat().st_mode == mode  # the temp file took the old file's mode


# -- a full disk: whole rows only ------------------------------------------------------------
class TearingCsvBackend(Tearing, CsvBackend):
    """The real CSV backend, on a :class:`~tests.test_jsonl.TearingFile`."""


def run_logger(backend: CsvBackend, n: int) -> FinishReport:
    log = OffPolicyLogger(
        log_backend="none", backends=[backend], display=NullDisplay(), handle_sigterm=False
    )
    for i in range(1, n + 1):
        log.log_step(i, {"loss": i / 3})
        if i % 10 == 0:
            log.flush()  # batches of 10
    return log.finish()


def test_a_full_disk_leaves_exactly_the_written_rows(tmp_path: Path) -> None:
    """``backend_written`` is the number of rows in the file; every row is whole."""
    path = tmp_path / "progress.csv"
    backend = TearingCsvBackend(path, limit=8_000, tears=None)
    report = run_logger(backend, 200)
    assert backend.tearing is not None and backend.tearing.torn == 3  # 1 try + 2 retries
    written, lost = report.backend_written["csv"], report.backend_lost["csv"]
    df = read_csv(path)
    assert 0 < written == len(df) < 200 and written + lost == 200
    assert df["iteration"].tolist() == list(range(1, written + 1))
    assert not df.isna().any().any()  # no torn row: every cell is there
    assert "No space left on device" in report.backend_errors["csv"]
    assert path.stat().st_size <= 8_000
    assert path.read_bytes().endswith(b"\n")


def test_a_transient_full_disk_is_retried_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "progress.csv"
    backend = TearingCsvBackend(path, limit=8_000, tears=2)
    report = run_logger(backend, 200)
    assert backend.tearing is not None and backend.tearing.torn == 2
    assert report.backend_written == {"csv": 200} and report.complete
    assert read_csv(path)["iteration"].tolist() == list(range(1, 201))


# -- the async face ----------------------------------------------------------------------------
@pytest.mark.anyio
async def test_async_face(tmp_path: Path) -> None:
    log = AsyncOffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl", "csv"), display=NullDisplay(), handle_sigterm=False
    )
    async with log:
        for i in range(1, 101):
            await log.log_step(i, metrics(i))
            if i % 10 == 0:
                await log.aflush()
        report = await log.afinish()
    assert report.complete and report.backend_written["csv"] == 100
    assert assert_csv_equals_jsonl(tmp_path) == 100
