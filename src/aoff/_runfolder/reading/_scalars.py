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

import functools
import os
import warnings
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..._core._warning import AoffWarning
from .._format import Points
from .._tagseries import Columns, Series, joined
from ..tensorboard import _evfolder  # noqa: F401  (the event parser, loaded with its reader)
from ._formats import formats, labels
from ._nocollect import collector_paused
from ._runfind import runs_in
from ._scalarpool import Workers, check_workers

if TYPE_CHECKING:
    import pandas as pd

    from ._where import Where

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

    ``where``: only the runs this filter keeps (see :func:`read_scalars`), chosen when
    the reader is made. ``workers=N``: the runs are read by this process and ``N - 1``
    worker processes (0: one a core), each keeping the offsets of the runs it claimed at
    the first read, so every :meth:`read` reads what was appended in parallel and
    returns what one process would; :meth:`close` (or ``with``) ends them.

    A path that does not exist raises ``FileNotFoundError`` at :meth:`read`; an existing
    folder with no data yet reads as no rows (a run that has not written yet)."""

    def __init__(
        self,
        paths: PathArg | Iterable[PathArg],
        tags: Iterable[str] | None = None,
        *,
        where: str | None = None,
        workers: int = 1,
    ):
        n = check_workers(workers)
        if isinstance(paths, str | os.PathLike):
            paths = [paths]
        wanted = None if tags is None else frozenset([tags] if isinstance(tags, str) else tags)
        test = None
        if where is not None:
            from ._where import compile_where  # its parser: only for a filter

            test = compile_where(where)
        self._skipped: list[str] = []  # folders of runs that could not be listed
        self._index_notes: list[str] = []  # a run index that could not be kept
        self._runs = [
            _Run(run, wanted)
            for p in paths
            for run in _runs_named(p, self._skipped, test, self._index_notes)
        ]
        self._said: dict[str, tuple[int, int]] = {}
        self._said_notes: set[str] = set()
        #: with workers: the worker processes, each range of runs as of the last read
        #: (its first run's index, what it said), and the warnings not said yet
        self._pool: Workers | None = None
        self._blocks: list[tuple[int, Block]] = []
        self._pending: list[str] = []
        if n > 1 and len(self._runs) > 1:
            self._pool = Workers(_Share, [r.path for r in self._runs], wanted, n)

    def close(self) -> None:
        """End the worker processes (``workers > 1``); a later :meth:`read` raises."""
        if self._pool is not None:
            self._pool.close()

    def __enter__(self) -> ScalarReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _state(self) -> list[Block]:
        """What each range of runs says: the workers' last answers, or the runs here."""
        if self._pool is not None:
            return [block for _, block in self._blocks]
        return [_block(self._runs, [], [], [], joined([]), [])]

    @property
    def problems(self) -> list[str]:
        """One line for each file with skipped records or a torn end, as of the last read."""
        lines = [f"{line}: skipped" for line in self._skipped]
        for block in self._state():
            lines.extend(block.problems)
        return lines

    @property
    def bytes_read(self) -> int:
        """Bytes of event files read so far (each byte once, however often :meth:`read`
        is called)."""
        return sum(block.bytes_read for block in self._state())

    @property
    def bulk_records(self) -> int:
        """Event records decoded in bulk so far (the others one by one)."""
        return sum(block.bulk_records for block in self._state())

    @property
    def retracted(self) -> list[tuple[str, int, frozenset[str] | None]]:
        """``(run, step, tags or None)`` for each TensorBoard purge (a resumed run's
        ``SessionLog.START``) that hides points an earlier :meth:`read` handed out: the
        points at ``step`` and after, of those tags (all when None)."""
        if self._pool is None:
            return [
                (run.name, step, tags)
                for run in self._runs
                if run.points is not None
                for step, tags in run.points.retracted
            ]
        return [
            (self._runs[start + i].name, step, tags)
            for start, block in self._blocks
            for i, step, tags in block.retracted
        ]

    def read_columns(self) -> list[tuple[str, str, Columns]]:
        """``(run, tag, (steps, wall_times, values))`` of what is new, runs in the order
        given, tags in the order first seen, points in the order read."""
        if self._pool is None:
            with collector_paused():
                return [(run, tag, joined(parts)) for run, tag, parts in self._read_parts()]
        out = []
        for start, block in self._read_blocks():
            at = 0
            for i, tag, n in zip(block.seg_runs, block.seg_tags, block.sizes, strict=True):
                cols = (
                    block.steps[at : at + n],
                    block.walls[at : at + n],
                    block.values[at : at + n],
                )
                out.append((self._runs[start + i].name, tag, cols))
                at += n
        return out

    def _read_parts(self) -> list[tuple[str, str, list[Columns]]]:
        """What is new of the runs read here (no workers), as ``(run, tag, parts)``."""
        return [(run.name, tag, parts) for run in self._runs for tag, parts in _run_parts(run)]

    def _read_blocks(self) -> list[tuple[int, Block]]:
        """What is new, from the workers: a block per range of runs, in the runs' order."""
        assert self._pool is not None
        self._blocks = self._pool.ask("read")
        for start, block in self._blocks:
            for i, kind in enumerate(block.kinds):
                self._runs[start + i].kind = kind
            self._pending.extend(block.said)
        return self._blocks

    def read(self) -> pd.DataFrame:
        """The new points as a long DataFrame: ``run``, ``tag`` (both categorical),
        ``step`` (int64), ``wall_time`` and ``value`` (float64)."""
        if self._pool is None:
            with collector_paused():
                return to_frame(self._read_parts())
        return _blocks_frame([r.name for r in self._runs], self._read_blocks())

    def warn_problems(self) -> None:
        """One :class:`aoff.AoffWarning` per file whose problems changed since the last."""
        lines = [f"{s}: skipped" for s in self._skipped] + self._index_notes
        if self._pool is not None:
            lines += self._pending
            self._pending = []
        else:
            lines += [n for run in self._runs for n in run.notes()]
            lines += [m for run in self._runs for m in self._new_problems(run)]
        for line in lines:
            if line not in self._said_notes:
                self._said_notes.add(line)
                warnings.warn(line, AoffWarning, stacklevel=3)

    def _new_problems(self, run: _Run) -> list[str]:
        """A line for each file of ``run`` whose problems changed since the last look."""
        out = []
        for path, corrupt, torn in run.problems():
            if (corrupt, torn) == self._said.get(path, (0, 0)):
                continue
            self._said[path] = (corrupt, torn)
            self._said_notes.discard(path)
            parts = []
            if corrupt:
                parts.append(f"{corrupt} corrupt record(s) skipped")
            if torn:
                parts.append(f"the last record is torn ({torn} bytes); read up to it")
            if parts:
                out.append(f"{path}: {'; '.join(parts)}")
        return out


class Block(NamedTuple):
    """A range of runs as one participant read it: what is new, one set of columns for
    all its runs (a segment per run and tag, in order), and what the reader's properties
    say of them. One object per range, not per run: a worker's answer for thousands of
    small runs is a few arrays to send and join, not thousands of objects."""

    seg_runs: list[int]  # each segment's run: its index in the range
    seg_tags: list[str]
    sizes: list[int]  # each segment's points
    steps: np.ndarray[Any, np.dtype[np.int64]]
    walls: np.ndarray[Any, np.dtype[np.float64]]
    values: np.ndarray[Any, np.dtype[np.float64]]
    kinds: list[str | None]  # each run's format (None: none found yet)
    said: list[str]  # the warnings this read gives, not said before
    problems: list[str]
    bytes_read: int
    bulk_records: int
    retracted: list[tuple[int, int, frozenset[str] | None]]  # (run in the range, step, tags)


def _run_parts(run: _Run) -> list[tuple[str, list[Columns]]]:
    """What is new of ``run``, by tag."""
    out = [(tag, s.take_parts()) for series in run.read() for tag, s in series.items() if len(s)]
    if run.points is not None:
        run.points.handed_out()
    return out


def _problem_lines(run: _Run) -> list[str]:
    problems = list(run.notes())
    for path, corrupt, torn in run.problems():
        if corrupt:
            problems.append(f"{path}: {corrupt} corrupt record(s) skipped")
        if torn:
            problems.append(f"{path}: the last record is torn ({torn} bytes); read up to it")
    return problems


class _Share:
    """A range of a :class:`ScalarReader`'s runs, read by one participant (``workers >
    1``): each read answers one :class:`Block`."""

    def __init__(self, names: list[str], tags: Collection[str] | None) -> None:
        self.reader = ScalarReader([])
        self.reader._runs = [_Run(name, tags) for name in names]

    def read(self) -> Block:
        reader = self.reader
        seg_runs: list[int] = []
        seg_tags: list[str] = []
        sizes: list[int] = []
        parts: list[Columns] = []
        said: list[str] = []
        for i, run in enumerate(reader._runs):
            for tag, got in _run_parts(run):
                seg_runs.append(i)
                seg_tags.append(tag)
                sizes.append(sum(len(p[0]) for p in got))
                parts.extend(got)
            new = [n for n in run.notes() if n not in reader._said_notes]
            reader._said_notes.update(new)
            said.extend(new + reader._new_problems(run))
        return _block(reader._runs, seg_runs, seg_tags, sizes, joined(parts), said)


def _block(
    runs: list[_Run],
    seg_runs: list[int],
    seg_tags: list[str],
    sizes: list[int],
    columns: Columns,
    said: list[str],
) -> Block:
    """The block of ``runs``: the segments and columns given, and what the runs say now."""
    pts = [run.points for run in runs]
    return Block(
        seg_runs,
        seg_tags,
        sizes,
        *columns,
        [run.kind for run in runs],
        said,
        [line for run in runs for line in _problem_lines(run)],
        sum(p.bytes_read for p in pts if p is not None),
        sum(p.bulk_records for p in pts if p is not None),
        [(i, step, tags) for i, p in enumerate(pts) if p is not None for step, tags in p.retracted],
    )


def _runs_named(
    given: PathArg, skipped: list[str], where: Where | None = None, notes: list[str] | None = None
) -> list[str]:
    """The runs ``given`` names: itself, or the runs of a folder of runs. A folder with
    no run in it yet stays itself (a run that has not written yet). With ``where``, only
    the runs it keeps (a folder of runs through its run index)."""
    path = os.fspath(given)
    if where is not None:
        from ._runindex import select_runs

        return select_runs(path, where, skipped, notes=notes)
    return runs_in(path, skipped) or [path]


def to_frame(columns: list[tuple[str, str, list[Columns]]]) -> pd.DataFrame:
    """The long DataFrame of ``(run, tag, parts)``, in that order (each part copied once,
    into its place: a column's parts joined by one call, not three slices a part; the
    frame of CleanRL's PPO pattern at 300,000 steps, 66 parts, 0.29 -> 0.24 ms)."""
    sizes = [sum(len(p[0]) for p in parts) for _, _, parts in columns]
    total = sum(sizes)
    steps = np.empty(total, np.int64)
    floats = np.empty((2, total), np.float64)
    every = [part for _, _, parts in columns for part in parts]
    if every:
        np.concatenate([part[0] for part in every], out=steps)
        np.concatenate([part[1] for part in every], out=floats[0])
        np.concatenate([part[2] for part in every], out=floats[1])
    return _frame([r for r, _, _ in columns], [t for _, t, _ in columns], sizes, steps, floats)


def _blocks_frame(names: list[str], blocks: list[tuple[int, Block]]) -> pd.DataFrame:
    """The long DataFrame of the workers' blocks (``names``: every run's, by index), the
    same as :func:`to_frame` of their segments: each block's columns copied once, into
    their place."""
    runs = [names[start + i] for start, block in blocks for i in block.seg_runs]
    tags = [tag for _, block in blocks for tag in block.seg_tags]
    sizes = [n for _, block in blocks for n in block.sizes]
    total = sum(sizes)
    steps = np.empty(total, np.int64)
    floats = np.empty((2, total), np.float64)
    if blocks:
        np.concatenate([b.steps for _, b in blocks], out=steps)
        np.concatenate([b.walls for _, b in blocks], out=floats[0])
        np.concatenate([b.values for _, b in blocks], out=floats[1])
    return _frame(runs, tags, sizes, steps, floats)


@functools.lru_cache(maxsize=64)
def _categories(names: tuple[str, ...]) -> Any:
    """The categorical dtype of ``names`` (in that order): made once for a process (its
    categories are checked as it is made, ~0.12 ms a column, a share of a small file's
    read; a run read again, or followed, has the same ones), the 64 latest kept. A dtype
    cannot change, so the frames may share it."""
    import pandas as pd

    return pd.CategoricalDtype(list(names))


def _frame(
    seg_runs: list[str],
    seg_tags: list[str],
    sizes: list[int],
    steps: np.ndarray[Any, np.dtype[np.int64]],
    floats: np.ndarray[Any, np.dtype[np.float64]],
) -> pd.DataFrame:
    """The long DataFrame of segments (a run and tag each, ``sizes`` points) whose points
    are ``steps`` and the two rows of ``floats`` (wall times, values): categories in the
    order first seen."""
    import pandas as pd

    runs: dict[str, int] = {}
    tags: dict[str, int] = {}
    run_ids = [runs.setdefault(r, len(runs)) for r in seg_runs]
    tag_ids = [tags.setdefault(t, len(tags)) for t in seg_tags]
    # the columns straight into the frame, each its own block (no consolidation: the
    # arrays are kept, not copied, and no insert rebuilds the frame's blocks)
    run_codes = np.repeat(np.asarray(run_ids, np.int32), sizes)
    tag_codes = np.repeat(np.asarray(tag_ids, np.int32), sizes)
    columns = {
        "run": pd.Categorical.from_codes(run_codes, dtype=_categories(tuple(runs))),
        "tag": pd.Categorical.from_codes(tag_codes, dtype=_categories(tuple(tags))),
        "step": steps,
        "wall_time": floats[0],
        "value": floats[1],
    }
    return pd.DataFrame(columns, copy=False)


def read_scalars(
    paths: PathArg | Iterable[PathArg],
    tags: Iterable[str] | None = None,
    *,
    axes: bool = False,
    bucket: int | None = None,
    where: str | None = None,
    workers: int = 1,
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

    ``where``: only the runs this filter keeps (the ``--where`` language of ``aoff ls``:
    ``'config.env == "Hopper-v4" and config.seed < 5'``), a folder of runs through its
    run index; a ``ValueError`` naming the column when it is not a filter.

    ``workers=N``: the runs are read by ``N`` processes (0: one per core), the same
    table as one; a script calling it keeps its work under ``if __name__ ==
    "__main__":``, as with any ``multiprocessing`` program.

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
    check_workers(workers)
    wanted = None if tags is None else list(tags)
    # the collector stays paused until the reader is dropped: its runs' state (~80
    # objects a run, no cycle among them) is then freed by reference counting alone,
    # never walked by a collection first (a walk of every object the read kept, paid
    # once the read has ended: with workers, in the call's serial tail)
    with collector_paused():
        # the axes are tags of their own: read every tag, keep those asked for once joined
        tagged = None if axes else wanted
        with ScalarReader(paths, tagged, where=where, workers=workers) as reader:
            frame = reader.read()
        for run in reader._runs:
            if run.kind is None:
                raise ValueError(f"{run.path}: no {labels(points=True)} in it")
        reader.warn_problems()
        del reader
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
