"""``metrics.jsonl``: its name, and its rows read back as scalar series.

Why a module of its own: the JSONL backend writes this file, resume cuts it, ``aoff
show`` and :func:`aoff.read_scalars` read it; its name is spelled here once. A row is
one JSON object (``{"step":…,"iteration":…,"wall_time":…,tag: value,…}``, non-finite
values as ``"nan"``/``"inf"``/``"-inf"``); rows are decoded by msgspec a batch at a time,
one by one only where a batch holds a line that does not decode.
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from ._lines import LineCursor, RowSink

__all__ = ["JSONL_NAME", "JsonlScalars"]

JSONL_NAME = "metrics.jsonl"
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
