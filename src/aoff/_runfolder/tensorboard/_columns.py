"""TensorBoard records of a column batch, serialised and framed in bulk with NumPy.

Why a module of its own: the per-event encoder (``_events``) packs one record at a
time in Python; a batch of records with one tag sequence (``_core/_columns``) has the
same bytes in every record but its wall time, its step and its float32 values. So the
records of a run of equal layout are one NumPy table: a template row (every tag's head,
the summary's key and length, the TFRecord length head; made once per tag sequence and
layout, :class:`_Template`) copied once per record, the wall times and the steps'
varints written as columns into their slots and the values by one scatter (not
a NumPy call a tag: a call's fixed cost counts in a small batch) or, in a long table,
one strided copy a run of tags whose names have one length (a byte's scatter costs more
than a run's call there),
and the one thing that stays per record, its CRC32C, taken by the ``crc32c`` package's C
function over each row of the joined buffer. The bytes are the per-event encoder's,
record for record (a test compares them).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from ..._core._columns import ScalarColumns
from ._events import EventEncoder, varint_bytes
from ._tfrecord import MASK_DELTA, crc32c, masked_crc32c

__all__ = ["column_parts", "encode_columns", "join_columns"]

_U8 = np.uint8
_pack_len = struct.Struct("<Q").pack
_pack_u32 = struct.Struct("<I").pack
#: the largest step each varint_bytes length holds (a negative step is ten bytes, as an u64)
#: the NumPy scalars of the per-table arithmetic, made once (not a call each)
_MASK_DELTA = np.uint32(MASK_DELTA)
_LOW7 = np.uint64(0x7F)
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
    parts = column_parts(encoder, cols)
    return bytes(parts[0]) if len(parts) == 1 else b"".join(parts)


def column_parts(encoder: EventEncoder, cols: ScalarColumns) -> list[memoryview]:
    """:func:`encode_columns`' bytes in pieces (one a run of one layout), for a caller
    that joins them with others: a batch's ~1 KB a record copied once, not twice."""
    heads = tuple(encoder.summary_heads(cols.tags))
    walls = cols.wall_times
    steps = cols.steps
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: ±inf, as protobuf
        f32 = np.ascontiguousarray(cols.values, "<f4")
    # a record's layout: whether it has a wall time, and its step's varint_bytes length
    layout = _step_lengths(steps) + 16 * (walls != 0.0)
    cuts = (layout[1:] != layout[:-1]).nonzero()[0] + 1
    bounds = [0, *cuts.tolist(), len(layout)]
    parts: list[memoryview] = []
    for a, b in pairwise(bounds):
        key = int(layout[a])
        template = _template(heads, key & 15, bool(key & 16))
        parts.append(template.fill(walls[a:b], steps[a:b], f32[a:b]).data)
    return parts


def join_columns(runs: Sequence[ScalarColumns]) -> ScalarColumns:
    """Runs with one tag sequence, in order, as one table: a record's bytes depend on
    its own row alone, so the joined table frames to the runs' bytes one after another."""
    return ScalarColumns(
        runs[0].tags,
        np.concatenate([r.steps for r in runs]),
        np.concatenate([r.wall_times for r in runs]),
        np.concatenate([r.values for r in runs]),
    )


class _Template:
    """The records of one tag sequence and layout (its step's varint length, whether it
    has a wall time): a row of their shared bytes, and where each column goes in it."""

    __slots__ = (
        "more",
        "n",
        "row",
        "runs",
        "runs_from",
        "shifts",
        "start",
        "step_at",
        "step_len",
        "value_at",
        "wall_at",
        "width",
    )

    def __init__(self, heads: tuple[bytes, ...], step_len: int, has_wall: bool) -> None:
        prefix = b""
        wall_at = step_at = -1
        if has_wall:
            wall_at = 1
            prefix += b"\x09" + bytes(8)
        if step_len:
            step_at = len(prefix) + 1
            prefix += b"\x10" + bytes(step_len)
        summary_len = sum(map(len, heads)) + 4 * len(heads)
        prefix += b"\x2a" + varint_bytes(summary_len)
        body = b"".join(h + b"\0\0\0\0" for h in heads)
        self.n = n = len(prefix) + len(body)  # the Event's length
        length = _pack_len(n)
        head = length + _pack_u32(masked_crc32c(length))
        self.start = start = len(head)  # the Event's first byte in a row
        self.width = start + n + 4
        self.row = np.frombuffer(head + prefix + body + bytes(4), _U8)
        # each value's four bytes, in order: their places in a row
        at = start + len(prefix) + np.cumsum([len(h) for h in heads]) + 4 * np.arange(len(heads))
        self.value_at = (at[:, None] + np.arange(4)).reshape(-1)
        self.runs = _value_runs(at.tolist())
        #: records from which the values go in as :attr:`runs`, not as one scatter
        self.runs_from = len(self.runs) * _RUN_COST // max(1, 4 * len(heads))
        self.wall_at = start + wall_at if has_wall else -1
        self.step_at = start + step_at
        self.step_len = step_len
        self.shifts = np.arange(step_len, dtype=np.uint64) * np.uint64(7)
        self.more = np.full(step_len, 0x80, np.uint64)
        self.more[-1:] = 0

    def fill(
        self,
        walls: np.ndarray[Any, Any],
        steps: np.ndarray[Any, Any],
        f32: np.ndarray[Any, Any],
    ) -> np.ndarray[Any, Any]:
        """The records of these columns (``f32``: C-ordered float32, little-endian), a
        row each: the template copied, the columns' bytes written into their places."""
        m = len(steps)
        width, start, n = self.width, self.start, self.n
        out = np.empty((m, width), _U8)
        out[:] = self.row
        if m < self.runs_from:  # one scatter of all the values' bytes (~1.1-1.9 ns a byte)
            out[:, self.value_at] = f32.view(_U8).reshape(m, -1)
        else:  # a strided float32 view a run of evenly spaced values (~2.5 µs a call)
            for first, col, count, stride in self.runs:
                view = np.ndarray((m, count), "<f4", out, first, (width, stride))
                view[...] = f32[:, col : col + count]
        if self.wall_at >= 0:
            w = self.wall_at
            out[:, w : w + 8] = np.ascontiguousarray(walls, "<f8").view(_U8).reshape(m, 8)
        if self.step_len:  # the varint's bytes, all at once: 7 bits each, a high bit but the last
            u = steps.view(np.uint64)[:, None]
            varint = ((u >> self.shifts) & _LOW7) | self.more
            at = self.step_at
            out[:, at : at + self.step_len] = varint.astype(_U8)
        # the one per-record part: each Event's CRC32C, over its row of the joined buffer
        # (a row of a 2-D array is a contiguous buffer: no slice made a record)
        c = np.fromiter(map(crc32c, out[:, start : start + n]), "<u4", m)
        # masked as masked_crc32c does, in 32 bits (the shift and the sum wrap as its & U32)
        masked = (c >> 15) | (c << 17)
        masked += _MASK_DELTA
        out[:, width - 4 :] = masked.view(_U8).reshape(m, 4)
        return out


#: a run's copy against the scatter, in a value byte's scatter cost (~2.5 µs / ~1.2 ns)
_RUN_COST = 2000


def _value_runs(at: list[int]) -> tuple[tuple[int, int, int, int], ...]:
    """The values' first bytes in a row (``at``, in the tags' order) cut into runs at a
    constant spacing: ``(first byte, first column, count, spacing)`` each. A run's tags
    have heads of one length (``train/metric_10`` .. ``train/metric_31``), so a
    sequence of tags of a few name lengths is a few runs."""
    runs: list[tuple[int, int, int, int]] = []
    i = 0
    while i < len(at):
        j = i + 1
        stride = 4
        if j < len(at):
            stride = at[j] - at[i]
            while j + 1 < len(at) and at[j + 1] - at[j] == stride:
                j += 1
            j += 1
        runs.append((at[i], i, j - i, stride))
        i = j
    return tuple(runs)


@functools.lru_cache(maxsize=64)
def _template(heads: tuple[bytes, ...], step_len: int, has_wall: bool) -> _Template:
    """The template of a tag sequence's heads and a layout, made once (a run has a few)."""
    return _Template(heads, step_len, has_wall)
