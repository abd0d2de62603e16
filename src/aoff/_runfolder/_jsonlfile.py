"""``metrics.jsonl``: its name, its rows read back as scalar series, its last step and
its cut after a step (resume).

Why a module of its own: the JSONL backend writes this file, resume cuts it, ``aoff
show`` and :func:`aoff.read_scalars` read it; its name is spelled here once. A row is
one JSON object (``{"step":…,"iteration":…,"wall_time":…,tag: value,…}``, non-finite
values as ``"nan"``/``"inf"``/``"-inf"``); rows are decoded by msgspec a batch at a time,
one by one only where a batch holds a line that does not decode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection

import msgspec

from ._lines import LineCursor, RowSink, cut_rows, last_row_step

__all__ = ["JSONL_NAME", "JsonlScalars", "cut_after", "last_step", "row_step"]

JSONL_NAME = "metrics.jsonl"
_STEP_PREFIX = re.compile(rb'\{"step": ?(-?\d+)[,}]')  # compact, or older runs' spaces
_decode_list = msgspec.json.Decoder(list[dict[str, object]]).decode
_decode_one = msgspec.json.Decoder(dict[str, object]).decode


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
