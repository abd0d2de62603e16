"""The run summary file, ``<log_dir>/aoff-summary.json``: what ``aoff ls``/``show`` print.

One file per session: several sessions or writers in one folder (two runs into one
``log_dir``, six ``SummaryWriter`` objects on one folder) each take the first free name,
``aoff-summary.json``, ``aoff-summary-2.json``, … (created exclusively at the first write,
so two starting together never share one). ``show``/``ls`` trust a summary only when it is
the folder's only one; with several they read the data files, as TensorBoard does.

Why: reading a big run's event files back takes seconds (a 1M-step run is ~1.3 GB), and
``ls``/``show`` only print a handful of numbers per tag: its first, last, min and max
values and a sparkline. The pump keeps those as it goes (:class:`RunSummary`), rewrites
the file whole every ``SUMMARY_INTERVAL`` seconds while the run lasts and once more at
the end, and the commands read a few kilobytes instead of the event files.

The per-record cost stays small: a record's values are appended as one tuple to the block
of records with the same tags (a run fold's rows as slices of their table, no tuple a
record), and every ``FOLD_ROWS`` records the blocks are folded into each tag's
statistics with numpy. Each curve is kept as between ``CURVE_POINTS`` and twice
as many buckets (sum and count of the finite values of ``stride`` consecutive points;
two neighbours merge when the curve fills up), enough for any sparkline ``show`` draws.

Format (JSON, one object): ``format``/``version``; ``state`` (``running``, ``finished``,
``stopped`` or ``interrupted``); ``stopped`` (only when a ``stop=True`` rule ended the
run: ``iteration``, ``rule``, ``tag``, ``message``); ``late``: ``records`` (the run's own
records whose step was below the one before, each written at its own step) and
``producers`` (the same, per producer); ``records``, ``step``,
``iteration``, ``max_iterations``, ``first_time``, ``last_time`` (wall times of the
first and last record); ``files``: the size of each data file when it was written
(not trusted once one is smaller); ``tags``: per tag, in order of first appearance,
``count``, ``first``, ``last``, ``min``, ``max`` (finite values; ``null`` when none),
``stride`` and ``curve`` (bucket means to 6 significant digits; ``"nan"``
for a bucket without a finite value). Non-finite floats are the strings ``"nan"``,
``"inf"``, ``"-inf"``. Records of ``log.remote()`` producers are not in it (they have
steps of their own).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import json
import math
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..._core._columns import ScalarColumns, Spans, record_columns, row_spans
from ..._core._records import Record, StepRecord, TextRecord, WriterRecord
from .._nonfinite import from_json_float, to_json_float
from .._replace import replaced
from ._file import (
    FORMAT,
    STAGING_PREFIX,
    SUMMARY_GLOB,
    SUMMARY_NAME,
    VERSION,
    summary_name,
)

__all__ = [
    "CURVE_POINTS",
    "SUMMARY_INTERVAL",
    "SUMMARY_NAME",
    "RunSummary",
    "claim_summary_path",
    "from_json_float",
    "to_json_float",
]

#: seconds between rewrites of the file while the run lasts
SUMMARY_INTERVAL = 10.0
#: a curve keeps between this many and twice as many buckets
CURVE_POINTS = 64
#: records folded into the statistics at a time
FOLD_ROWS = 2048
#: tags at one place in their curves folded together from this many (``_Tag.feed_rows``)
_GROUPS_FROM = 2


class _Tag:
    """One tag's statistics and bucketed curve."""

    __slots__ = ("count", "fins", "first", "hi", "last", "lo", "stride", "sums")

    def __init__(self) -> None:
        self.count = 0
        self.first = math.nan
        self.last = math.nan
        self.lo = math.inf
        self.hi = -math.inf
        self.stride = 1
        #: per bucket: sum and count of its finite values; the last one may be partial
        self.sums: list[float] = []
        self.fins: list[int] = []

    def feed(self, values: np.ndarray[Any, np.dtype[np.float64]]) -> None:
        n = len(values)
        if not n:
            return
        if self.count == 0:
            self.first = float(values[0])
        self.last = float(values[-1])
        finite = np.isfinite(values)
        if finite.any():
            fv = values[finite]
            self.lo = min(self.lo, float(fv.min()))
            self.hi = max(self.hi, float(fv.max()))
        clean = np.where(finite, values, 0.0)
        done = 0
        while done < n:
            # the points left in the last bucket, then whole buckets, at this stride
            used = self.count % self.stride
            room = (self.stride - used) if used else 0
            if room:
                take = min(room, n - done)
                self.sums[-1] += float(clean[done : done + take].sum())
                self.fins[-1] += int(finite[done : done + take].sum())
                self.count += take
                done += take
                continue
            if len(self.sums) >= 2 * CURVE_POINTS:
                self._halve()
                continue
            k = self.stride
            buckets = min((n - done + k - 1) // k, 2 * CURVE_POINTS - len(self.sums))
            take = min(buckets * k, n - done)
            whole = take // k
            if whole:
                chunk = clean[done : done + whole * k].reshape(whole, k)
                self.sums.extend(chunk.sum(axis=1).tolist())
                self.fins.extend(finite[done : done + whole * k].reshape(whole, k).sum(1).tolist())
            if take > whole * k:  # a partial bucket at the end
                self.sums.append(float(clean[done + whole * k : done + take].sum()))
                self.fins.append(int(finite[done + whole * k : done + take].sum()))
            self.count += take
            done += take

    @staticmethod
    def feed_rows(accs: Sequence[_Tag], values: np.ndarray[Any, np.dtype[np.float64]]) -> None:
        """Each of ``accs`` fed its row of ``values`` (``len(accs)`` rows), as :meth:`feed`
        would one by one, with a few NumPy calls for all of them, not ~15 a tag: a run's
        tags fold together, so its 40 tags cost what one did. The caller checks that they
        share their ``count``, ``stride`` and number of buckets (the loop's state), and
        each row's sums are NumPy's pairwise sums over the same values as :meth:`feed`
        takes them (the same bits; ``tests/test_summary_rows.py``)."""
        n = values.shape[1]
        if not n:
            return
        lead = accs[0]
        if lead.count == 0:
            for acc, v in zip(accs, values[:, 0].tolist(), strict=True):
                acc.first = v
        for acc, v in zip(accs, values[:, -1].tolist(), strict=True):
            acc.last = v
        rows = len(accs)
        finite = np.isfinite(values)
        # every value finite (a run's metrics, nearly always): the values are their own
        # clean copy (C-ordered as np.where's would be: the same pairwise sums), and a
        # bucket's count of finite values is its length; 4 of the table's passes, not 9
        every = bool(finite.all()) and values.flags.c_contiguous
        if every:
            clean = values
            has = [True] * rows
            los = values.min(axis=1).tolist()
            his = values.max(axis=1).tolist()
        else:
            clean = np.where(finite, values, 0.0)
            has = finite.any(axis=1).tolist()
            los = np.where(finite, values, math.inf).min(axis=1).tolist()
            his = np.where(finite, values, -math.inf).max(axis=1).tolist()
        for t, acc in enumerate(accs):
            if not has[t]:
                continue
            lo, hi = los[t], his[t]
            if lo == 0.0 or hi == 0.0:  # which zero's sign a min of 0.0 and -0.0 keeps
                fv = values[t][finite[t]]  # depends on its array: feed's own, then
                lo, hi = float(fv.min()), float(fv.max())
            acc.lo = min(acc.lo, lo)
            acc.hi = max(acc.hi, hi)
        count, stride, buckets = lead.count, lead.stride, len(lead.sums)
        done = 0
        while done < n:  # feed's loop, its state shared
            used = count % stride
            room = (stride - used) if used else 0
            if room:
                take = min(room, n - done)
                sums = clean[:, done : done + take].sum(axis=1).tolist()
                fins = [take] * rows if every else finite[:, done : done + take].sum(1).tolist()
                for acc, s, f in zip(accs, sums, fins, strict=True):
                    acc.sums[-1] += s
                    acc.fins[-1] += f
                count += take
                done += take
                continue
            if buckets >= 2 * CURVE_POINTS:
                for acc in accs:
                    acc._halve()
                stride, buckets = lead.stride, len(lead.sums)
                continue
            k = stride
            more = min((n - done + k - 1) // k, 2 * CURVE_POINTS - buckets)
            take = min(more * k, n - done)
            whole = take // k
            if whole:
                end = done + whole * k
                sums = clean[:, done:end].reshape(rows, whole, k).sum(axis=2).tolist()
                if every:
                    fins = [[k] * whole] * rows  # extend() copies each: one list shared
                else:
                    fins = finite[:, done:end].reshape(rows, whole, k).sum(axis=2).tolist()
                for acc, s, f in zip(accs, sums, fins, strict=True):
                    acc.sums.extend(s)
                    acc.fins.extend(f)
                buckets += whole
            if take > whole * k:  # a partial bucket at the end
                part = slice(done + whole * k, done + take)
                sums = clean[:, part].sum(axis=1).tolist()
                fins = [take - whole * k] * rows if every else finite[:, part].sum(1).tolist()
                for acc, s, f in zip(accs, sums, fins, strict=True):
                    acc.sums.append(s)
                    acc.fins.append(f)
                buckets += 1
            count += take
            done += take
        for acc in accs:
            acc.count = count

    def _halve(self) -> None:
        s, f = self.sums, self.fins
        self.sums = [s[i] + s[i + 1] for i in range(0, len(s) - 1, 2)]
        self.fins = [f[i] + f[i + 1] for i in range(0, len(f) - 1, 2)]
        if len(s) % 2:  # never at a full curve (even), kept for safety
            self.sums.append(s[-1])
            self.fins.append(f[-1])
        self.stride *= 2

    def as_json(self) -> dict[str, Any]:
        # 6 significant digits: a sparkline has 8 heights, the file stays small
        curve = [
            to_json_float(float(f"{s / c:.6g}") if c else math.nan)
            for s, c in zip(self.sums, self.fins, strict=True)
        ]
        return {
            "count": self.count,
            "first": to_json_float(self.first),
            "last": to_json_float(self.last),
            "min": self.lo if self.lo <= self.hi else None,
            "max": self.hi if self.lo <= self.hi else None,
            "stride": self.stride,
            "curve": curve,
        }


class _Block:
    """The records of one tag sequence since the last fold: each one's order and row,
    and slices of a run fold's tables whole (``chunks``: the first one's order, the rows)."""

    __slots__ = ("chunks", "orders", "rows")

    def __init__(self) -> None:
        self.orders: list[int] = []
        self.rows: list[Sequence[float]] = []
        self.chunks: list[tuple[int, np.ndarray[Any, np.dtype[np.float64]]]] = []

    def table(self, width: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """The block as one (orders, rows) table in order: its chunks and its records'
        rows joined (each tag then reads one column of it, not one a chunk)."""
        parts = [
            (np.arange(first, first + len(rows), dtype=np.int64), rows)
            for first, rows in self.chunks
        ]
        if self.rows:
            rows = np.asarray(self.rows, np.float64).reshape(len(self.rows), width)
            parts.append((np.asarray(self.orders, np.int64), rows))
        if len(parts) == 1:
            return parts[0]
        orders = np.concatenate([p[0] for p in parts])
        table = np.concatenate([p[1] for p in parts])
        if not (orders[1:] < orders[:-1]).any():  # a run fold's slices alone: in order
            return orders, table
        at = np.argsort(orders, kind="stable")
        return orders[at], table[at]


class RunSummary:
    """Keeps what the summary file holds, from the records the pump folds.

    :meth:`add` runs on the pump's loop for every batch of records; :meth:`snapshot`
    (on the loop) returns the file's content as a dict, and :meth:`write` (any thread)
    writes one; a write older than one already written is skipped.
    """

    def __init__(
        self,
        path: str,
        *,
        max_iterations: int = 0,
        data_files: Callable[[str], Sequence[str]] = lambda folder: (),
    ) -> None:
        self.path = path
        self.max_iterations = max_iterations
        #: the run's data files in a folder (the format table's, which sits above this
        #: package and is passed in by the pump): their sizes go in the file
        self.data_files = data_files
        self.records = 0
        self.step: int | None = None
        self.iteration: int | None = None
        self.first_time: float | None = None
        self.last_time: float | None = None
        self.tags: dict[str, _Tag] = {}
        self._blocks: dict[tuple[str, ...], _Block] = {}
        self._pending = 0
        self._lock = threading.Lock()
        self._seq = 0
        self._written_seq = 0
        self._claimed = False
        #: images/videos written and refused (``log_image``/``log_video``), and those
        #: accepted but not written by reason (``FinishReport.media_lost``), set by the pump
        self.media_written = 0
        self.media_refused = 0
        self.media_lost: dict[str, int] = {}
        #: how a ``stop=True`` rule ended the run (``state`` ``"stopped"``), set at the end
        self.stopped: dict[str, Any] | None = None
        #: records written at their own step though it was below the one before: the
        #: run's own, and each producer's (``FinishReport.late_records``/``late_points``)
        self.late_records = 0
        self.late_points: dict[str, int] = {}

    def add(self, records: Sequence[Record], spans: Spans | None = None) -> None:
        """The run's own records of a batch; a run of a run fold's rows
        (``_core/_columns.row_spans``; ``spans``: ``records`` walked so already, by a
        caller that hands them to other readers too) is taken as its table's slice, the
        others one by one."""
        for i, j, table, a in row_spans(records) if spans is None else spans:
            if table is not None and not np.isnan(table.wall_times[a : a + j - i]).any():
                self._add_rows(table, a, records[i:j])
            else:
                self._add_each(records[i:j])

    def _add_rows(self, table: ScalarColumns, a: int, rows: Sequence[Record]) -> None:
        """Rows ``a ..`` of ``table`` (the records ``rows``) in pieces that end where
        :meth:`_add_each` would fold: the statistics see the same values at the same folds."""
        done = 0
        while done < len(rows):
            k = min(len(rows) - done, FOLD_ROWS - self._pending)
            block = self._blocks.get(table.tags)
            if block is None:
                block = self._blocks[table.tags] = _Block()
            block.chunks.append((self.records, table.values[a + done : a + done + k]))
            walls = table.wall_times[a + done : a + done + k]
            lo, hi = float(walls.min()), float(walls.max())
            first, last = self.first_time, self.last_time
            self._pending += k
            done += k
            self._note(
                rows[done - 1],  # type: ignore[arg-type]  # a row: a StepRecord
                self.records + k,
                lo if first is None or lo < first else first,
                hi if last is None or hi > last else last,
            )
            if self._pending >= FOLD_ROWS:
                self.fold()

    def _add_each(self, records: Sequence[Record]) -> None:
        blocks = self._blocks
        last_tags: tuple[str, ...] | None = None
        block = _Block()
        count = self.records
        first_time, last_time = self.first_time, self.last_time
        last: StepRecord | WriterRecord | None = None
        for rec in records:
            # the run's own numbers: its steps' and its SummaryWriter calls'
            if isinstance(rec, TextRecord) or rec.producer is not None:
                continue
            cols = record_columns(rec)
            if cols is None:
                continue
            tags, values = cols
            if tags is not last_tags:  # the fold shares one tags tuple while they repeat
                found = blocks.get(tags)
                if found is None:
                    found = blocks[tags] = _Block()
                block, last_tags = found, tags
            block.orders.append(count)
            block.rows.append(values)
            count += 1
            last = rec
            w = rec.wall_time
            if first_time is None or w < first_time:
                first_time = w
            if last_time is None or w > last_time:
                last_time = w
            self._pending += 1
            if self._pending >= FOLD_ROWS:
                self._note(rec, count, first_time, last_time)
                self.fold()
                blocks, last_tags = self._blocks, None
        if last is not None and count != self.records:
            self._note(last, count, first_time, last_time)

    def _note(
        self,
        rec: StepRecord | WriterRecord,
        count: int,
        first_time: float | None,
        last_time: float | None,
    ) -> None:
        """The run's place after ``rec``, the last record added."""
        self.records = count
        self.step = rec.step
        self.iteration = rec.iteration
        self.first_time, self.last_time = first_time, last_time

    def fold(self) -> None:
        """Fold the records added since the last fold into each tag's statistics: the
        tags of one tag sequence (a block) that no other block holds, and whose
        statistics are at the same place, together (:meth:`_Tag.feed_rows`); any other
        tag alone."""
        if not self._pending:
            return
        parts: dict[str, list[tuple[Any, Any]]] = {}
        firsts: dict[str, int] = {}
        tables: list[tuple[tuple[str, ...], Any]] = []
        for tags, block in self._blocks.items():
            orders, rows = block.table(len(tags))
            at = int(orders[0])
            columns = np.ascontiguousarray(rows.T)  # one copy: each tag's column contiguous
            tables.append((tags, columns))
            for j, tag in enumerate(tags):  # a tag twice in one record: the last one
                parts.setdefault(tag, []).append((orders, columns[j]))
                firsts[tag] = min(firsts.get(tag, at), at)
        self._blocks = {}
        self._pending = 0
        for tag in sorted(parts, key=firsts.__getitem__):  # new tags in order of appearance
            if tag not in self.tags:
                self.tags[tag] = _Tag()
        alone = set(parts)
        for tags, columns in tables:
            if len(set(tags)) != len(tags) or any(len(parts[t]) != 1 for t in tags):
                continue
            # tags at the same place in their curves fold together (a run's tags: all)
            groups: dict[tuple[int, int, int], list[int]] = {}
            for j, tag in enumerate(tags):
                acc = self.tags[tag]
                groups.setdefault((acc.count, acc.stride, len(acc.sums)), []).append(j)
            for js in groups.values():
                if len(js) < _GROUPS_FROM:
                    continue
                rows = columns if len(js) == len(tags) else columns[js]
                _Tag.feed_rows([self.tags[tags[j]] for j in js], rows)
                alone.difference_update(tags[j] for j in js)
        for tag in alone:
            got = parts[tag]
            if len(got) == 1:
                values = got[0][1]
            else:
                orders = np.concatenate([g[0] for g in got])
                values = np.concatenate([g[1] for g in got])[np.argsort(orders, kind="stable")]
            self.tags[tag].feed(np.ascontiguousarray(values, np.float64))

    def snapshot(self, state: str = "running") -> dict[str, Any]:
        """The file's content now (``state``: running, finished, stopped or interrupted)."""
        self.fold()
        self._seq += 1
        return {
            "format": FORMAT,
            "version": VERSION,
            "seq": self._seq,
            "state": state,
            "records": self.records,
            "step": self.step,
            "iteration": self.iteration,
            "max_iterations": self.max_iterations,
            "first_time": self.first_time,
            "last_time": self.last_time,
            "tags": {tag: acc.as_json() for tag, acc in self.tags.items()},
            "media": {
                "written": self.media_written,
                "refused": self.media_refused,
                "lost": dict(self.media_lost),
            },
            "files": data_file_sizes(self.data_files(os.path.dirname(self.path))),
            "late": {"records": self.late_records, "producers": dict(self.late_points)},
            **({"stopped": self.stopped} if self.stopped is not None else {}),
        }

    def write(self, content: dict[str, Any]) -> None:
        """Replace the file with ``content`` (atomically), unless a newer one was written."""
        raw = json.dumps(content, separators=(",", ":"), allow_nan=False).encode()
        with self._lock:
            seq = int(content.get("seq", 0))
            if seq <= self._written_seq:
                return
            if self._claimed:
                with replaced(self.path, prefix=STAGING_PREFIX) as f:
                    f.write(raw)
            else:
                self.path = claim_summary_path(os.path.dirname(self.path), raw)
                self._claimed = True
            self._written_seq = seq


def data_file_sizes(files: Sequence[str]) -> dict[str, int]:
    """The sizes of the run's data files now, by name (every format's that holds points:
    ``metrics.jsonl``, ``progress.csv``, the event files...): a reader trusts the summary
    only while none of them is smaller (a file cut or damaged later is read, and its
    damage reported)."""
    out: dict[str, int] = {}
    for path in files:
        with contextlib.suppress(OSError):
            out[os.path.basename(path)] = os.path.getsize(path)
    return out


def _names(log_dir: str) -> Iterator[str]:
    for n in itertools.count(1):
        yield os.path.join(log_dir, summary_name(n))


def claim_summary_path(log_dir: str, raw: bytes) -> str:
    """Write this session's first summary ``raw`` to the first of ``aoff-summary.json``,
    ``aoff-summary-2.json``, … in ``log_dir`` not taken yet, and return its path. The
    whole file is linked to its name in one step (``os.link`` fails when the name is
    taken), so a session starting beside this one takes another name and a reader never
    sees the file half written. Where links cannot be made, the name is taken with an
    exclusive create and the content replaces the empty file."""
    fd, staged = tempfile.mkstemp(dir=log_dir or ".", prefix=STAGING_PREFIX, suffix=".tmp")
    try:
        with open(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(staged, 0o644)
        for path in _names(log_dir):
            try:
                os.link(staged, path)
            except FileExistsError:
                continue
            except OSError:  # no hard links here (some network or FAT file systems)
                break
            return path
        for path in _names(log_dir):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            except FileExistsError:
                continue
            os.replace(staged, path)
            return path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
    raise AssertionError("unreachable")


def remove_stale(log_dir: str) -> None:
    """Remove the summaries of the folder (a resumed run rewrites its history; a lost
    agent's successor sees only part of the run): the readers then read the files."""
    for path in glob.glob(os.path.join(glob.escape(log_dir), SUMMARY_GLOB)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
