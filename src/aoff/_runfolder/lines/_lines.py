"""aoff's line files (``metrics.jsonl``, ``progress.csv``): reading them forward, from
the end, and cutting them back.

Why a module of its own: both files hold one row a line and are handled the same way:
:func:`aoff.read_scalars` reads what was appended since its last read (a last line
without its newline is left for the next read: a writer may be appending it); resume
reads the last row's step from the end and cuts the rows after a step (a temporary file,
``fsync``, renamed over the old one). Both hold aoff's one row shape (``step``,
``iteration``, ``wall_time``, then tags; a producer's or a sub-run's rows named in
``producer``/``run``; media rows naming a file).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

from .._nonfinite import NONFINITE
from .._replace import replaced
from .._tagseries import Series

__all__ = ["FIXED", "LineCursor", "RowSink", "cut_rows", "last_row_step"]

#: bytes read at a time from a file's end
_TAIL = 1 << 16

#: the columns that are not tags
FIXED = frozenset({"step", "iteration", "wall_time", "producer", "run", "media"})


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
        got = NONFINITE.get(v)
        if got is not None:
            return got
        try:
            return float(v) if v else None
        except ValueError:
            return None
    return None


#: the steps a series can hold (int64, as TensorBoard's and pandas' steps)
_STEP_MIN, _STEP_MAX = -(2**63), 2**63 - 1


def _step_of(cell: object) -> int | None:
    """A step cell as an int: an int, or its text (SB3 writes ``2048``); None when it is
    neither."""
    if isinstance(cell, bool):
        return None
    if isinstance(cell, int):
        return cell
    if isinstance(cell, str):
        try:
            return int(cell)
        except ValueError:
            return None
    return None


class RowSink:
    """aoff's rows turned into tag series: a producer's or sub-run's tags get its name
    and ``/`` in front (TensorBoard shows each as a run of its own, a sub-folder).

    ``step_key``: the column the step is in (``step``; SB3's ``progress.csv`` has
    ``time/total_timesteps``, the step SB3 gives TensorBoard). A row without a readable
    step, or whose step is beyond int64, is never read as something else: it is skipped
    and counted (:attr:`no_step`, :attr:`huge_steps`), for :meth:`notes` to say.

    The series are kept by sub-run (:attr:`groups`: ``""``, the run's own, first; then
    each producer's or sub-run's, by its prefix), as TensorBoard keeps a sub-folder's
    apart; :attr:`rows` counts the rows read of each."""

    def __init__(self, tags: Collection[str] | None, step_key: str = "step") -> None:
        self.tags = None if tags is None else frozenset(tags)
        #: the run's own series
        self.series: dict[str, Series] = {}
        #: sub-run prefix (``""``: the run's own) -> its series
        self.groups: dict[str, dict[str, Series]] = {"": self.series}
        #: sub-run prefix -> rows read of it
        self.rows: dict[str, int] = {"": 0}
        #: the run's own last row's ``iteration`` (None: no row had one)
        self.iteration: int | None = None
        self.step_key = step_key
        self.no_step = 0
        self.huge_steps = 0
        self.first_huge: int | None = None

    def notes(self, path: str) -> list[str]:
        """One line for each kind of row skipped so far, naming ``path``."""
        out = []
        if self.huge_steps:
            out.append(
                f"{path}: {self.huge_steps} row(s) with a step beyond int64 refused "
                f"(the first: step {self.first_huge}); steps must fit in int64"
            )
        if self.no_step:
            out.append(f"{path}: {self.no_step} row(s) without a {self.step_key!r} skipped")
        return out

    def row(self, row: Mapping[str, object]) -> None:
        if row.get("media"):
            return
        step = _step_of(row.get(self.step_key))
        if step is None:
            self.no_step += 1
            return
        if not _STEP_MIN <= step <= _STEP_MAX:
            self.huge_steps += 1
            if self.first_huge is None:
                self.first_huge = step
            return
        wall = as_float(row.get("wall_time"))
        prefix = ""
        for key in ("producer", "run"):
            name = row.get(key)
            if isinstance(name, str) and name:
                prefix = f"{name}/{prefix}" if key == "producer" else f"{prefix}{name}/"
        wall = math.nan if wall is None else wall
        wanted = self.tags
        series = self.groups.get(prefix)
        if series is None:
            series = self.groups[prefix] = {}
            self.rows[prefix] = 0
        self.rows[prefix] += 1
        if not prefix:
            it = row.get("iteration")
            if isinstance(it, int) and not isinstance(it, bool):
                self.iteration = it
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


def last_lines(path: str) -> Iterator[bytes]:
    """The file's complete lines (ending in a newline), last first, read from the end."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        # a last line without its newline was cut short: not a row
        f.seek(max(end - 1, 0))
        if end and f.read(1) != b"\n":
            tail_start = end
            while tail_start > 0:
                start = max(tail_start - _TAIL, 0)
                f.seek(start)
                chunk = f.read(tail_start - start)
                i = chunk.rfind(b"\n")
                if i >= 0:
                    end = start + i + 1
                    break
                tail_start = start
            else:
                return
        pos = end
        rest = b""
        while pos > 0:
            start = max(pos - _TAIL, 0)
            f.seek(start)
            chunk = f.read(pos - start) + rest
            lines = chunk.split(b"\n")
            rest = lines[0] if start > 0 else b""
            body = lines[1:] if start > 0 else lines
            for line in reversed(body):
                if line:
                    yield line
            pos = start


def last_row_step(path: str, parse: Callable[[bytes], int | None]) -> int | None:
    """The step of the file's last row that ``parse`` reads (None: no such row)."""
    for line in last_lines(path):
        step = parse(line)
        if step is not None:
            return step
    return None


def _needs_cut(path: str, parse: Callable[[bytes], int | None], step: int) -> bool:
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        if not end:
            return False
        f.seek(end - 1)
        if f.read(1) != b"\n":
            return True  # a torn last line
    last = last_row_step(path, parse)
    return last is not None and last > step


def cut_rows(
    path: str,
    parse: Callable[[bytes], int | None],
    step: int,
    *,
    header: bool,
    check: Callable[[], None] | None = None,
) -> None:
    """Drop every row after ``step`` (and a torn last line) from ``path``, when it has
    any: the rows kept (and the first line, when it is a ``header``) go to a temporary
    file, ``fsync``-ed and renamed over ``path``. ``check`` runs first when a cut is due
    (it raises to refuse)."""
    if not _needs_cut(path, parse, step):
        return
    if check is not None:
        check()
    mode = stat.S_IMODE(os.stat(path).st_mode)
    with replaced(path, prefix=".aoff-cut-", mode=mode) as out, open(path, "rb") as src:
        first = header
        for line in src:
            if not line.endswith(b"\n"):
                break  # a last line cut short
            if first:
                out.write(line)
            else:
                s = parse(line)
                if s is not None and s <= step:
                    out.write(line)
            first = False
