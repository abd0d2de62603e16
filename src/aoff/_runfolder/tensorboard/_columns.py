"""TensorBoard records of a column batch, serialised and framed in bulk with NumPy.

Why a module of its own: the per-event encoder (``_events``) packs one record at a
time in Python; a batch of records with one tag sequence (``_core/_columns``) has the
same bytes in every record but its wall time, its step and its float32 values. So the
records of a run of equal layout are one NumPy table: a template row (every tag's head,
the summary's key and length, the TFRecord length head) copied once per record, the
wall times, the steps' varints and the values written as columns into their slots,
and the one thing that stays per record, its CRC32C, taken by the ``crc32c`` package's C
function over each row of the joined buffer. The bytes are the per-event encoder's,
record for record (a test compares them).
"""

from __future__ import annotations

import struct
from itertools import pairwise
from typing import Any

import numpy as np

from ..._core._columns import ScalarColumns
from ._events import EventEncoder, varint_bytes
from ._tfrecord import MASK_DELTA, U32, crc32c, masked_crc32c

__all__ = ["encode_columns"]

_U8 = np.uint8
_pack_len = struct.Struct("<Q").pack
_pack_u32 = struct.Struct("<I").pack
#: the largest step each varint_bytes length holds (a negative step is ten bytes, as an u64)
_VARINT_LIMITS = np.array([(1 << (7 * k)) - 1 for k in range(1, 10)], np.uint64)


def _step_lengths(steps: np.ndarray[Any, np.dtype[np.int64]]) -> np.ndarray[Any, Any]:
    """Each step's varint_bytes length as protobuf writes ``Event.step`` (0: omitted)."""
    u = steps.view(np.uint64)
    lengths = 1 + np.searchsorted(_VARINT_LIMITS, u, side="left").astype(np.int64)
    lengths[steps == 0] = 0
    return lengths


def encode_columns(encoder: EventEncoder, cols: ScalarColumns) -> bytes:
    """The framed ``Event`` records of ``cols``, in order: the bytes
    ``frame_many(map(encoder.encode, records))`` writes for the same records."""
    heads = encoder.summary_heads(cols.tags)
    walls = cols.wall_times
    steps = cols.steps
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: ±inf, as protobuf
        f32 = cols.values.astype("<f4")
    # a record's layout: whether it has a wall time, and its step's varint_bytes length
    layout = _step_lengths(steps) + 16 * (walls != 0.0)
    cuts = np.flatnonzero(layout[1:] != layout[:-1]) + 1
    bounds = [0, *cuts.tolist(), len(layout)]
    summary_len = sum(map(len, heads)) + 4 * len(heads)
    # each value's offset in the summary
    offsets = np.cumsum([len(h) for h in heads]) + 4 * np.arange(len(heads))
    parts: list[bytes] = []
    for a, b in pairwise(bounds):
        key = int(layout[a])
        parts.append(
            _segment(
                heads,
                summary_len,
                offsets,
                key & 15,
                bool(key & 16),
                walls[a:b],
                steps[a:b],
                f32[a:b],
            )
        )
    return b"".join(parts)


def _segment(
    heads: list[bytes],
    summary_len: int,
    offsets: np.ndarray[Any, Any],
    step_len: int,
    has_wall: bool,
    walls: np.ndarray[Any, Any],
    steps: np.ndarray[Any, Any],
    f32: np.ndarray[Any, Any],
) -> bytes:
    """Records of one layout: a template row, the columns written into its slots."""
    m = len(steps)
    prefix = b""
    wall_at = step_at = -1
    if has_wall:
        wall_at = 1
        prefix += b"\x09" + bytes(8)
    if step_len:
        step_at = len(prefix) + 1
        prefix += b"\x10" + bytes(step_len)
    prefix += b"\x2a" + varint_bytes(summary_len)
    body = b"".join(h + b"\0\0\0\0" for h in heads)
    n = len(prefix) + len(body)  # the Event's length
    length = _pack_len(n)
    head = length + _pack_u32(masked_crc32c(length))
    width = len(head) + n + 4
    out = np.empty((m, width), _U8)
    out[:, : len(head) + n] = np.frombuffer(head + prefix + body, _U8)
    start = len(head)  # the Event's first byte in a row
    at = start + len(prefix)
    # the row's numbers as fields of a structured view (unaligned, little-endian): one
    # strided copy a column
    names = [f"v{i}" for i in range(len(heads))] + ["crc"]
    places = [at + int(o) for o in offsets] + [width - 4]
    formats = ["<f4"] * len(heads) + ["<u4"]
    if has_wall:
        names.append("wall")
        places.append(start + wall_at)
        formats.append("<f8")
    row = np.dtype({"names": names, "formats": formats, "offsets": places, "itemsize": width})
    fields = out.view(row).reshape(m)
    for i, name in enumerate(names[: len(heads)]):
        fields[name] = f32[:, i]
    if has_wall:
        fields["wall"] = walls
    if step_len:
        u = steps.view(np.uint64)
        at = start + step_at
        for j in range(step_len):
            byte = (u >> np.uint64(7 * j)) & np.uint64(0x7F)
            if j < step_len - 1:
                byte |= np.uint64(0x80)
            out[:, at + j] = byte.astype(_U8)
    # the one per-record part: each Event's CRC32C, over its row of the joined buffer
    flat = out.reshape(-1).data
    crc = crc32c
    c = np.array([crc(flat[o : o + n]) for o in range(start, m * width, width)], np.uint64)
    masked = (((c >> np.uint64(15)) | (c << np.uint64(17))) + np.uint64(MASK_DELTA)) & np.uint64(
        U32
    )
    fields["crc"] = masked
    return out.tobytes()
