"""Runs as data: :func:`aoff.read_scalars` and the incremental :class:`aoff.ScalarReader`.

Why a module of its own: this is the public reader over the run folder's formats. A run
is a folder (or one file), named in the result as it was given; a folder of runs is
its runs, each named by its path under it (``_runfind.runs_in``: what ``aoff ls`` and
``compare`` see). A run's scalars come from its TensorBoard event files when it has any
(aoff's, or any other writer's: torch's ``SummaryWriter``, tensorboardX, SB3, CleanRL,
TF2), else from aoff's ``metrics.jsonl``, else ``progress.csv`` (aoff's, or SB3's own).
Event files in a run's sub-folders are read too, each sub-folder as TensorBoard reads it
(a run of its own), its path and ``/`` before its tags. A row whose step is beyond int64
is refused and said, never read as another number.

A file's torn last record (a crash, or a writer still appending) ends what is read of it
and is left for the next :meth:`ScalarReader.read`; a record whose checksum fails in the
middle is skipped and counted. Both are named in :attr:`ScalarReader.problems` and, by
:func:`read_scalars`, in one :class:`aoff.AoffWarning` per file.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..._core._warning import AoffWarning
from .._format import Points
from .._tagseries import Columns, Series, joined
from ..tensorboard import _evfolder  # noqa: F401  (the event parser, loaded with its reader)
from ._formats import formats, labels
from ._runfind import runs_in

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "ScalarReader", "read_scalars"]

#: the long form's columns
COLUMNS = ("run", "tag", "step", "wall_time", "value")

PathArg = str | os.PathLike[str]


class _Run:
    """One run as given: the format its scalars come from, read incrementally."""

    def __init__(self, given: PathArg, tags: Collection[str] | None) -> None:
        self.name = os.fspath(given)
        self.path = self.name
        self.tags = tags
        self.points: Points | None = None
        #: the format read (None: none found yet)
        self.kind: str | None = None

    def _choose(self) -> None:
        path = self.path
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such run folder or file")
        for fmt in formats():
            got = fmt.points(path, self.tags)
            if got is not None:
                self.points, self.kind = got, fmt.name
                return
        if os.path.isfile(path):
            raise ValueError(
                f"{path}: not a run folder, nor a file of one of its formats "
                f"({labels(points=True)})"
            )

    def read(self) -> list[dict[str, Series]]:
        """Read what is new; the series that hold it (each to be taken)."""
        if self.points is None:
            self._choose()
            if self.points is None:
                return []
        return self.points.read()

    def notes(self) -> list[str]:
        """Rows that were skipped or refused, a line per file and kind."""
        return [] if self.points is None else self.points.notes()

    def problems(self) -> list[tuple[str, int, int]]:
        """``(file, corrupt records skipped, torn bytes at its end)`` of each file."""
        return [] if self.points is None else self.points.problems()


class ScalarReader:
    """Reads runs' scalars; each :meth:`read` returns only what was appended since the
    last one (each file's offset is kept; a torn last record is read once it is whole).

    ``paths``: run folders (or single event, ``.jsonl`` or ``.csv`` files), or one of
    them; each run is named in the result as given; a folder of runs is its runs, found
    when the reader is made, each named by its path under it. ``tags``: only these tags (a
    sub-folder's tags with its path in front). What each run is read from is chosen at
    its first read that finds files: its event files, else ``metrics.jsonl``, else
    ``progress.csv``. :func:`read_scalars` is the one-shot form.

    A path that does not exist raises ``FileNotFoundError`` at :meth:`read`; an existing
    folder with no data yet reads as no rows (a run that has not written yet)."""

    def __init__(self, paths: PathArg | Iterable[PathArg], tags: Iterable[str] | None = None):
        if isinstance(paths, str | os.PathLike):
            paths = [paths]
        wanted = None if tags is None else frozenset([tags] if isinstance(tags, str) else tags)
        self._skipped: list[str] = []  # folders of runs that could not be listed
        self._runs = [_Run(run, wanted) for p in paths for run in _runs_named(p, self._skipped)]
        self._said: dict[str, tuple[int, int]] = {}
        self._said_notes: set[str] = set()

    @property
    def problems(self) -> list[str]:
        """One line for each file with skipped records or a torn end, as of the last read."""
        lines = [f"{line}: skipped" for line in self._skipped]
        for run in self._runs:
            lines.extend(run.notes())
            for path, corrupt, torn in run.problems():
                if corrupt:
                    lines.append(f"{path}: {corrupt} corrupt record(s) skipped")
                if torn:
                    lines.append(f"{path}: the last record is torn ({torn} bytes); read up to it")
        return lines

    @property
    def bytes_read(self) -> int:
        """Bytes of event files read so far (each byte once, however often :meth:`read`
        is called)."""
        return sum(run.points.bytes_read for run in self._runs if run.points is not None)

    @property
    def bulk_records(self) -> int:
        """Event records decoded in bulk so far (the others one by one)."""
        return sum(run.points.bulk_records for run in self._runs if run.points is not None)

    @property
    def retracted(self) -> list[tuple[str, int, frozenset[str] | None]]:
        """``(run, step, tags or None)`` for each TensorBoard purge (a resumed run's
        ``SessionLog.START``) that hides points an earlier :meth:`read` handed out: the
        points at ``step`` and after, of those tags (all when None)."""
        return [
            (run.name, step, tags)
            for run in self._runs
            if run.points is not None
            for step, tags in run.points.retracted
        ]

    def read_columns(self) -> list[tuple[str, str, Columns]]:
        """``(run, tag, (steps, wall_times, values))`` of what is new, runs in the order
        given, tags in the order first seen, points in the order read."""
        return [(run, tag, joined(parts)) for run, tag, parts in self._read_parts()]

    def _read_parts(self) -> list[tuple[str, str, list[Columns]]]:
        out: list[tuple[str, str, list[Columns]]] = []
        for run in self._runs:
            for series in run.read():
                for tag, s in series.items():
                    if len(s):
                        out.append((run.name, tag, s.take_parts()))
            if run.points is not None:
                run.points.handed_out()
        return out

    def read(self) -> pd.DataFrame:
        """The new points as a long DataFrame: ``run``, ``tag`` (both categorical),
        ``step`` (int64), ``wall_time`` and ``value`` (float64)."""
        return to_frame(self._read_parts())

    def warn_problems(self) -> None:
        """One :class:`aoff.AoffWarning` per file whose problems changed since the last."""
        for line in [f"{s}: skipped" for s in self._skipped] + [
            n for run in self._runs for n in run.notes()
        ]:
            if line not in self._said_notes:
                self._said_notes.add(line)
                warnings.warn(line, AoffWarning, stacklevel=3)
        for run in self._runs:
            for path, corrupt, torn in run.problems():
                if (corrupt, torn) == self._said.get(path, (0, 0)):
                    continue
                self._said[path] = (corrupt, torn)
                parts = []
                if corrupt:
                    parts.append(f"{corrupt} corrupt record(s) skipped")
                if torn:
                    parts.append(f"the last record is torn ({torn} bytes); read up to it")
                if parts:
                    warnings.warn(f"{path}: {'; '.join(parts)}", AoffWarning, stacklevel=3)


def _runs_named(given: PathArg, skipped: list[str]) -> list[str]:
    """The runs ``given`` names: itself, or the runs of a folder of runs. A folder with
    no run in it yet stays itself (a run that has not written yet)."""
    path = os.fspath(given)
    return runs_in(path, skipped) or [path]


def to_frame(columns: list[tuple[str, str, list[Columns]]]) -> pd.DataFrame:
    """The long DataFrame of ``(run, tag, parts)``, in that order (each part copied once,
    into its place)."""
    import pandas as pd

    runs: dict[str, int] = {}
    tags: dict[str, int] = {}
    sizes = [sum(len(p[0]) for p in parts) for _, _, parts in columns]
    total = sum(sizes)
    run_ids = [runs.setdefault(r, len(runs)) for r, _, _ in columns]
    tag_ids = [tags.setdefault(t, len(tags)) for _, t, _ in columns]
    steps = np.empty(total, np.int64)
    # wall times and values as the two rows of one array: pandas keeps it as one block
    # instead of copying the two columns into one (a second pass over the data)
    floats = np.empty((2, total), np.float64)
    at = 0
    for _, _, parts in columns:
        for s, w, v in parts:
            n = len(s)
            steps[at : at + n] = s
            floats[0, at : at + n] = w
            floats[1, at : at + n] = v
            at += n
    df = pd.DataFrame(floats.T, columns=["wall_time", "value"], copy=False)
    df.insert(0, "step", steps)
    codes = np.repeat(np.asarray(tag_ids, np.int32), sizes)
    df.insert(0, "tag", pd.Categorical.from_codes(codes, categories=list(tags)))
    codes = np.repeat(np.asarray(run_ids, np.int32), sizes)
    df.insert(0, "run", pd.Categorical.from_codes(codes, categories=list(runs)))
    return df


def read_scalars(
    paths: PathArg | Iterable[PathArg],
    tags: Iterable[str] | None = None,
    *,
    axes: bool = False,
    bucket: int | None = None,
) -> pd.DataFrame:
    """Every scalar of the runs at ``paths`` as one long DataFrame (``run``, ``tag``,
    ``step``, ``wall_time``, ``value``; ``run`` is each path as given, or a folder of
    runs' path joined with each run's path under it).

    ``axes=True`` adds one column per axis present (``iteration``, ``env_steps``, each
    ``axes=`` name): each point's record's value on it, NaN where it had none (see
    ``_runfolder/reading/_axiscols.py``).

    ``bucket=N``: instead, one row per run, tag and bucket of ``N`` steps (``step`` is
    the bucket's first, a multiple of ``N``) with the bucket's ``min``, ``max``,
    ``mean``, ``last`` and ``count`` of the values and its last point's ``wall_time``:
    an envelope that never hides a spike (``ValueError`` unless ``N`` is an int >= 1).

    Raises ``FileNotFoundError`` for a path that does not exist and ``ValueError`` for
    one that holds no event files, ``metrics.jsonl`` or ``progress.csv``. A torn last
    record, a corrupt one in the middle, rows without a step and rows whose step is
    beyond int64 give one :class:`aoff.AoffWarning` per file and kind."""
    if bucket is not None:
        if axes:
            raise ValueError(
                "read_scalars: axes=True and bucket= do not combine (a bucket's envelope "
                "has no one point, so no one point's axes)"
            )
        from ._envelopes import envelopes

        envelopes(to_frame([]), bucket)  # a bad bucket is refused before any reading
    wanted = None if tags is None else list(tags)
    # the axes are tags of their own: read every tag, keep those asked for once joined
    reader = ScalarReader(paths, None if axes else wanted)
    columns = reader._read_parts()
    for run in reader._runs:
        if run.kind is None:
            raise ValueError(f"{run.path}: no {labels(points=True)} in it")
    reader.warn_problems()
    frame = to_frame(columns)
    if bucket is not None:
        return envelopes(frame, bucket)
    if not axes:
        return frame
    from ._axiscols import with_axes

    df = with_axes(frame)
    if wanted is not None:
        df = df[df["tag"].isin(wanted)].reset_index(drop=True)
        df["tag"] = df["tag"].cat.remove_unused_categories()
    return df
