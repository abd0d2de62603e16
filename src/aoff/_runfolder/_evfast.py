"""The bulk path: runs of event records that repeat a known layout, decoded with NumPy.

Why a module of its own: a Python call per record cannot read 200 MB/s of event file
(a scalar record is ~55 bytes: ~4 M records a second). Most files are a short cycle of
layouts repeated: torch's ``SummaryWriter`` writes one record per ``add_scalar`` (the same
tags in the same order, every step), aoff one record per step with every tag. Within a
layout only a few bytes change record to record: the wall time (8 bytes), the step (a
varint of a fixed width), each value (4 or 8 bytes) and the data checksum (4 bytes);
everything else, the TFRecord header with its checksum included, is fixed.

So once the general decoder (``_evfolder``) has seen a cycle of layouts twice in a row,
the bytes ahead are laid out as a 2-D array, one row per cycle, and checked against it
in bulk: every fixed byte equal (this checks each header and its checksum), each step
varint's continuation bits where the layout has them. The rows that match are decoded
column by column (wall times, steps, values) without a Python object per value; the
first row that does not match goes back to the general decoder.

The data checksums are verified in bulk too, each record's own: CRC32C is affine in
the data, so a record's checksum is the checksum of its layout's fixed bytes XOR, for
each variable byte ``j`` (a wall time, a step, a value: ~15 of a scalar record's ~55),
a table ``T_j`` indexed by that byte (``crc(fixed) ^ crc(fixed with byte j changed)``).
One table look-up per variable byte per record, vectorized over the block, gives every
record's checksum, compared with the one it stores: a corrupt record is found however
many others are corrupted the same way (a check over the XOR of a block's checksums
would let two equal errors cancel). The block is taken up to its first failing record,
which the general decoder then skips and counts.

TensorBoard's purge rules hold here too: records of these layouts carry no
``SessionLog``; in a file older than ``brain.Event:2`` a block is taken only up to a
step that goes back (the general decoder purges there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from crc32c import crc32c

from ._framing import MASK_DELTA
from ._tagseries import Columns
from ._tbwire import Buf, fields, varint

__all__ = ["FastPath", "Folder", "Layout"]


class Folder(Protocol):
    """What the bulk path reads and updates of its folder's state (``_evfolder``)."""

    prefix: str
    tags: frozenset[str] | None
    plugins: dict[str, str | None]
    file_version: float | None
    most_recent_step: int
    bulk_records: int

    def block(self, tag: str, cols: Columns) -> None: ...


#: rows tried in the first block after a cycle is found, and the most bytes in a block
_FIRST_ROWS = 16
_BLOCK_BYTES = 4 << 20
#: the longest cycle of layouts looked for
_MAX_PERIOD = 64
#: cycles kept for reuse
_MAX_CYCLES = 64
_DT_FLOAT, _DT_DOUBLE = 1, 2


@dataclass
class Layout:
    """One record's byte layout: its fixed bytes and where its variable fields lie
    (offsets from the record's first header byte)."""

    size: int  # the whole record: header, data, data checksum
    fixed: bytes  # the record with its variable bytes zeroed
    mask: bytes  # 0xFF where a byte is fixed, 0x80 on a varint's continuation bits
    wall: int | None  # 8 bytes, little-endian double
    step: tuple[int, int] | None  # varint: offset, width
    values: list[tuple[str, int, int]] = field(default_factory=list)  # tag, offset, 4 | 8
    #: offsets of the data's variable bytes (the checksum's own four left out)
    varbytes: tuple[int, ...] = ()
    _crc: tuple[int, list[tuple[int, str, np.ndarray[Any, np.dtype[np.uint32]]]]] | None = None

    @property
    def key(self) -> tuple[bytes, bytes]:
        return self.fixed, self.mask

    def crc_tables(self) -> tuple[int, list[tuple[int, str, np.ndarray[Any, np.dtype[np.uint32]]]]]:
        """``(crc of the fixed data, [(offset, dtype, table)])``: a record's data checksum
        is the first XOR ``table[index]`` for the index (one byte, or two as a
        little-endian ``u2``) at each offset (built once)."""
        if self._crc is None:
            data = bytearray(self.fixed[12 : self.size - 4])
            base = crc32c(data)
            deltas = np.zeros((len(self.varbytes), 8), np.uint32)
            for i, off in enumerate(self.varbytes):
                j = off - 12
                was = data[j]
                for bit in range(8):  # the table is linear in the byte's bits
                    data[j] = was ^ (1 << bit)
                    deltas[i, bit] = crc32c(data) ^ base
                data[j] = was
            # indexed by the byte as stored, not by its change from the fixed byte
            stored = np.arange(256)[None, :] ^ np.frombuffer(
                bytes(data[off - 12] for off in self.varbytes), np.uint8
            )[:, None].astype(np.int64)
            bits = (stored[:, :, None] >> np.arange(8)) & 1 == 1
            tables = np.bitwise_xor.reduce(
                np.where(bits, deltas[:, None, :], np.uint32(0)), axis=2
            ).astype(np.uint32)
            # adjacent variable bytes (a wall time's eight, a value's four) read in pairs as
            # one 16-bit index: half the look-ups
            groups: list[tuple[int, str, np.ndarray[Any, np.dtype[np.uint32]]]] = []
            vb = self.varbytes
            i = 0
            while i < len(vb):
                if i + 1 < len(vb) and vb[i + 1] == vb[i] + 1:
                    pair = (tables[i][None, :] ^ tables[i + 1][:, None]).ravel()
                    groups.append((vb[i], "<u2", pair))
                    i += 2
                else:
                    groups.append((vb[i], "u1", tables[i]))
                    i += 1
            self._crc = (base, groups)
        return self._crc


def layout_of(folder: Folder, buf: Buf, pos: int, length: int) -> Layout | None:
    """The layout of the record at ``pos`` (data ``length`` bytes), when it is an
    ``Event`` of a wall time, a step and a summary of scalars only; else None."""
    start = pos + 12
    end = start + length
    var: list[tuple[int, int, bool]] = []  # offset from pos, width, is a varint
    wall = step = None
    summary = None
    last = 0
    for num, wire, s, e in fields(buf, start, end):
        if num <= last:
            return None
        last = num
        if num == 1 and wire == 1:
            wall = s - pos
            var.append((wall, 8, False))
        elif num == 2 and wire == 0:
            step = (s - pos, e - s)
            if e - s > 9:  # a negative step: the general path
                return None
            var.append((*step, True))
        elif num == 5 and wire == 2:
            summary = (s, e)
        else:
            return None
    if summary is None:
        return None
    values: list[tuple[str, int, int]] = []
    for num, wire, s, e in fields(buf, *summary):
        if num != 1 or wire != 2:
            return None
        got = _value(folder, buf, s, e)
        if got is None:
            return None
        tag, at, width = got
        values.append((tag, at - pos, width))
        var.append((at - pos, width, False))
    if not values:
        return None
    size = 16 + length
    var.append((size - 4, 4, False))  # the data checksum
    fixed = bytearray(buf[pos : pos + size])
    mask = bytearray(b"\xff" * size)
    for off, width, is_varint in var:
        for i in range(off, off + width):
            fixed[i] &= 0x80 if is_varint else 0
            mask[i] = 0x80 if is_varint else 0
    varbytes = tuple(
        i for off, width, _ in var[:-1] for i in range(off, off + width) if mask[i] != 0xFF
    )
    return Layout(size, bytes(fixed), bytes(mask), wall, step, values, varbytes)


def _value(folder: Folder, buf: Buf, start: int, end: int) -> tuple[str, int, int] | None:
    """``(tag, offset of its number, 4 | 8)`` of a ``Summary.Value`` that is a scalar of
    a fixed layout: a ``simple_value``, or a one-number tensor of a tag whose first
    metadata named the ``scalars`` plugin."""
    parts = fields(buf, start, end)
    if len(parts) < 2 or parts[0][:2] != (1, 2) or parts[0][3] == parts[0][2]:
        return None
    tag = buf[parts[0][2] : parts[0][3]].decode("utf-8", "replace")
    if parts[1][:2] == (2, 5) and all(q[:2] == (9, 2) for q in parts[2:]):
        return tag, parts[1][2], 4  # a simple_value (its metadata, if any, is fixed bytes)
    rest = parts[1:]
    if rest[-1][:2] == (9, 2):  # metadata: the first one of a tag decides (as TensorBoard)
        if tag not in folder.plugins:
            return None
        rest = rest[:-1]
    if len(rest) != 1 or rest[0][:2] != (8, 2) or folder.plugins.get(tag) != "scalars":
        return None
    return _tensor_number(tag, buf, rest[0][2], rest[0][3])


def _tensor_number(tag: str, buf: Buf, start: int, end: int) -> tuple[str, int, int] | None:
    parts = fields(buf, start, end)
    if len(parts) != 3 or parts[0][:2] != (1, 0) or parts[1][:2] != (2, 2):
        return None
    dtype = varint(buf, parts[0][2])[0]
    if parts[1][3] != parts[1][2]:  # a shape with dimensions
        return None
    num, wire, s, e = parts[2]
    width = {_DT_FLOAT: 4, _DT_DOUBLE: 8}.get(dtype)
    if width is None or e - s != width:
        return None
    if (num, wire) in ((4, 2), (5, 2), (5, 5)) and width == 4:
        return tag, s, 4
    if (num, wire) in ((4, 2), (6, 2), (6, 1)) and width == 8:
        return tag, s, 8
    return None


class _Cycle:
    """A cycle of layouts, laid out as one row of a 2-D array; blocks are a multiple of 8
    rows, so that a block's bytes are whole 64-bit words (compared 8 bytes at a time)."""

    def __init__(self, layouts: list[Layout]) -> None:
        self.layouts = layouts
        self.size = size = sum(lay.size for lay in layouts)
        self.starts = np.cumsum([0] + [lay.size for lay in layouts[:-1]]).tolist()
        self.rows = _FIRST_ROWS
        self.max_rows = max(_BLOCK_BYTES // size // 8 * 8, 8)
        self.row_fixed = b"".join(lay.fixed for lay in layouts)
        self.row_mask = b"".join(lay.mask for lay in layouts)
        self.built = 0
        self.words(8)
        #: each tag's (record in the cycle, offset in the row, width), in record order
        self.tags: dict[str, list[tuple[int, int, int]]] = {}
        for j, (lay, at) in enumerate(zip(layouts, self.starts, strict=True)):
            for tag, off, width in lay.values:
                self.tags.setdefault(tag, []).append((j, at + off, width))

    def words(self, rows: int) -> int:
        """Make :attr:`fixed`, :attr:`mask` (as words) and the scratch arrays cover
        ``rows`` rows (a multiple of 8); the words they take."""
        if rows > self.built:
            self.built = built = min(max(rows, 2 * self.built), self.max_rows)
            self.fixed = np.frombuffer(self.row_fixed * built, np.uint64)
            self.mask = np.frombuffer(self.row_mask * built, np.uint64)
            self.scratch = np.empty_like(self.mask)
            self.flags = np.empty(len(self.mask), bool)
        return rows * self.size // 8


def _column(buf: Buf, start: int, rows: int, stride: int, dtype: str) -> np.ndarray[Any, Any]:
    """A strided view of one field in each of ``rows`` rows (unaligned is fine)."""
    return np.ndarray((rows,), dtype=dtype, buffer=buf, offset=start, strides=(stride,))


def _varints(buf: Buf, start: int, rows: int, stride: int, width: int) -> np.ndarray[Any, Any]:
    """The varints of ``width`` bytes at ``start`` of each row: the row's bytes from
    there read as one little-endian word (what follows the varint in the record is
    masked off), then each byte's seven bits put in place."""
    if width > 8:
        out = _column(buf, start, rows, stride, "u1").astype(np.int64) & 0x7F
        for i in range(1, width):
            byte = _column(buf, start + i, rows, stride, "u1").astype(np.int64)
            out |= (byte & 0x7F) << (7 * i)
        return out
    word = _column(buf, start, rows, stride, "<u4" if width <= 4 else "<u8").astype(np.int64)
    out = word & 0x7F
    for i in range(1, width):
        out |= (word >> i) & (0x7F << (7 * i))
    return out


class FastPath:
    """Learns the cycle of layouts from the general decoder's records, then decodes the
    records ahead that follow it in bulk."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self.layouts: dict[tuple[bytes, bytes], int] = {}
        self.by_id: list[Layout] = []
        self.history: list[int] = []
        self.cycle: _Cycle | None = None
        #: cycles met before, by their layouts (a file comes back to its cycle after
        #: each break: a chunk's end, a step that needs one more varint byte)
        self.cycles: dict[tuple[int, ...], _Cycle] = {}

    # -- learning ---------------------------------------------------------------------------
    def forget(self) -> None:
        """A record was skipped: the records before it are no cycle with those after."""
        self.history.clear()

    def learn(self, buf: Buf, pos: int, length: int) -> None:
        """Note the layout of a record the general decoder has just read."""
        try:
            lay = layout_of(self.folder, buf, pos, length)
        except (ValueError, IndexError):
            lay = None
        history = self.history
        if lay is None:
            history.clear()
            return
        lid = self.layouts.get(lay.key)
        if lid is None:
            lid = self.layouts[lay.key] = len(self.by_id)
            self.by_id.append(lay)
        history.append(lid)
        if len(history) > 2 * _MAX_PERIOD:
            del history[:-_MAX_PERIOD]
        n = len(history)
        for p in range(1, min(_MAX_PERIOD, n // 2) + 1):
            if history[n - p :] == history[n - 2 * p : n - p]:
                ids = tuple(history[n - p :])
                cycle = self.cycles.get(ids)
                if cycle is None:
                    if len(self.cycles) >= _MAX_CYCLES:
                        self.cycles.clear()
                    cycle = self.cycles[ids] = _Cycle([self.by_id[i] for i in ids])
                self.cycle = cycle
                return

    # -- bulk -------------------------------------------------------------------------------
    def run(self, buf: Buf, pos: int, end: int) -> int:
        """Decode the records from ``pos`` that follow the cycle; the position after them."""
        cycle = self.cycle
        if cycle is None:
            return pos
        size = cycle.size
        while True:
            m = min(cycle.rows, (end - pos) // size) // 8 * 8
            if m == 0:
                return pos
            words = cycle.words(m)
            got = np.frombuffer(buf, np.uint64, count=words, offset=pos)
            masked = np.bitwise_and(got, cycle.mask[:words], out=cycle.scratch[:words])
            diff = np.not_equal(masked, cycle.fixed[:words], out=cycle.flags[:words])
            first = int(diff.argmax())
            good = first * 8 // size if diff[first] else m
            if good:
                good = self._take(buf, pos, good)
            self.history.clear()  # what it holds is no longer the records just before
            self.folder.bulk_records += good * len(cycle.layouts)
            pos += good * size
            if good < m:  # the cycle ends here: back to the general decoder
                self.cycle = None
                cycle.rows = _FIRST_ROWS
                return pos
            cycle.rows = min(cycle.rows * 2, cycle.max_rows)

    def _take(self, buf: Buf, pos: int, m: int) -> int:
        """Decode the ``m`` matching rows at ``pos``; the rows taken (fewer when an old
        file's step goes back, or a data checksum fails)."""
        cycle = self.cycle
        assert cycle is not None
        folder = self.folder
        size = cycle.size
        p = len(cycle.layouts)
        steps: list[np.ndarray[Any, Any]] = []
        walls: list[np.ndarray[Any, Any]] = []
        for lay, at in zip(cycle.layouts, cycle.starts, strict=True):
            if lay.step is not None:
                steps.append(_varints(buf, pos + at + lay.step[0], m, size, lay.step[1]))
            else:
                steps.append(np.zeros(m, np.int64))
            if lay.wall is not None:
                walls.append(_column(buf, pos + at + lay.wall, m, size, "<f8").copy())
            else:
                walls.append(np.zeros(m, np.float64))
        old_rule = not (folder.file_version and folder.file_version >= 2)
        if old_rule:
            flat = np.stack(steps, axis=1).ravel()
            before = np.empty_like(flat)
            before[0] = folder.most_recent_step
            before[1:] = flat[:-1]
            back = np.flatnonzero(flat < before)
            if len(back):
                m = int(back[0]) // p
        m = self._checksums_hold(buf, pos, m)
        if m == 0:
            return 0
        steps, walls = [s[:m] for s in steps], [w[:m] for w in walls]
        if old_rule:
            folder.most_recent_step = int(steps[-1][-1])
        self._hand_over(buf, pos, m, steps, walls)
        return m

    def _checksums_hold(self, buf: Buf, pos: int, m: int) -> int:
        """The first ``m`` rows at ``pos`` up to the first one with a record whose data
        checksum fails (each record's own, from its variable bytes and its layout's
        tables)."""
        cycle = self.cycle
        assert cycle is not None
        size = cycle.size
        if m == 0:
            return 0
        bad: np.ndarray[Any, np.dtype[np.bool_]] | None = None
        for lay, at in zip(cycle.layouts, cycle.starts, strict=True):
            base, groups = lay.crc_tables()
            crc = np.full(m, base, np.uint32)
            for off, dtype, table in groups:
                crc ^= table.take(_column(buf, pos + at + off, m, size, dtype).astype(np.intp))
            stored = _column(buf, pos + at + lay.size - 4, m, size, "<u4")
            rot = stored - np.uint32(MASK_DELTA)
            plain = (rot << np.uint32(15)) | (rot >> np.uint32(17))
            wrong = crc != plain
            bad = wrong if bad is None else bad | wrong
        assert bad is not None
        first = int(bad.argmax())
        return first if bad[first] else m

    def _hand_over(
        self,
        buf: Buf,
        pos: int,
        m: int,
        steps: list[np.ndarray[Any, Any]],
        walls: list[np.ndarray[Any, Any]],
    ) -> None:
        cycle = self.cycle
        assert cycle is not None
        folder = self.folder
        prefix = folder.prefix
        wanted = folder.tags
        size = cycle.size
        for tag, slots in cycle.tags.items():
            name = prefix + tag
            if wanted is not None and name not in wanted:
                continue
            cols = [
                _column(buf, pos + off, m, size, "<f4" if width == 4 else "<f8").astype(np.float64)
                for _j, off, width in slots
            ]
            js = [s[0] for s in slots]
            if len(slots) == 1:
                cs, cw, cv = steps[js[0]], walls[js[0]], cols[0]
            else:  # the tag more than once a cycle: interleave in record order
                cs = np.stack([steps[j] for j in js], axis=1).ravel()
                cw = np.stack([walls[j] for j in js], axis=1).ravel()
                cv = np.stack(cols, axis=1).ravel()
            folder.block(name, (cs, cw, cv))
