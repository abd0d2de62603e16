"""``progress.csv``: its name, what a row and the header are (written and read back as
scalar series), its last step and its cut after a step (resume).

Why a module of its own: the CSV backend appends this file, resume cuts it and
:func:`aoff.read_scalars` reads it; its cells and its header's rule are spelled here once
(its name in ``_names``, which the format table reads without loading this module). The
backend (:mod:`aoff._backends._csv`) keeps the file open, the threads, the rewrite's
temporary file and the errors.

Columns: ``step``, ``iteration``, ``wall_time``, then every tag in the order it was
first seen. A producer's row (``log.remote(name)``) has its name in a ``producer``
column (empty for the run's own rows), and that producer's own step and iteration; a
``SummaryWriter`` sub-run's row (``add_scalars``, ``add_hparams``) has its folder in a
``run`` column (texts and histograms are not CSV cells: TensorBoard and JSONL). A
row without some tag leaves that cell empty (pandas reads ``NaN``); a tag
that repeats within a record keeps its last value, and a tag named like one of the three
fixed columns never hides the record's own value (as in ``metrics.jsonl``). Values are
written with ``repr(float)``, which round-trips; non-finite ones read ``nan``, ``inf``
and ``-inf``, which pandas reads as floats.

The header is written with the first rows and changes only when rows bring a tag it
does not have (:func:`new_columns`): then the whole file is written again with the new
header and every existing row padded with empty cells (:func:`copy_padded`). A reader
that finds a new header reads the rows again and skips those it already had.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterable, Sequence
from itertools import chain
from typing import TextIO

from ..._core._columns import ScalarColumns, row_spans
from ..._core._records import Record, StepRecord, TextRecord, WriterRecord
from ._lines import LineCursor, RowSink, cut_rows, last_row_step
from ._names import CSV_NAME

__all__ = [
    "CSV_NAME",
    "FIXED_COLUMNS",
    "CsvScalars",
    "RowCells",
    "batch_cells",
    "copy_padded",
    "cut_after",
    "encode_rows",
    "header_line",
    "last_step",
    "media_cells",
    "new_columns",
    "read_header",
    "record_cells",
    "row_step",
]

FIXED_COLUMNS = ("step", "iteration", "wall_time")
#: the step column of Stable-Baselines3's own ``progress.csv`` (its logger's CSV format,
#: which has no ``step``): the ``num_timesteps`` SB3 gives TensorBoard as the step
SB3_STEP = "time/total_timesteps"


def record_cells(rec: Record) -> dict[str, str]:
    """A record's cells as text, keyed by column (fixed columns win over like-named tags).
    A text has no column: its row keeps only where it was (step, time, run folder)."""
    cells = {"step": "", "iteration": "", "wall_time": ""}
    run = ""
    match rec:
        case StepRecord(scalars=scalars):
            pass
        case WriterRecord(scalars=scalars, run=run):
            pass
        case TextRecord(run=run):
            scalars = ()
    for tag, value in scalars:
        cells[tag] = repr(float(value))
    cells["step"] = str(rec.step)
    cells["iteration"] = str(rec.iteration)
    cells["wall_time"] = repr(float(rec.wall_time))
    if rec.producer is not None:  # log.remote(name): a "producer" column
        cells["producer"] = rec.producer
    if run:  # SummaryWriter's add_scalars/add_hparams: a "run" column (its folder)
        cells["run"] = run
    return cells


class RowCells:
    """A run of a run fold's rows (``_core/_columns.row_run``) as CSV cells, a column at
    a time: the cells :func:`record_cells` gives each of them (its keys, its texts), made
    with one ``repr`` a value and one format a row, no dict a row."""

    __slots__ = ("_texts", "keys")

    def __init__(self, table: ScalarColumns, a: int, records: Sequence[Record]) -> None:
        b = a + len(records)
        # a key's source, in record_cells' order: the fixed three first and always the
        # record's own, then each tag where it first comes, holding its last value
        source: dict[str, int] = {name: -1 - k for k, name in enumerate(FIXED_COLUMNS)}
        for j, tag in enumerate(table.tags):
            if tag not in FIXED_COLUMNS:
                source[tag] = j
        self.keys = list(source)
        values = table.values[a:b].T.tolist()
        fixed = (
            list(map(str, table.steps[a:b].tolist())),
            [str(r.iteration) for r in records],
            list(map(repr, table.wall_times[a:b].tolist())),
        )
        self._texts = {
            key: fixed[-1 - j] if j < 0 else list(map(repr, values[j])) for key, j in source.items()
        }

    def __len__(self) -> int:
        return len(self._texts["step"])

    def text(self, columns: Sequence[str]) -> str:
        """The rows' lines under the header ``columns`` (which hold every key)."""
        texts = self._texts
        line = ",".join(["%s" if c in texts else "" for c in columns]) + "\n"
        cells = zip(*[texts[c] for c in columns if c in texts], strict=True)
        return (line * len(self)) % tuple(chain.from_iterable(cells))


def batch_cells(records: Sequence[Record]) -> list[dict[str, str] | RowCells]:
    """A batch's rows: each run of at least ``MIN_RUN`` of a run fold's rows as one
    :class:`RowCells`, every other record's :func:`record_cells`."""
    out: list[dict[str, str] | RowCells] = []
    for i, j, table, a in row_spans(records):
        if table is not None:
            out.append(RowCells(table, a, records[i:j]))
        else:
            out += map(record_cells, records[i:j])
    return out


def media_cells(row: dict[str, object]) -> dict[str, str]:
    """A media file's row (``_mediafiles``) as cells: its path has no character CSV
    would quote."""
    return {k: repr(v) if isinstance(v, float) else str(v) for k, v in row.items()}


def header_line(columns: Iterable[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(columns)
    return buf.getvalue()


def encode_rows(rows: Iterable[dict[str, str] | RowCells], columns: Sequence[str]) -> str:
    # Cells are numbers, "nan", "inf", "-inf" or empty: nothing that needs quoting.
    return "".join(
        row.text(columns)
        if type(row) is RowCells
        else ",".join([row.get(c, "") for c in columns]) + "\n"  # type: ignore[union-attr]
        for row in rows
    )


def new_columns(columns: Sequence[str], rows: Iterable[dict[str, str] | RowCells]) -> list[str]:
    """The columns ``rows`` bring that ``columns`` lacks, in first-seen order."""
    known = set(columns)
    new: dict[str, None] = {}  # an ordered set
    for row in rows:
        keys: Iterable[str] = row.keys if isinstance(row, RowCells) else row
        for key in keys:
            if key not in known:
                new[key] = None
    return list(new)


def copy_padded(src: TextIO, out: TextIO, columns: Sequence[str]) -> None:
    """The file ``src`` again into ``out`` under the header ``columns``: every row padded
    with empty cells to its width (the new columns are last)."""
    width = len(columns)
    writer = csv.writer(out, lineterminator="\n")
    reader = csv.reader(src)
    next(reader, None)  # the old header
    writer.writerow(columns)
    for cells in reader:
        if len(cells) < width:
            cells.extend([""] * (width - len(cells)))
        writer.writerow(cells)


def read_header(path: str) -> list[str] | None:
    """The header of an existing, non-empty file (None: no such file, or empty)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return next(csv.reader(f), None) or None
    except FileNotFoundError:
        return None


class CsvScalars:
    """The rows appended to one ``progress.csv`` since the last :meth:`read`: aoff's, or
    SB3's own (no ``step`` column: its ``time/total_timesteps`` is the step, and its rows
    have no wall time)."""

    def __init__(self, path: str, tags: Collection[str] | None) -> None:
        self.cursor = LineCursor(path)
        self.sink = RowSink(tags)
        self.header: list[str] | None = None
        self.rows_seen = 0

    def read(self) -> None:
        lines = self.cursor.new_lines()
        if not lines:
            return
        records = csv.reader(line.decode("utf-8", "replace") for line in lines)
        skip = 0
        if self.cursor.start == 0:  # the header, first or rewritten
            header = next(records, None)
            if header is None:
                return
            self.header = header
            if "step" not in header and SB3_STEP in header:
                self.sink.step_key = SB3_STEP
            skip = self.rows_seen
        names = self.header
        if names is None:
            return
        row = self.sink.row
        for cells in records:
            if len(cells) != len(names):
                self.cursor.corrupt += 1
                continue
            if skip:
                skip -= 1
                continue
            self.rows_seen += 1
            row(dict(zip(names, cells, strict=True)))


def row_step(line: bytes) -> int | None:
    """The ``step`` of one row: its first cell (None: the header, or not a row)."""
    first = line.split(b",", 1)[0].strip()
    try:
        return int(first)
    except ValueError:
        return None


def last_step(path: str) -> int | None:
    """The last row's step, read from the file's end."""
    return last_row_step(path, row_step)


def cut_after(path: str, step: int) -> None:
    """Drop every row after ``step`` (resume); the header stays. A file whose header
    does not start with ``step`` was not written by aoff: ``ValueError``, untouched."""

    def check() -> None:
        with open(path, encoding="utf-8", newline="") as f:
            header = next(csv.reader(f), None)
        if not header or header[0] != "step":
            raise ValueError(
                f"resume_step={step}: {path} does not start with a 'step' column; "
                "it was not written by aoff and is left as it is"
            )

    cut_rows(path, row_step, step, header=True, check=check)
