"""``progress.csv``: its name, and its rows read back as scalar series.

Why a module of its own: the CSV backend writes this file, resume cuts it and
:func:`aoff.read_scalars` reads it; its name is spelled here once. The first line is the
header (``step``, ``iteration``, ``wall_time``, then tags); an empty cell is a tag the
row does not have. The writer rewrites the whole file when a new tag adds a column:
a reader that finds a new header reads the rows again and skips those it already had.
"""

from __future__ import annotations

import csv
from collections.abc import Collection

from ._lines import LineCursor, RowSink

__all__ = ["CSV_NAME", "CsvScalars"]

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
