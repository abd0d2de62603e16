"""Cutting a run folder back per tag: each tag loses its points after its own step.

Why not resume's cut (``_laststep.cut_after``: a ``SessionLog.START`` that TensorBoard
reads as "hide every point at or after N"): one folder may hold several step axes at
once. Tianshou's loggers write ``train/*`` and ``test/*`` at the env step, ``update/*`` at
the gradient step and ``info/*`` at the epoch; its checkpoint is one value on each axis,
so one purge step cuts every tag wrong. Here every event file of the folder is written
again (``_replace``: a reader sees the old file or the new one) without the points whose
tag has a limit and whose step is beyond it; a record left with no point goes, any other
record is kept byte for byte, and a torn last record (a crash mid-write) is dropped as
TensorBoard would stop at it. ``metrics.jsonl`` likewise: a row loses those tags, and
goes when none of its values is left. (``progress.csv`` is not cut per tag: its caller
says so.)

Only for files no writer has open: a writer appending to a file replaced under it would
write to a file nobody reads. The caller cuts before it starts its writer.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable

from .._replace import replaced
from ..lines._jsonl import JSONL_NAME
from ..tensorboard._events import varint_bytes
from ..tensorboard._files import event_files
from ..tensorboard._tfrecord import frame_many
from ..tensorboard._wire import HEADER, Buf, fields, varint

__all__ = ["cut_tags_after"]

#: an Event's fields (tensorflow/core/util/event.proto): step, summary
_STEP, _SUMMARY = 2, 5
#: a Summary's repeated ``value`` field, and a Value's ``tag``
_VALUE, _TAG = 1, 1


def cut_tags_after(folder: str, limit: Callable[[str], int | None]) -> int:
    """Drop each point of ``folder``'s event files whose step is above ``limit(tag)``
    (``None``: the tag is kept whole); returns how many points went."""
    removed = _cut_jsonl(os.path.join(folder, JSONL_NAME), limit)
    for path in event_files(folder):
        with open(path, "rb") as f:
            data = f.read()
        records, gone, torn = _kept_records(data, limit)
        if gone or torn:
            with replaced(path, prefix=".aoff-cut-") as out:
                out.write(frame_many(records))
            removed += gone
    return removed


#: a JSONL row's keys that are not values: a row with only these left goes
_ROW_KEYS = ("step", "iteration", "wall_time")


def _cut_jsonl(path: str, limit: Callable[[str], int | None]) -> int:
    """``metrics.jsonl`` without the values beyond their tag's limit; how many went."""
    if not os.path.isfile(path):
        return 0
    kept: list[bytes] = []
    gone = 0
    changed = False
    with open(path, "rb") as src:
        for line in src:
            if not line.endswith(b"\n"):
                changed = True  # a last line cut short
                break
            try:
                row = json.loads(line)
            except ValueError:
                kept.append(line)
                continue
            step = row.get("step") if isinstance(row, dict) else None
            if not isinstance(step, int):
                kept.append(line)
                continue
            out = {}
            for key, value in row.items():
                top = None if key in _ROW_KEYS else limit(key)
                if top is not None and step > top:
                    gone += 1
                else:
                    out[key] = value
            if len(out) == len(row):
                kept.append(line)
            elif any(k not in _ROW_KEYS and not k.startswith("axis/") for k in out):
                kept.append(json.dumps(out, separators=(",", ":")).encode() + b"\n")
    if gone or changed:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        with replaced(path, prefix=".aoff-cut-", mode=mode) as f:
            f.write(b"".join(kept))
    return gone


def _kept_records(data: Buf, limit: Callable[[str], int | None]) -> tuple[list[bytes], int, bool]:
    """The records to keep, the points dropped, and whether the file ended mid-record."""
    out: list[bytes] = []
    gone = 0
    pos, size = 0, len(data)
    while pos < size:
        if pos + HEADER.size > size:
            return out, gone, True
        (n,) = HEADER.unpack_from(data, pos)[:1]
        start = pos + HEADER.size
        end = start + n
        if end + 4 > size:
            return out, gone, True
        payload = bytes(data[start:end])
        kept, dropped = _cut_event(payload, limit)
        gone += dropped
        if kept is not None:
            out.append(kept)
        pos = end + 4
    return out, gone, False


def _cut_event(payload: bytes, limit: Callable[[str], int | None]) -> tuple[bytes | None, int]:
    """The event without its values beyond their tag's limit (``None``: nothing left of a
    summary event), and how many values went."""
    parts = fields(payload, 0, len(payload))
    step = 0
    summary: tuple[int, int] | None = None
    for num, wire, start, stop in parts:
        if num == _STEP and wire == 0:
            value = varint(payload, start)[0]
            step = value - (1 << 64) if value >= 1 << 63 else value
        elif num == _SUMMARY and wire == 2:
            summary = (start, stop)
    if summary is None:
        return payload, 0
    kept: list[bytes] = []
    gone = 0
    s0, s1 = summary
    for num, wire, start, stop in fields(payload, s0, s1):
        raw = _field_bytes(payload, num, wire, start, stop)
        if num == _VALUE and wire == 2:
            top = limit(_tag(payload, start, stop))
            if top is not None and step > top:
                gone += 1
                continue
        kept.append(raw)
    if not gone:
        return payload, 0
    if not kept:
        return None, gone
    body = b"".join(kept)
    rest = b"".join(
        _field_bytes(payload, num, wire, start, stop)
        for num, wire, start, stop in parts
        if num != _SUMMARY
    )
    return rest + _key(_SUMMARY, 2) + varint_bytes(len(body)) + body, gone


def _tag(buf: bytes, start: int, stop: int) -> str:
    for num, wire, s, e in fields(buf, start, stop):
        if num == _TAG and wire == 2:
            return buf[s:e].decode("utf-8", "replace")
    return ""


def _field_bytes(buf: bytes, num: int, wire: int, start: int, stop: int) -> bytes:
    """A field as it is on the wire: its key (and length), then its content."""
    if wire == 2:
        return _key(num, 2) + varint_bytes(stop - start) + buf[start:stop]
    return _key(num, wire) + buf[start:stop]


def _key(num: int, wire: int) -> bytes:
    return varint_bytes(num << 3 | wire)
