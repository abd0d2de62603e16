"""``metrics.jsonl``: its name, what a line is (written and read back as scalar series),
its last step and its cut after a step (resume).

Why a module of its own: the JSONL backend appends this file, resume cuts it, ``aoff
show`` and :func:`aoff.read_scalars` read it; its line is spelled here once (its name in
``_names``, which the format table reads without loading msgspec). The backend
(:mod:`aoff._backends._jsonl`) keeps the file open, the threads and the errors; this
module turns records into bytes and bytes back into rows.

Each record (:data:`~aoff.Record`) becomes one line of compact JSON::

    {"step":4096,"iteration":1,"wall_time":1718000000.25,"train/loss":0.5,...}

encoded by msgspec (3x the standard library's speed on the agent's hot path; a run's
own records through one msgspec ``Struct`` per tag sequence, whose keys are encoded once,
the same bytes at ~60 % of a dict's cost): no spaces, UTF-8 as is, each float the
shortest text that reads back to the same float (``0.00001`` where ``json.dumps`` wrote
``1e-05``). Files written before this encoder have ``", "``/``": "`` separators and
ASCII escapes; every JSON reader reads both the same, and a resumed run appends compact
lines to them.

``step``, ``iteration`` and ``wall_time`` come first, then every tag in the record's
order (a producer's record, ``log.remote(name)``, ends with ``"producer": name``; its
``step`` and ``iteration`` are that producer's own); a tag that repeats within a
record keeps its last value (as W&B does). A ``SummaryWriter`` call's record holds
``"run": folder`` when the call wrote into a sub-run (``add_scalars``, ``add_hparams``);
a text record (``add_text``'s, or an alert's under ``aoff/alerts``) holds its text as a
string value. These three keys always hold the record's
own values, even if a tag has the same name. A media file's row (``_mediafiles``) has
``"media"`` and the file's path instead of numbers.

Non-finite values: JSON has no NaN or infinity, and ``json.dumps`` would by default
emit the invalid tokens ``NaN``/``Infinity``. So a NaN is written as the string
``"nan"``, +inf as ``"inf"`` and -inf as ``"-inf"``; every line is strict JSON
(``json.loads(line, parse_constant=...)`` never sees a bare constant). Read them back
with ``float(value)``, which accepts those three strings. Rows are read back by msgspec
a batch at a time, one by one only where a batch holds a line that does not decode.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from operator import attrgetter

import msgspec

from ..._core._columns import MIN_RUN, ScalarColumns, record_columns, row_spans
from ..._core._records import PerTags, Record, StepRecord, TextRecord, WriterRecord
from .._nonfinite import nonfinite_text
from .._pieces import Pieces, whole
from ._lines import LineCursor, RowSink, cut_rows, last_row_step
from ._names import JSONL_NAME

__all__ = [
    "JSONL_NAME",
    "JsonlScalars",
    "cut_after",
    "encode_lines",
    "encode_rows",
    "last_step",
    "row_step",
]

_STEP_PREFIX = re.compile(rb'\{"step": ?(-?\d+)[,}]')  # compact, or older runs' spaces
_decode_list = msgspec.json.Decoder(list[dict[str, object]]).decode
_decode_one = msgspec.json.Decoder(dict[str, object]).decode


#: msgspec writes a non-finite float as ``null``; scalars are never None, so a ``null``
#: in a line means one (or a text holding the word): that row is encoded again
_dumps = msgspec.json.Encoder().encode
_NULL = b"null"


def _finite_or_str(v: object) -> object:
    if isinstance(v, float) and not math.isfinite(v):
        return nonfinite_text(v)
    return v


#: a record's own keys, first in every line
_FIXED = ("step", "iteration", "wall_time")


def _row_type(tags: tuple[str, ...]) -> Callable[..., msgspec.Struct] | None:
    """A msgspec ``Struct`` whose fields encode as ``step``, ``iteration``,
    ``wall_time`` and ``tags``, in order (``None``: a tag repeats, is named like one of
    the first three, or holds a character msgspec's names refuse; only the general path
    writes those). A struct's keys are
    encoded once, not for every line: ~40 % less CPU than a dict a line."""
    names = (*_FIXED, *tags)
    row: Callable[..., msgspec.Struct] | None = None
    if len(set(names)) == len(names):
        fields = [f"f{i}" for i in range(len(names))]
        # msgspec refuses a name with a quote, a backslash or a control character
        with contextlib.suppress(ValueError):
            row = msgspec.defstruct(
                "Row", [(f, object) for f in fields], rename=dict(zip(fields, names, strict=True))
            )
    return row


#: the row type of each tag sequence (a run has a few)
_row_types: PerTags[Callable[..., msgspec.Struct] | None] = PerTags(_row_type)


#: a run's own records encoded by one msgspec call at most (``encode_lines``): the
#: call's per-line overhead goes, ~0.9 us a record of the standard workload
#: (bench_pump_cost.py: JSONL 4.5-4.7 -> 3.6-3.7 us an iteration)
_ROWS_AT_ONCE = 256
#: rows a msgspec call takes while the records come in pieces (``pieces``: the GIL is
#: shared); as many as a piece holds (``_pump/_turns.RECORDS_A_PIECE``)
_ROWS_A_PIECE = 4
_encode_rows = msgspec.json.Encoder().encode_lines


def _fast_row(rec: Record) -> msgspec.Struct | None:
    """A run's own step record as its tags' row (see :func:`_row_type`), or ``None``
    where only the general path writes it right (a tag that repeats or is named like a
    fixed key, a producer's record, any other record)."""
    if not isinstance(rec, StepRecord) or rec.producer is not None:
        return None
    cols = record_columns(rec)
    if cols is None:
        return None
    tags, values = cols
    row = _row_types.get(tags)
    return None if row is None else row(rec.step, rec.iteration, rec.wall_time, *values)


def _general_line(rec: Record) -> bytes:
    row: dict[str, object] = {"step": rec.step, "iteration": rec.iteration, "wall_time": 0}
    if not isinstance(rec, TextRecord):
        row.update(rec.scalars)
    # re-set after the tags: a tag named like a fixed key never hides the record's own
    row["step"] = rec.step
    row["iteration"] = rec.iteration
    row["wall_time"] = rec.wall_time
    if rec.producer is not None:  # log.remote(name): its own step and iteration
        row["producer"] = rec.producer
    match rec:  # SummaryWriter: add_text's texts (an alert's too), a call's run folder
        case TextRecord(texts=texts, run=run):
            row.update(texts)
        case WriterRecord(run=run):
            pass
        case _:
            run = ""
    if run:
        row["run"] = run
    line = _dumps(row)
    if _NULL in line:  # a non-finite float (see _NULL): as a string
        line = _dumps({k: _finite_or_str(v) for k, v in row.items()})
    return line + b"\n"


def _rows_lines(rows: list[msgspec.Struct], recs: Sequence[Record], finite: bool = False) -> bytes:
    """The lines of ``rows`` (made from ``recs``) at once; a row with a non-finite value
    (msgspec's ``null``, see :data:`_NULL`) goes through the general path instead.
    ``finite``: every value is known finite (no ``null`` to look for)."""
    blob = _encode_rows(rows)
    if finite or _NULL not in blob:
        return blob
    lines = [_dumps(row) + b"\n" for row in rows]
    return b"".join(
        _general_line(rec) if _NULL in line else line for line, rec in zip(lines, recs, strict=True)
    )


def _table_rows(
    row: Callable[..., msgspec.Struct], table: ScalarColumns, s: int, e: int, its: Iterable[int]
) -> list[msgspec.Struct]:
    """The rows ``s .. e`` of a run fold's ``table``, ``its`` their iterations: each
    column made Python floats at once (one ``tolist`` a column), no record read."""
    steps, walls = table.steps[s:e].tolist(), table.wall_times[s:e].tolist()
    values = table.values[s:e].tolist()
    return [
        row(step, it, wall, *v) for step, it, wall, v in zip(steps, its, walls, values, strict=True)
    ]


_iteration_of = attrgetter("iteration")


def _in_runs(records: Sequence[Record]) -> bytes:
    """The batch with each run of a run fold's rows (``_core/_columns.row_spans``, at
    least ``MIN_RUN``) encoded from its table's columns, the records between them one by one."""
    import numpy as np  # the rows' tables are NumPy's: loaded already where they exist

    out: list[bytes] = []
    for i, j, table, s in row_spans(records):
        row = None if table is None else _row_types.get(table.tags)
        if table is None or row is None:
            part = records[i:j]
            out.append(_per_record(part, part))
            continue
        e = s + j - i
        # a table's floats checked at once: its lines need no search for a null
        finite = bool(np.isfinite(table.values[s:e]).all())
        finite = finite and bool(np.isfinite(table.wall_times[s:e]).all())
        for a in range(i, j, _ROWS_AT_ONCE):  # msgspec's buffer: as the per-record path
            b = min(a + _ROWS_AT_ONCE, j)
            recs = records[a:b]
            rows = _table_rows(row, table, s + a - i, s + b - i, map(_iteration_of, recs))
            out.append(_rows_lines(rows, recs, finite))
    return b"".join(out)


def encode_lines(records: Sequence[Record], pieces: Pieces = whole) -> bytes:
    """Encode records as UTF-8 JSON lines (see the module docstring for the format),
    paced by ``pieces``. Unpaced, a run fold's rows are encoded from its columns
    (:func:`_in_runs`: the same bytes)."""
    paced = pieces(records)
    if paced is records and len(records) >= MIN_RUN:
        return _in_runs(records)
    return _per_record(records, paced)


def _per_record(records: Sequence[Record], paced: Iterable[Record]) -> bytes:
    """Each record's line (``paced``: ``records`` as the pacing hands them out)."""
    out: list[bytes] = []
    rows: list[msgspec.Struct] = []
    recs: list[Record] = []
    # handed out in pieces (the GIL is shared): one msgspec call a piece
    at_once = _ROWS_AT_ONCE if paced is records else _ROWS_A_PIECE
    for rec in paced:
        row = _fast_row(rec)
        if row is not None:
            rows.append(row)
            recs.append(rec)
            if len(rows) < at_once:
                continue
        if rows:
            out.append(_rows_lines(rows, recs))
            rows, recs = [], []
        if row is None:
            out.append(_general_line(rec))
    if rows:
        out.append(_rows_lines(rows, recs))
    return b"".join(out)


def encode_rows(rows: Sequence[dict[str, object]]) -> bytes:
    """Rows that are not step records (a media file's, ``_mediafiles``) as lines."""
    return b"".join(_dumps(row) + b"\n" for row in rows)


class JsonlScalars:
    """The rows appended to one ``metrics.jsonl`` since the last :meth:`read`."""

    def __init__(self, path: str, tags: Collection[str] | None) -> None:
        self.cursor = LineCursor(path)
        self.sink = RowSink(tags)

    def read(self) -> None:
        lines = [line for line in self.cursor.new_lines() if line.strip()]
        if not lines:
            return
        row = self.sink.row
        try:
            rows = _decode_list(b"[" + b",".join(lines) + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError):
            for line in lines:
                try:
                    row(_decode_one(line))
                except (msgspec.DecodeError, msgspec.ValidationError):
                    self.cursor.corrupt += 1
            return
        for r in rows:
            row(r)


def row_step(line: bytes) -> int | None:
    """The ``step`` of one row (None: not a row aoff can read)."""
    m = _STEP_PREFIX.match(line)
    if m:
        return int(m[1])
    try:
        row = json.loads(line)
    except ValueError:
        return None
    step = row.get("step") if isinstance(row, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def last_step(path: str) -> int | None:
    """The last row's step, read from the file's end."""
    return last_row_step(path, row_step)


def cut_after(path: str, step: int) -> None:
    """Drop every row after ``step`` (resume)."""
    cut_rows(path, row_step, step, header=False)
