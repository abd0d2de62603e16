"""The format table: every :class:`~aoff._runfolder._format.RunFormat` the readers,
resume and run discovery iterate, in the order a run's points are chosen from.

Why a table: "which files make a run", "where do a run's points come from", "what is
the last step" and "what is cut on resume" were each a list of file names; each now asks
every format in turn, so a format added here (by the backend registry, whose entry
points at its format) is seen by all of them. A run's points come from the first format
that has any: its TensorBoard event files (aoff's or any other writer's), else
``metrics.jsonl``, else ``progress.csv``, else a format added later.
"""

from __future__ import annotations

from .._format import RunFormat
from ..lines._formats import CSV, JSONL
from ..summary._format import SUMMARY
from ..tensorboard._format import TENSORBOARD

__all__ = [
    "add_format",
    "bytes_to_read",
    "data_files",
    "formats",
    "labels",
    "remove_format",
    "writers",
]

_TABLE: list[RunFormat] = [TENSORBOARD, JSONL, CSV, SUMMARY]


def formats() -> tuple[RunFormat, ...]:
    """The formats, in order."""
    return tuple(_TABLE)


def add_format(fmt: RunFormat) -> None:
    """Add a format after the others (the same one again: nothing; another of the same
    name: an error, never a silent swap)."""
    if not isinstance(fmt, RunFormat):
        raise TypeError(f"not a RunFormat: {fmt!r}")
    for known in _TABLE:
        if known.name == fmt.name:
            if known == fmt:
                return
            raise ValueError(f"a run folder format named {fmt.name!r} is registered already")
    _TABLE.append(fmt)


def remove_format(name: str) -> None:
    """Take a format out (a test's throwaway one)."""
    _TABLE[:] = [f for f in _TABLE if f.name != name]


def labels(*, points: bool = False, more: tuple[str, ...] = ()) -> str:
    """The formats' files named for a message (``"a, b or c"``); ``points``: only those
    whose files hold points; ``more``: other names after them."""
    found = [f.label for f in _TABLE if not points or f.holds_points] + list(more)
    return found[0] if len(found) == 1 else ", ".join(found[:-1]) + " or " + found[-1]


def data_files(folder: str) -> list[str]:
    """The files directly in ``folder`` that hold the run's points, every format's (the
    run summary records their sizes: it stands for the run while none is smaller)."""
    return [path for f in _TABLE if f.holds_points for path in f.files(folder)]


def writers(folder: str) -> int:
    """How many sessions or writers wrote into ``folder``: the most any format's files
    show (one each), at least one."""
    return max([f.writers(folder) for f in _TABLE] + [1])


def bytes_to_read(path: str) -> int:
    """The bytes the formats' readers of the run at ``path`` read in all (those that
    count them: :attr:`~aoff._runfolder._format.Points.bytes_read`)."""
    return sum(f.bytes_to_read(path) for f in _TABLE)
