"""The run folder's formats are one table: a format added in one module plus one registry
line (``tests/tsvformat.py``, as docs/architecture.md says) is written in both pump
modes, and read back by :func:`aoff.read_scalars`, ``aoff ls``, ``aoff show``, ``aoff
export`` and resume."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import aoff
from aoff import OffPolicyLogger
from aoff.__main__ import main
from aoff._pump import _registry
from aoff._runfolder.reading._formats import formats


@pytest.fixture
def tsv() -> Iterator[object]:
    name = f"{__package__}.tsvformat"
    module = importlib.reload(sys.modules[name]) if name in sys.modules else None
    module = module or importlib.import_module(name)
    try:
        yield module
    finally:
        _registry.unregister("tsv")


def log(run_dir: Path, first: int, last: int, pump: str, resume_step: int | None = None) -> None:
    logger = OffPolicyLogger(
        num_envs=1,
        log_dir=str(run_dir),
        log_backend="none",
        backends=("tsv",),
        display="none",
        pump=pump,
        resume_step=resume_step,
    )
    for i in range(first, last + 1):
        logger.log_step(i, {"train/loss": i / 2})
    report = logger.finish()
    assert report.backend_written["tsv"] == last - first + 1


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_a_format_added_by_one_module_and_one_registry_line_is_read_everywhere(
    tmp_path: Path, tsv: object, pump: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "runs" / "r1"
    log(run_dir, 1, 6, pump)
    # the run summary stands for the run while its data files keep their sizes: the
    # format's file is one of them (the summary writer asks the table, not a name list)
    assert "metrics.tsv" in json.loads((run_dir / "aoff-summary.json").read_text())["files"]
    log(run_dir, 4, 8, pump, resume_step=3)  # resume cuts the format's rows 4..6 first
    assert [p.name for p in run_dir.iterdir() if p.suffix == ".tsv"] == ["metrics.tsv"]
    df = aoff.read_scalars(run_dir, ["train/loss"])
    assert df["step"].tolist() == list(range(1, 9))
    assert df["value"].tolist() == [i / 2 for i in range(1, 9)]
    for summary in run_dir.glob("aoff-summary*.json"):
        summary.unlink()  # ls/show read the format's own file, not their shortcut
    capsys.readouterr()
    assert main(["ls", str(tmp_path / "runs")]) == 0
    assert "r1" in capsys.readouterr().out
    assert main(["show", str(run_dir)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "train/loss" in line)
    assert "0.5" in row and "4" in row, out
    exported = tmp_path / "out.csv"
    assert main(["export", str(run_dir), "--tag", "train/loss", "-o", str(exported)]) == 0
    assert len(exported.read_text().splitlines()) == 1 + 8  # the header, a row a point


def test_unregistering_takes_the_format_out_of_the_table(tsv: object) -> None:
    assert "tsv" in [f.name for f in formats()]
    _registry.unregister("tsv")
    assert "tsv" not in [f.name for f in formats()]


def test_a_format_defined_in_the_script_itself_keeps_the_pump_here(
    tmp_path: Path, tsv: object
) -> None:
    """The agent imports a format by its class's module: ``__main__`` is not one it can."""
    from aoff._pump._options import Options
    from aoff._pump._registry import NamedBackend

    from .tsvformat import TSV, TsvFormat

    here = type("HereFormat", (TsvFormat,), {"__module__": "__main__"})
    fmt = here("here", "here.tsv", ".tsv", TSV.reader, TSV.last_step_in, TSV.cut_file)
    _registry.register(NamedBackend("here", needs_log_dir="x", format=fmt))
    try:
        line = Options(log_dir=str(tmp_path), backends=("here",)).in_process_line()
        assert line is not None and "the format of backend 'here', defined in __main__" in line
        assert Options(log_dir=str(tmp_path), backends=("tsv",)).in_process_line() is None
    finally:
        _registry.unregister("here")


def test_the_table_counts_writers_and_bytes_to_read_as_the_formats_say(tmp_path: Path) -> None:
    """``aoff compare``'s progress and ``show``'s writer count come from the formats:
    the bytes a TensorBoard reader reads (sub-folders too) and one writer an event file."""
    from aoff._core._records import StepRecord
    from aoff._runfolder.reading._formats import bytes_to_read, writers
    from aoff._runfolder.tensorboard._events import load_event_class
    from aoff._runfolder.tensorboard._format import TENSORBOARD

    event_cls, enc = load_event_class(), TENSORBOARD.encoder()
    recs = [StepRecord(i, i, 1.0 + i, (("train/loss", i / 2),)) for i in range(1, 40)]
    for name in (
        "events.out.tfevents.1.h.1.0",
        "events.out.tfevents.2.h.1.0",
        "sub/events.out.tfevents.3.h.1.0",
    ):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        head = TENSORBOARD.file_head(event_cls, 1.0, None)
        (tmp_path / name).write_bytes(head + TENSORBOARD.encode(recs, encoder=enc))
    assert writers(str(tmp_path)) == 2
    points = TENSORBOARD.points(str(tmp_path), None)
    assert points is not None and len(points.read()) == 2  # the run's own, and sub/
    assert bytes_to_read(str(tmp_path)) == points.bytes_read > 0


@pytest.mark.anyio
async def test_a_built_in_backend_writes_the_bytes_of_the_format_its_entry_names(
    tmp_path: Path,
) -> None:
    """The backend owns the file, its registry entry's format the bytes: a JSONL backend's
    lines are its format's ``encode``, whatever encoding a swapped-in format gives."""
    from aoff._backends._base import BackendContext
    from aoff._backends._csv import CsvBackend
    from aoff._backends._jsonl import JsonlBackend
    from aoff._backends._tensorboard import TensorBoardBackend
    from aoff._core._records import Record, StepRecord
    from aoff._runfolder._pieces import Pieces, whole
    from aoff._runfolder.lines._formats import JSONL, JsonlFormat

    for cls in (TensorBoardBackend, JsonlBackend, CsvBackend):
        assert cls.format is _registry.entry(cls.name).format

    class Upper(JsonlFormat):
        def encode(self, records: Sequence[Record], pieces: Pieces = whole) -> bytes:
            return JSONL.encode(records, pieces).upper()

    class Shouting(JsonlBackend):
        format = Upper("up", "m.jsonl", ".jsonl", JSONL.reader, JSONL.last_step_in, JSONL.cut_file)

    recs = [StepRecord(1, 1, 1.0, (("train/loss", 0.5),))]
    backend = Shouting(tmp_path / "m.jsonl")
    await backend.open(BackendContext())
    await backend.write(recs)
    await backend.close()
    assert (tmp_path / "m.jsonl").read_bytes() == JSONL.encode(recs).upper()
