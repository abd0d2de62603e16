"""``progress.csv``: its name, its rows read back as scalar series, its last step and
its cut after a step (resume).

Why a module of its own: the CSV backend writes this file, resume cuts it and
:func:`aoff.read_scalars` reads it; its name is spelled here once. The first line is the
header (``step``, ``iteration``, ``wall_time``, then tags); an empty cell is a tag the
row does not have. The writer rewrites the whole file when a new tag adds a column:
a reader that finds a new header reads the rows again and skips those it already had.
"""

from __future__ import annotations

import csv
from collections.abc import Collection

from ._lines import LineCursor, RowSink, cut_rows, last_row_step

__all__ = ["CSV_NAME", "CsvScalars", "cut_after", "last_step", "row_step"]

CSV_NAME = "progress.csv"


class CsvScalars:
    """The rows appended to one ``progress.csv`` since the last :meth:`read`."""

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
