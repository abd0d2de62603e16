"""A line file's points as the format table hands them over (:class:`RowPoints`), and
the one-file line format (:class:`LineFormat`) that ``metrics.jsonl``, ``progress.csv``
and any other one-row-a-line file of aoff's rows share.

Why a module of its own: a line file is read the same way whatever its encoding (a
cursor over whole lines, rows into a :class:`~aoff._runfolder.lines._lines.RowSink`),
found, last-stepped and cut the same way; only how a line is parsed and how its step is
read differ, and those are the format's parameters.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .._tagseries import Series

if TYPE_CHECKING:  # a line file's reader loads them, the table entry does not
    from ._lines import LineCursor, RowSink

__all__ = ["LineFormat", "LineScalars", "RowPoints"]


class LineScalars(Protocol):
    """An incremental reader of one line file: its cursor, its rows' sink, ``read``."""

    cursor: LineCursor
    sink: RowSink

    def read(self) -> None: ...


class RowPoints:
    """The points of one line file, read incrementally through its reader."""

    def __init__(self, reader: LineScalars) -> None:
        self.reader = reader

    def read(self) -> list[dict[str, Series]]:
        self.reader.read()
        return list(self.reader.sink.groups.values())

    @property
    def rows(self) -> int | None:
        return self.reader.sink.rows[""]

    @property
    def iteration(self) -> int | None:
        return self.reader.sink.iteration

    def apart(self) -> dict[str, int]:
        return {p.rstrip("/"): n for p, n in self.reader.sink.rows.items() if p}

    def problems(self) -> list[tuple[str, int, int]]:
        c = self.reader.cursor
        return [(c.path, c.corrupt, c.torn)]

    def notes(self) -> list[str]:
        return self.reader.sink.notes(self.reader.cursor.path)

    bytes_read = 0
    bulk_records = 0

    @property
    def retracted(self) -> list[tuple[int, frozenset[str] | None]]:
        return []

    def handed_out(self) -> None:
        return


@dataclass(frozen=True)
class LineFormat:
    """A file of one row a line in a run folder: ``file_name`` in the folder, or any file
    ending in ``suffix`` given alone; ``reader`` reads its rows, ``last_step_in`` and
    ``cut_file`` are the file's last step and its cut (``_lines``' :func:`last_row_step`
    and :func:`cut_rows` with the format's parser of a line's step)."""

    name: str
    file_name: str
    suffix: str
    reader: Callable[[str, Collection[str] | None], LineScalars]
    last_step_in: Callable[[str], int | None]
    cut_file: Callable[[str, int], None]
    exact: bool = False
    holds_points: bool = True
    last_step_fallback: bool = False

    @property
    def label(self) -> str:
        return self.file_name

    def files(self, folder: str) -> list[str]:
        path = os.path.join(folder, self.file_name)
        return [path] if os.path.isfile(path) else []

    def points(self, path: str, tags: Collection[str] | None) -> RowPoints | None:
        if os.path.isfile(path):
            return RowPoints(self.reader(path, tags)) if path.endswith(self.suffix) else None
        found = self.files(path)
        return RowPoints(self.reader(found[0], tags)) if found else None

    def last_step(self, folder: str) -> int | None:
        found = self.files(folder)
        return self.last_step_in(found[0]) if found else None

    def cut_after(self, folder: str, step: int) -> None:
        for path in self.files(folder):
            self.cut_file(path, step)

    def writers(self, folder: str) -> int:
        return 0  # one file that every writer appends to

    def bytes_to_read(self, path: str) -> int:
        return 0  # RowPoints.bytes_read: not counted
