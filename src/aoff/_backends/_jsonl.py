"""JSON Lines backend: one strict-JSON object per step, for tools that are not TensorBoard.

Each :class:`~aoff.StepRecord` becomes one line of compact JSON::

    {"step":4096,"iteration":1,"wall_time":1718000000.25,"train/loss":0.5,...}

encoded by msgspec (3x the standard library's speed on the agent's hot path; a run's
own records through one msgspec ``Struct`` per tag sequence, whose keys are encoded once,
the same bytes at ~60 % of a dict's cost): no
spaces, UTF-8 as is, each float the shortest text that reads back to the same float
(``0.00001`` where ``json.dumps`` wrote ``1e-05``). Files written before this encoder
have ``", "``/``": "`` separators and ASCII escapes; every JSON reader reads both the
same, and a resumed run appends compact lines to them.

``step``, ``iteration`` and ``wall_time`` come first, then every tag in the record's
order (a producer's record, ``log.remote(name)``, ends with ``"producer": name``; its
``step`` and ``iteration`` are that producer's own); a tag that repeats within a
record keeps its last value (as W&B does). A ``SummaryWriter`` record (one a call)
holds ``add_text``'s text as a string value, and ``"run": folder`` when the call wrote
into a sub-run (``add_scalars``, ``add_hparams``). These three keys always hold the record's
own values, even if a tag has the same name.

Non-finite values: JSON has no NaN or infinity, and ``json.dumps`` would by default
emit the invalid tokens ``NaN``/``Infinity``. So a NaN is written as the string
``"nan"``, +inf as ``"inf"`` and -inf as ``"-inf"``; every line is strict JSON
(``json.loads(line, parse_constant=...)`` never sees a bare constant). Read them back
with ``float(value)``, which accepts those three strings.

The file is opened for appending (an existing file is never truncated; a resumed run
adds to it) and parent folders are created. Each batch is encoded and handed to the OS
in a worker thread (aiofiles' executor wrapper on asyncio, ``anyio.to_thread`` on trio,
which aiofiles does not support; the event loop never encodes or waits on the disk),
with one ``write`` on
an unbuffered file: when :meth:`JsonlBackend.write` returns, the whole batch is in the
file, and nothing of it is held in this process's buffers (so :meth:`~JsonlBackend.flush`
has nothing to do, and a crash of this process loses nothing that was confirmed). The
file is ``fsync``-ed once, at :meth:`~JsonlBackend.close`.

A failed write leaves nothing of its batch behind: if the disk fills up (``ENOSPC``, or
``EFBIG`` past ``RLIMIT_FSIZE``) part-way through a batch, the file is cut back to its
size before that batch, as the TensorBoard backend does. So every line in the file is
whole, strict JSON, a retry never leaves a torn line in the middle of the file, and the
runner's ``written`` count (records whose ``write`` returned) is exactly the number of
lines this backend added to the file.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import BinaryIO

import msgspec

from .._core._records import PerTags, StepRecord, columns
from .._core._turns import RECORDS_A_PIECE, in_pieces, shared
from .._runfolder._tfrecord import write_whole
from ._file import AppendFileBackend

__all__ = ["JsonlBackend", "encode_lines"]

#: msgspec writes a non-finite float as ``null``; scalars are never None, so a ``null``
#: in a line means one (or a text holding the word): that row is encoded again
_dumps = msgspec.json.Encoder().encode
_NULL = b"null"


def _finite_or_str(v: object) -> object:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
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
_encode_rows = msgspec.json.Encoder().encode_lines


def _fast_row(rec: StepRecord) -> msgspec.Struct | None:
    """A run's own record as its tags' row (see :func:`_row_type`), or ``None`` where
    only the general path writes it right (a tag that repeats or is named like a fixed
    key, a producer's or ``SummaryWriter``'s record)."""
    if rec.producer is not None or rec.writer or not rec.scalars:
        return None
    tags, values = columns(rec.scalars)
    row = _row_types.get(tags)
    return None if row is None else row(rec.step, rec.iteration, rec.wall_time, *values)


def _general_line(rec: StepRecord) -> bytes:
    row: dict[str, object] = {"step": rec.step, "iteration": rec.iteration, "wall_time": 0}
    row.update(rec.scalars)
    # re-set after the tags: a tag named like a fixed key never hides the record's own
    row["step"] = rec.step
    row["iteration"] = rec.iteration
    row["wall_time"] = rec.wall_time
    if rec.producer is not None:  # log.remote(name): its own step and iteration
        row["producer"] = rec.producer
    if rec.writer:  # SummaryWriter: add_text's texts, the run folder of add_scalars'
        row.update(rec.texts)
        if rec.run:
            row["run"] = rec.run
    line = _dumps(row)
    if _NULL in line:  # a non-finite float (see _NULL): as a string
        line = _dumps({k: _finite_or_str(v) for k, v in row.items()})
    return line + b"\n"


def _rows_lines(rows: list[msgspec.Struct], recs: list[StepRecord]) -> bytes:
    """The lines of ``rows`` (made from ``recs``) at once; a row with a non-finite value
    (msgspec's ``null``, see :data:`_NULL`) goes through the general path instead."""
    blob = _encode_rows(rows)
    if _NULL not in blob:
        return blob
    lines = [_dumps(row) + b"\n" for row in rows]
    return b"".join(
        _general_line(rec) if _NULL in line else line for line, rec in zip(lines, recs, strict=True)
    )


def encode_lines(records: Sequence[StepRecord]) -> bytes:
    """Encode records as UTF-8 JSON lines (see the module docstring for the format)."""
    out: list[bytes] = []
    rows: list[msgspec.Struct] = []
    recs: list[StepRecord] = []
    # where the GIL is shared, in pieces (_core/_turns): one msgspec call a piece
    at_once = RECORDS_A_PIECE if shared() else _ROWS_AT_ONCE
    for rec in in_pieces(records):
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


class JsonlBackend(AppendFileBackend):
    """Appends one JSON object per :class:`~aoff.StepRecord` to ``path``."""

    name = "jsonl"
    label = "JSONL"
    #: the agent builds it again from its path (see ``AppendFileBackend.portable``)
    rebuilt_from_path = True

    def _encode(self, records: Sequence[StepRecord]) -> bytes:
        return encode_lines(records)

    def _media_rows(self, f: BinaryIO, rows: list[dict[str, object]]) -> None:
        write_whole(f, b"".join(_dumps(row) + b"\n" for row in rows))
