"""A batch of step records as columns: what the encoders write in bulk.

Why a module of its own: a run's records repeat one tag sequence step after step (the
fold hands out one ``tags`` tuple per sequence, :class:`~aoff._core._records.Scalars`),
so a batch of them is a table: one row a record, one column a tag, beside the steps and
wall times. Encoders that take the table (the TensorBoard framer, ``_runfolder/
_tbcolumns``) do their work once per column with NumPy instead of once per value in
Python. Whatever is not such a row (a histogram, a text, a new-style tensor, HParams, a
record whose scalars are not the fold's columns) stays a record, in its place, for the
per-event encoder: :func:`column_runs` splits a batch, keeping its order.

NumPy is imported where a batch is split (the agent's encoders), never by ``import aoff``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any

from ._records import Record, Scalars, StepRecord, columns, scalars_of

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "RowRecord",
    "ScalarColumns",
    "Spans",
    "column_runs",
    "plain",
    "record_columns",
    "row_records",
    "row_run",
    "row_spans",
]

#: records in a row with one tag sequence below which the per-event encoder is cheaper
#: (the table's fixed cost is a few NumPy calls)
MIN_RUN = 8


@dataclass(frozen=True, slots=True)
class ScalarColumns:
    """Records ``first .. first + len(steps)`` of a batch, all with the tags ``tags``:
    ``steps`` (int64), ``wall_times`` (float64) and ``values`` (float64, one row a
    record, one column a tag), as the records held them."""

    tags: tuple[str, ...]
    steps: np.ndarray[Any, np.dtype[np.int64]]
    wall_times: np.ndarray[Any, np.dtype[np.float64]]
    values: np.ndarray[Any, np.dtype[np.float64]]

    def __len__(self) -> int:
        return len(self.steps)

    def row(self, i: int) -> tuple[float, ...]:
        """Row ``i``'s values as Python floats, for a reader that takes its record alone
        (a tuple: the collector untracks it). Not kept: the readers of a batch read the
        columns, and a batch's few rows cut off from their table's (fewer than
        ``MIN_RUN``) must not pay for the whole table's."""
        return tuple(self.values[i].tolist())


class RowRecord(StepRecord):
    """A step record that is row ``index`` of a run fold's table (``_fold_columns``):
    every reader sees a :class:`StepRecord`, but its ``scalars`` pairs (one tuple a tag,
    ~1.5-4 µs a record of 32) are made on first read, and its values as Python floats
    (``_row``, ~1 µs a row of 40) on each read of them (:meth:`ScalarColumns.row`;
    ``scalars`` keeps them): the encoders that read columns (:func:`record_columns`'s
    callers with a table path, :func:`column_runs`, :func:`row_spans`) never make them.
    Built by :func:`row_records` only; ``RowRecord(...)`` (``dataclasses.replace``) is a
    plain :class:`StepRecord`."""

    __slots__ = ("_index", "_pairs", "_table")
    _index: int
    _pairs: Scalars | None
    _table: ScalarColumns

    # the fields a row never sets, as class attributes: found before the parent's empty
    # slots, so a row sets only what differs from row to row
    histograms = ()
    producer = None

    def __new__(cls, *args: Any, **kwargs: Any) -> StepRecord:  # type: ignore[misc]
        return StepRecord(*args, **kwargs)

    @property
    def _row(self) -> tuple[float, ...]:
        return self._table.row(self._index)

    @property
    def scalars(self) -> tuple[tuple[str, float], ...]:
        pairs: Scalars | None = self._pairs
        if pairs is None:
            pairs = scalars_of(self._table.tags, self._row)
            _set_pairs(self, pairs)
        return pairs

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StepRecord):
            return NotImplemented
        return _fields(self) == _fields(other)

    def __hash__(self) -> int:
        return hash(_fields(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (StepRecord, _fields(self))


_set_pairs = RowRecord.__dict__["_pairs"].__set__
_set_table = RowRecord.__dict__["_table"].__set__
_set_index = RowRecord.__dict__["_index"].__set__
_FIELDS = tuple(StepRecord.__dataclass_fields__)
if set(_FIELDS) - {"step", "iteration", "wall_time", "scalars"} - set(vars(RowRecord)):
    raise AssertionError("StepRecord has a field RowRecord does not default")  # pragma: no cover
_set_step = StepRecord.__dict__["step"].__set__
_set_iteration = StepRecord.__dict__["iteration"].__set__
_set_wall = StepRecord.__dict__["wall_time"].__set__


def _fields(rec: StepRecord) -> tuple[object, ...]:
    return tuple(getattr(rec, name) for name in _FIELDS)


def row_records(table: ScalarColumns, iterations: Sequence[int]) -> list[StepRecord]:
    """One :class:`RowRecord` a row of ``table``, ``iterations`` their iterations: the
    objects made, then each field set over all of them in one C-level pass (``map``
    drained by a zero-length deque), no Python step a row."""
    n = len(iterations)
    if len(table) != n:
        raise ValueError(f"{len(table)} rows, {n} iterations")
    out: list[StepRecord] = list(map(object.__new__, repeat(RowRecord, n)))
    drain = _drain
    drain(map(_set_step, out, table.steps.tolist()))
    drain(map(_set_iteration, out, iterations))
    drain(map(_set_wall, out, table.wall_times.tolist()))
    drain(map(_set_pairs, out, repeat(None, n)))
    drain(map(_set_table, out, repeat(table, n)))
    drain(map(_set_index, out, range(n)))
    return out


_drain: Callable[[Iterable[object]], None] = deque[object](maxlen=0).extend


def record_columns(rec: Record) -> tuple[tuple[str, ...], Sequence[float]] | None:
    """``(tags, values)`` of ``rec``'s scalars, ``None`` when it has none: a row's
    without making its pairs, the fold's as they were zipped, others split."""
    if type(rec) is RowRecord:
        pairs = rec._pairs
        if pairs is None:
            return rec._table.tags, rec._row
        return columns(pairs)
    scalars = rec.scalars
    return columns(scalars) if scalars else None


def _tags_of(rec: Record) -> tuple[str, ...]:
    """A plain record's tags (:func:`plain`)."""
    if type(rec) is RowRecord:
        return rec._table.tags
    return rec.scalars.tags  # type: ignore[attr-defined, no-any-return]


def _values_of(rec: Record) -> Sequence[float]:
    """A plain record's values (:func:`plain`)."""
    if type(rec) is RowRecord:
        return rec._row
    return rec.scalars.values  # type: ignore[attr-defined, no-any-return]


def plain(rec: object) -> bool:
    """Whether ``rec`` is a row of a table: a step's scalars only, as the fold's columns."""
    if type(rec) is RowRecord:
        return True
    return type(rec) is StepRecord and type(rec.scalars) is Scalars and not rec.histograms


def _table(records: Sequence[Record]) -> ScalarColumns | None:
    """The table of ``records`` (plain, one tag sequence), or ``None`` where a step
    does not fit an int64 or a value is not a float (the per-event encoder says why)."""
    import numpy as np

    try:
        steps = np.fromiter([r.step for r in records], np.int64, len(records))
        width = len(_tags_of(records[0]))
        flat = chain.from_iterable([_values_of(r) for r in records])
        values = np.fromiter(flat, np.float64, width * len(records)).reshape(-1, width)
        walls = np.array([r.wall_time for r in records], np.float64)
    except (OverflowError, TypeError, ValueError):
        return None
    return ScalarColumns(_tags_of(records[0]), steps, walls, values)


def row_run(records: Sequence[Record], i: int) -> tuple[ScalarColumns, int, int]:
    """The rows of one table in order from ``records[i]`` (a :class:`RowRecord`): the
    table and the rows' slice ``[s, e)`` of it (``records[i : i + e - s]`` are they)."""
    first = records[i]
    assert type(first) is RowRecord
    rows, a = first._table, first._index - i
    n = len(records)
    j = i + 1
    while j < n:
        nxt = records[j]
        if type(nxt) is not RowRecord or nxt._table is not rows or nxt._index != a + j:
            break
        j += 1
    return rows, a + i, a + j


#: a batch cut by :func:`row_spans`, walked once for several readers of it
Spans = Sequence[tuple[int, int, "ScalarColumns | None", int]]


def row_spans(
    records: Sequence[Record], min_run: int = MIN_RUN
) -> Iterator[tuple[int, int, ScalarColumns | None, int]]:
    """``records`` cut in order into spans ``(i, j, table, a)``: ``records[i:j]`` are rows
    ``a ..`` of one run fold's ``table`` (at least ``min_run`` of them), or, with
    ``table`` None, records to take one by one. Every reader of a batch that has a fast
    path for a table's rows (JSONL, CSV, the run summary, the rules) walks it so."""
    n = len(records)
    i = start = 0  # records[start:i]: not rows of a long enough run
    while i < n:
        if type(records[i]) is not RowRecord:
            i += 1
            continue
        table, a, b = row_run(records, i)
        j = i + b - a
        if j - i >= min_run:
            if start < i:
                yield start, i, None, 0
            yield i, j, table, a
            start = j
        i = j
    if start < n:
        yield start, n, None, 0


def column_runs(records: Sequence[Record], min_run: int = MIN_RUN) -> list[ScalarColumns | Record]:
    """``records`` in order: each run of at least ``min_run`` plain records with one tag
    sequence as a :class:`ScalarColumns`, every other record as itself."""
    out: list[ScalarColumns | Record] = []
    n = len(records)
    i = 0
    while i < n:
        rec = records[i]
        if type(rec) is RowRecord:  # rows of one table, in order: its slice as it is
            rows, s, e = row_run(records, i)
            j = i + e - s
            if j - i >= min_run:
                out.append(
                    ScalarColumns(
                        rows.tags, rows.steps[s:e], rows.wall_times[s:e], rows.values[s:e]
                    )
                )
            else:
                out.extend(records[i:j])
            i = j
            continue
        if not plain(rec):
            out.append(rec)
            i += 1
            continue
        tags = _tags_of(rec)
        j = i + 1
        while j < n:
            nxt = records[j]
            if not plain(nxt) or type(nxt) is RowRecord:  # rows: their table's slice
                break
            other = _tags_of(nxt)
            if other is not tags and other != tags:
                break
            j += 1
        table = _table(records[i:j]) if j - i >= min_run else None
        if table is None:
            out.extend(records[i:j])
        else:
            out.append(table)
        i = j
    return out
