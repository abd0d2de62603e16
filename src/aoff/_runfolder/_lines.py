"""The whole lines appended to a text file since the last read, and the rows in them.

Why a module of its own: ``metrics.jsonl`` and ``progress.csv`` are both read the same
way by :func:`aoff.read_scalars` (from an offset, a last line without its newline left
for the next read: a writer may be appending it) and both hold aoff's one row shape
(``step``, ``iteration``, ``wall_time``, then tags; a producer's or a sub-run's rows
named in ``producer``/``run``; media rows naming a file).
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ._series import Series

__all__ = ["FIXED", "LineCursor", "RowSink"]

#: the columns that are not tags
FIXED = frozenset({"step", "iteration", "wall_time", "producer", "run", "media"})
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


@dataclass
class LineCursor:
    """Where the reading of one line file stands."""

    path: str
    offset: int = 0
    #: bytes after ``offset`` without their newline at the end of the last read
    torn: int = 0
    #: lines that could not be read (skipped), in all
    corrupt: int = 0
    size_seen: int = 0
    #: whether the last read found the file shorter than before (read again from 0)
    rewound: bool = False
    #: the offset the last read started at
    start: int = 0

    def new_lines(self) -> list[bytes]:
        """The complete lines appended since the last call (a file cut back or replaced
        by a shorter one is read again from the start: ``rewound``)."""
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.rewound = size < self.size_seen
            if self.rewound:
                self.offset = 0
            self.size_seen = size
            f.seek(self.offset)
            self.start = self.offset
            data = f.read()
        cut = data.rfind(b"\n") + 1
        self.offset += cut
        self.torn = len(data) - cut
        return data[:cut].splitlines()


def as_float(v: object) -> float | None:
    """A cell's value as a float (the non-finite strings aoff writes included)."""
    if isinstance(v, bool | int | float):
        return float(v)
    if isinstance(v, str):
        got = _NONFINITE.get(v)
        if got is not None:
            return got
        try:
            return float(v) if v else None
        except ValueError:
            return None
    return None


class RowSink:
    """aoff's rows turned into tag series: a producer's or sub-run's tags get its name
    and ``/`` in front (TensorBoard shows each as a run of its own, a sub-folder)."""

    def __init__(self, tags: Collection[str] | None) -> None:
        self.tags = None if tags is None else frozenset(tags)
        self.series: dict[str, Series] = {}

    def row(self, row: Mapping[str, object]) -> None:
        if row.get("media"):
            return
        step = row.get("step")
        wall = as_float(row.get("wall_time"))
        if isinstance(step, str):
            try:
                step = int(step)
            except ValueError:
                return
        if not isinstance(step, int) or isinstance(step, bool):
            return
        prefix = ""
        for key in ("producer", "run"):
            name = row.get(key)
            if isinstance(name, str) and name:
                prefix = f"{name}/{prefix}" if key == "producer" else f"{prefix}{name}/"
        wall = math.nan if wall is None else wall
        wanted = self.tags
        series = self.series
        for tag, cell in row.items():
            if tag in FIXED:
                continue
            value = as_float(cell)
            if value is None:
                continue
            name = prefix + tag if prefix else tag
            if wanted is not None and name not in wanted:
                continue
            got = series.get(name)
            if got is None:
                got = series[name] = Series()
            got.point(step, wall, value)
