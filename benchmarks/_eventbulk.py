"""Event files of ``add_scalar`` records built in bulk with NumPy, for the scale benchmark.

Why a module of its own: the issue's folder is 1,000 runs x 10,000 steps x 5 tags (5 x 10^7
records, ~2.6 GB); encoding and framing each record in Python took over half an hour on
this machine. Every record of one tag whose step takes the same number of varint bytes
has the same layout (``Event{wall_time, step, summary{value{tag, simple_value}}}``:
torch's ``SummaryWriter`` writes one per ``add_scalar``), so a run is built as a few 2-D
byte arrays, one row per step holding every tag's record, each from a template record
(aoff's own encoder's bytes) with the wall time, the step and the value written into
columns. A record's data checksum (CRC32C) is affine in its bytes: the checksum of the
template with zeros in those columns, XOR each column byte's own contribution, looked up
in a 256-entry table per column, so the checksums are table look-ups over whole columns.
The benchmark checks a built file record for record against what torch writes
(``_torchbytes``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from aoff._core._records import StepRecord
from aoff._runfolder.tensorboard._events import EventEncoder
from aoff._runfolder.tensorboard._tfrecord import crc32c, frame_many

__all__ = ["event_file"]

U8 = np.ndarray[Any, np.dtype[np.uint8]]


def _masked(crc: np.ndarray[Any, np.dtype[np.uint32]]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """TFRecord's masking of checksums, over a column of them."""
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)


def _varint_width(step: int) -> int:
    """Bytes of ``step``'s varint in an Event: 0 for step 0 (proto3 leaves it out)."""
    return 0 if step == 0 else (step.bit_length() + 6) // 7


class _Layout:
    """One tag's record for steps of one varint width: the framed template, where its
    columns are, and each column byte's checksum table."""

    def __init__(self, tag: str, width: int) -> None:
        step = 0 if width == 0 else 1 << (7 * (width - 1))
        data = EventEncoder().encode(StepRecord(step, 0, 1.0, ((tag, 1.0),)))
        n = len(data)
        # Event: 0x09 wall_time (8 bytes), 0x10 step varint (absent at 0), ..., value: last 4
        self.wall, self.step, self.value = 1, 10, n - 4
        if data[0] != 0x09 or (width and data[9] != 0x10) or data[n - 5] != 0x15:
            raise SystemExit(f"an unexpected Event layout for {tag!r}: {data.hex()}")
        cols = [*range(1, 9), *range(10, 10 + width), *range(n - 4, n)]
        base = bytearray(data)
        for c in cols:
            base[c] = 0
        zeros = crc32c(bytes(n))
        self.base_crc = crc32c(bytes(base))
        self.cols = cols
        self.tables = []
        for c in cols:
            table = np.empty(256, np.uint32)
            one = bytearray(n)
            for b in range(256):
                one[c] = b
                table[b] = crc32c(bytes(one)) ^ zeros
            self.tables.append(table)
        self.width = width
        self.data_len = n
        self.framed = frame_many([bytes(base)])  # length, its checksum, data, checksum


def _fill(
    rows: U8, at: int, lay: _Layout, steps: np.ndarray[Any, Any], walls: Any, values: Any
) -> None:
    """Write ``lay``'s records for ``steps`` into the columns of ``rows`` from ``at``."""
    data = at + 12
    m = len(steps)
    rows[:, data + 1 : data + 9] = walls.astype("<f8").view(np.uint8).reshape(m, 8)
    for i in range(lay.width):
        byte = (steps >> (7 * i)) & 0x7F
        if i < lay.width - 1:
            byte |= 0x80
        rows[:, data + 10 + i] = byte.astype(np.uint8)
    rows[:, data + lay.value : data + lay.value + 4] = (
        values.astype("<f4").view(np.uint8).reshape(m, 4)
    )
    crc = np.full(m, lay.base_crc, np.uint32)
    for c, table in zip(lay.cols, lay.tables, strict=True):
        crc ^= table[rows[:, data + c]]
    end = data + lay.data_len
    rows[:, end : end + 4] = _masked(crc).astype("<u4").view(np.uint8).reshape(m, 4)


_layouts: dict[tuple[str, int], _Layout] = {}


def event_file(first: bytes, tags: tuple[str, ...], walls: Any, values: Any) -> bytes:
    """A whole event file: the framed record ``first`` (the file version), then for each
    step ``0 .. len(walls) - 1`` one ``add_scalar`` record per tag, in ``tags``' order:
    wall time ``walls[step]``, value ``values[step, t]`` (stored as float32)."""
    steps_all = np.arange(len(walls), dtype=np.int64)
    out = [frame_many([first])]
    # steps are grouped by their varint's width: 0 (step 0), 1 (1-127), 2 (128-16383) ...
    bounds, b = [0, 1], 128
    while bounds[-1] < len(walls):
        bounds.append(b)
        b <<= 7
    for lo, hi in itertools.pairwise(bounds):
        hi = min(hi, len(walls))
        if lo >= hi:
            continue
        width = _varint_width(lo)
        lays = []
        for tag in tags:
            lay = _layouts.get((tag, width))
            if lay is None:
                lay = _layouts[(tag, width)] = _Layout(tag, width)
            lays.append(lay)
        template = b"".join(lay.framed for lay in lays)
        rows = np.tile(np.frombuffer(template, np.uint8), (hi - lo, 1))
        at = 0
        for t, lay in enumerate(lays):
            _fill(rows, at, lay, steps_all[lo:hi], walls[lo:hi], values[lo:hi, t])
            at += len(lay.framed)
        out.append(rows.tobytes())
    return b"".join(out)
