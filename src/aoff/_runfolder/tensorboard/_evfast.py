"""The bulk path: event records of layouts seen before, decoded with NumPy in any order.

Why a module of its own: a Python call per record cannot read 200 MB/s of event file
(a scalar record is ~55 bytes: ~4 M records a second). Every scalar record a writer
emits has one of a few layouts: torch's ``SummaryWriter`` writes one record per
``add_scalar`` (a layout per tag), aoff one record per step with every tag. Within a
layout only a few bytes change record to record: the wall time (8 bytes), the step (a
varint of a fixed width), each value (4 or 8 bytes) and the data checksum (4 bytes);
everything else, the TFRecord header with its checksum included, is fixed. The order of
the records does not matter: CleanRL writes its losses every few steps and an episode's
return whenever one ends.

So once the general decoder (``_evfolder``) has read a record of a layout, the bytes
ahead are swept in bulk: the records' starts are found by following their lengths
(vectorized: every place 12 bytes before an ``Event``'s first byte is a candidate, and
the chain from the first record through the lengths picks the true ones), each record
is matched against the known layouts of its size (every fixed byte equal: this checks
each header and its checksum), and the matching records are decoded column by column
(wall times, steps, values) without a Python object per value, each tag's points in
record order. The sweep stops at the first record of no known layout (a histogram, a
``SessionLog``, a first record of a new tag): the general decoder reads it and the sweep
goes on after it. The window swept grows while records match and shrinks at a stop, so
a file with many other records costs no more than its records.

The data checksums are verified in bulk too, each record's own: CRC32C is affine in
the data, so a record's checksum is the checksum of its layout's fixed bytes XOR, for
each variable byte ``j`` (a wall time, a step, a value: ~15 of a scalar record's ~55),
a table ``T_j`` indexed by that byte (``crc(fixed) ^ crc(fixed with byte j changed)``).
One table look-up per variable byte (two bytes at a time where they are adjacent) per
record, vectorized, gives every record's checksum, compared with the one it stores: a
corrupt record is found however many others are corrupted the same way (a check over
the XOR of many records' checksums would let two equal errors cancel). The sweep is
taken up to its first failing record, which the general decoder then skips and counts.

TensorBoard's purge rules hold here too: records of these layouts carry no
``SessionLog``; in a file older than ``brain.Event:2`` a sweep is taken only up to a
step that goes back (the general decoder purges there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .._tagseries import Columns
from ._tfrecord import MASK_DELTA, crc32c
from ._wire import Buf, fields, varint

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


#: the bytes swept at first after a stop, and at most
_MIN_WINDOW = 4 << 10
_MAX_WINDOW = 8 << 20
#: the last records' layouts a sweep hands on (twice the longest cycle looked for)
_TAIL = 128
#: the most layouts learnt for a folder
_MAX_LAYOUTS = 4096
#: an Event's first byte: its wall time (field 1, 64-bit)
_WALL_KEY = 0x09
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
    _crc: tuple[int, list[tuple[int, int, np.ndarray[Any, np.dtype[np.uint32]]]]] | None = None

    @property
    def key(self) -> tuple[bytes, bytes]:
        return self.fixed, self.mask

    def crc_tables(self) -> tuple[int, list[tuple[int, int, np.ndarray[Any, np.dtype[np.uint32]]]]]:
        """``(crc of the fixed data, [(offset, width, tables)])``: a record's data checksum
        is the first XOR ``tables[i][byte]`` for the ``i``-th byte of each run of
        ``width`` variable bytes at ``offset`` (built once)."""
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
            # a run of adjacent variable bytes (a wall time's eight, a value's four) is
            # read as one word, split into its bytes
            runs: list[tuple[int, int, np.ndarray[Any, np.dtype[np.uint32]]]] = []
            vb = self.varbytes
            i = 0
            while i < len(vb):
                width = 1
                while width < 8 and i + width < len(vb) and vb[i + width] == vb[i] + width:
                    width += 1
                runs.append((vb[i], width, tables[i : i + width]))
                i += width
            self._crc = (base, runs)
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
    if len(parts) == 3 and parts[1][:2] == (2, 2) and parts[1][3] == parts[1][2]:
        del parts[1]  # a shape with no dimensions (torch's new_style writes none at all)
    if len(parts) != 2 or parts[0][:2] != (1, 0):
        return None
    dtype = varint(buf, parts[0][2])[0]
    num, wire, s, e = parts[1]
    width = {_DT_FLOAT: 4, _DT_DOUBLE: 8}.get(dtype)
    if width is None or e - s != width:
        return None
    if (num, wire) in ((4, 2), (5, 2), (5, 5)) and width == 4:
        return tag, s, 4
    if (num, wire) in ((4, 2), (6, 2), (6, 1)) and width == 8:
        return tag, s, 8
    return None


class FastPath:
    """Learns layouts from the general decoder's records, then sweeps the records ahead
    that have them in bulk."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self.layouts: dict[tuple[bytes, bytes], int] = {}
        self.by_id: list[Layout] = []
        #: record size -> its layouts; the sizes in the order first seen, and each size's
        #: place in that list by size (-1: none)
        self.by_size: dict[int, _SizeGroup] = {}
        self.sizes: list[int] = []
        self.slots: Any = np.full(1, -1, np.int64)
        self.window = _MIN_WINDOW
        #: the layouts of the last records of the last sweep (a cycle may be in them)
        self.tail: list[Layout] = []

    def forget(self) -> None:
        """A record was skipped (the sweep needs nothing cleared: kept for the caller)."""
        self.window = _MIN_WINDOW

    def learn(self, buf: Buf, pos: int, length: int) -> Layout | None:
        """Note the layout of a record the general decoder has just read; that layout
        (None: not one the bulk path reads)."""
        try:
            lay = layout_of(self.folder, buf, pos, length)
        except (ValueError, IndexError):
            return None
        if lay is None or lay.fixed[12] != _WALL_KEY:
            return None
        lid = self.layouts.get(lay.key)
        if lid is not None:
            return self.by_id[lid]
        if len(self.by_id) >= _MAX_LAYOUTS:  # a file of endless new tags: the general path
            return None
        lid = self.layouts[lay.key] = len(self.by_id)
        self.by_id.append(lay)
        # the record as 64-bit words, the last one ending at its end (overlapping)
        offs = [*range(0, lay.size - 8, 8), lay.size - 8]
        fixed = np.array([int.from_bytes(lay.fixed[o : o + 8], "little") for o in offs], np.uint64)
        mask = np.array([int.from_bytes(lay.mask[o : o + 8], "little") for o in offs], np.uint64)
        known = self.by_size.get(lay.size)
        if known is None:
            self.by_size[lay.size] = known = _SizeGroup(len(self.sizes))
            self.sizes.append(lay.size)
            slots = np.full(max(self.sizes) + 1, -1, np.int64)
            slots[self.sizes] = np.arange(len(self.sizes))
            self.slots = slots
        known.add(lid, lay, fixed, mask)
        return lay

    # -- the sweep ----------------------------------------------------------------------
    def run(self, buf: Buf, pos: int, end: int) -> int:
        """Decode the records of known layouts from ``pos`` on, in one window; the
        position after them (:attr:`tail`: the layouts of the last ones)."""
        if end - pos < 17 or buf[pos + 12] != _WALL_KEY:
            return pos
        size = int.from_bytes(buf[pos : pos + 8], "little") + 16
        known = self.by_size.get(size)
        if known is None or pos + size > end or not known.knows(bytes(buf[pos : pos + size])):
            return pos  # the record here has no known layout: not worth a sweep
        stop = min(end, pos + self.window)
        a = _Window(buf, pos, stop - pos)
        starts, sizes = _chain(a)
        if not len(starts):
            self.window = _MIN_WINDOW
            return pos
        ids = self._classify(a, starts, sizes)
        unknown = np.flatnonzero(ids < 0)
        k = int(unknown[0]) if len(unknown) else len(ids)
        taken = self._take(a, starts[:k], ids[:k]) if k else 0
        self.folder.bulk_records += taken
        self.tail = [self.by_id[i] for i in ids[max(taken - _TAIL, 0) : taken].tolist()]
        if taken:
            pos += int(starts[taken - 1] + sizes[taken - 1])
        if taken < len(ids):  # a record the general decoder reads: start small after it
            self.window = _MIN_WINDOW
        else:
            self.window = min(self.window * 2, _MAX_WINDOW)
        return pos

    def _classify(self, a: _Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id (-1: none known)."""
        ids = np.full(len(starts), -1, np.int64)
        slots = self.slots
        slot = np.where(sizes < len(slots), slots[np.minimum(sizes, len(slots) - 1)], -1)
        for g, sel in _grouped(slot, len(self.sizes)):
            size = self.sizes[g]
            offs = np.array([*range(0, size - 8, 8), size - 8])
            words = a.u8[starts[sel][:, None] + offs]
            got = self.by_size[size].classify(words)
            ids[sel] = got
        return ids

    def _take(self, a: _Window, starts: Any, ids: Any) -> int:
        """Decode the records at ``starts`` (each of a known layout) up to the first whose
        data checksum fails, or, in an old file, whose step goes back; how many."""
        folder = self.folder
        k = len(starts)
        steps = np.zeros(k, np.int64)
        walls = np.zeros(k, np.float64)
        bad = np.zeros(k, bool)
        groups: list[tuple[Layout, Any, Any]] = []
        for lid, sel in _grouped(ids, len(self.by_id)):
            lay = self.by_id[lid]
            at = starts[sel]
            groups.append((lay, sel, at))
            if lay.step is not None:
                off, width = lay.step
                step = a.u1[at + off].astype(np.int64) & 0x7F
                for i in range(1, width):
                    step |= (a.u1[at + off + i].astype(np.int64) & 0x7F) << (7 * i)
                steps[sel] = step
            if lay.wall is not None:
                walls[sel] = a.f8[at + lay.wall]
            base, tables = lay.crc_tables()
            crc = np.full(len(sel), base, np.uint32)
            for off, width, table in tables:
                word = (a.u4 if width <= 4 else a.u8)[at + off].astype(np.intp)
                for i in range(width):
                    crc ^= table[i].take((word >> (8 * i)) & 0xFF)
            rot = a.u4[at + lay.size - 4] - np.uint32(MASK_DELTA)
            bad[sel] = crc != ((rot << np.uint32(15)) | (rot >> np.uint32(17)))
        cut = int(bad.argmax()) if bad.any() else k
        if not (folder.file_version and folder.file_version >= 2):  # the old purge rule
            before = np.empty(k, np.int64)
            before[0] = folder.most_recent_step
            before[1:] = steps[:-1]
            back = np.flatnonzero(steps < before)
            if len(back):
                cut = min(cut, int(back[0]))
            if cut:
                folder.most_recent_step = int(steps[cut - 1])
        if cut:
            self._hand_over(a, groups, cut, steps, walls)
        return cut

    def _hand_over(
        self, a: _Window, groups: list[tuple[Layout, Any, Any]], cut: int, steps: Any, walls: Any
    ) -> None:
        """Each tag's points of the first ``cut`` records, in record order."""
        folder = self.folder
        prefix = folder.prefix
        wanted = folder.tags
        parts: dict[str, list[tuple[Any, Any]]] = {}
        for lay, sel, at in groups:
            n = int(np.searchsorted(sel, cut))
            if not n:
                continue
            for tag, off, width in lay.values:
                name = prefix + tag
                if wanted is not None and name not in wanted:
                    continue
                value = (a.f4 if width == 4 else a.f8)[at[:n] + off].astype(np.float64)
                parts.setdefault(name, []).append((sel[:n], value))
        for name, got in parts.items():
            if len(got) == 1:
                where, value = got[0]
            else:  # the tag in several layouts (a step's varint grew): back in record order
                where = np.concatenate([w for w, _ in got])
                order = np.argsort(where, kind="stable")
                where = where[order]
                value = np.concatenate([v for _, v in got])[order]
            folder.block(name, (steps[where], walls[where], value))


class _SizeGroup:
    """The layouts of one record size, as 64-bit words (the last one ending at the
    record's end), and how a record is told to be one of them: a hash of the bytes fixed
    in all of them names one, then the whole record is checked against it."""

    def __init__(self, slot: int) -> None:
        self.slot = slot
        #: mask -> the fixed bytes under it, as whole-record integers (one record checked
        #: in Python before a sweep is started on it)
        self.exact: dict[int, set[int]] = {}
        self.n = 0
        self.lids: Any = np.empty(0, np.int64)
        self.fixeds: Any = None
        self.masks: Any = None
        #: the bytes fixed in all of them, each layout's hash of those (sorted), their
        #: rows, and whether the hashes differ
        self.common: Any = None
        self.mult: Any = None
        self.keys: Any = None
        self.order: Any = None
        self.hashed = True

    def add(self, lid: int, lay: Layout, fixed: Any, mask: Any) -> None:
        m = int.from_bytes(lay.mask, "little")
        self.exact.setdefault(m, set()).add(int.from_bytes(lay.fixed, "little") & m)
        n = self.n
        if self.fixeds is None:
            self.fixeds = np.empty((8, len(fixed)), np.uint64)
            self.masks = np.empty_like(self.fixeds)
            self.lids = np.empty(8, np.int64)
            self.common = mask.copy()
            spread = np.arange(len(fixed), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C16)
            self.mult = spread | np.uint64(1)  # odd multipliers
        elif n == len(self.lids):  # room for twice as many, so that adding costs O(1)
            self.fixeds = np.vstack([self.fixeds, np.empty_like(self.fixeds)])
            self.masks = np.vstack([self.masks, np.empty_like(self.masks)])
            self.lids = np.concatenate([self.lids, np.empty_like(self.lids)])
        self.fixeds[n], self.masks[n], self.lids[n] = fixed, mask, lid
        self.n = n + 1
        common = self.common & mask
        if n == 0 or (common != self.common).any():  # the hashed bytes changed: all again
            self.common = common
            keys = self._hash(self.fixeds[: n + 1])
            self.order = np.argsort(keys)
            self.keys = keys[self.order]
            self.hashed = len(np.unique(keys)) == len(keys)
            return
        key = self._hash(fixed[None, :])
        at = int(np.searchsorted(self.keys, key[0]))
        self.hashed = self.hashed and (at == len(self.keys) or bool(self.keys[at] != key[0]))
        self.keys = np.insert(self.keys, at, key[0])
        self.order = np.insert(self.order, at, n)

    def knows(self, record: bytes) -> bool:
        """Whether ``record`` (its bytes) has one of these layouts."""
        value = int.from_bytes(record, "little")
        return any((value & m) in fixed for m, fixed in self.exact.items())

    def _hash(self, words: Any) -> Any:
        return ((words & self.common) * self.mult).sum(axis=1, dtype=np.uint64)

    def classify(self, words: Any) -> Any:
        """Each row's layout id (-1: none)."""
        if self.n == 1:
            match = ((words & self.masks[0]) == self.fixeds[0]).all(axis=1)
            return np.where(match, self.lids[0], -1)
        if not self.hashed:  # two layouts' keys alike (rare): each layout in turn
            ids = np.full(len(words), -1, np.int64)
            for i in range(self.n):
                ids[((words & self.masks[i]) == self.fixeds[i]).all(axis=1)] = self.lids[i]
            return ids
        key = self._hash(words)
        at = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        row = self.order[at]
        match = (self.keys[at] == key) & ((words & self.masks[row]) == self.fixeds[row]).all(axis=1)
        return np.where(match, self.lids[row], -1)


def _grouped(keys: Any, n: int) -> list[tuple[int, Any]]:
    """``(key, the positions holding it, in order)`` for each key in ``range(n)`` that
    ``keys`` holds (other keys left out)."""
    inside = (keys >= 0) & (keys < n)
    if not inside.all():
        where = np.flatnonzero(inside)
        return [(k, where[sel]) for k, sel in _grouped(keys[where], n)]
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=n)
    out = []
    at = 0
    for k in np.flatnonzero(counts).tolist():
        c = int(counts[k])
        out.append((k, order[at : at + c]))
        at += c
    return out


class _Window:
    """Bytes of a buffer seen as numbers of each width starting at every byte (views with
    a stride of one: a gather of whole fields, not of their bytes one by one)."""

    def __init__(self, buf: Buf, pos: int, n: int) -> None:
        self.n = n

        def at_every_byte(dtype: str) -> Any:
            width = np.dtype(dtype).itemsize
            count = max(n - width + 1, 0)
            return np.ndarray((count,), dtype, buffer=buf, offset=pos, strides=(1,))

        self.u1 = at_every_byte("u1")
        self.u2 = at_every_byte("<u2")
        self.u4 = at_every_byte("<u4")
        self.u8 = at_every_byte("<u8")
        self.f4 = at_every_byte("<f4")
        self.f8 = at_every_byte("<f8")


def _chain(a: _Window) -> tuple[Any, Any]:
    """``(starts, sizes)`` of the whole records at the start of ``a`` whose data begins
    with an ``Event``'s wall time, each found from the one before by its length."""
    n = a.n
    if n < 17 or a.u1[12] != _WALL_KEY:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    cand = np.flatnonzero(a.u1[12:] == _WALL_KEY)
    head = a.u8[cand]
    fits = head <= n
    nxt = cand + 16 + np.where(fits, head, 0).astype(np.int64)
    fits &= nxt <= n
    cand, nxt = cand[fits], nxt[fits]
    if not len(cand) or cand[0] != 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    j = np.searchsorted(cand, nxt)
    found = j < len(cand)
    found[found] = cand[j[found]] == nxt[found]
    # a record whose next is not the next candidate: a byte 0x09 inside a record (rare)
    bad = np.flatnonzero(~(found & (j == np.arange(1, len(cand) + 1))))
    pieces = []
    i = 0
    while True:
        b = int(bad[np.searchsorted(bad, i)])  # the last candidate is always one
        pieces.append(np.arange(i, b + 1))
        if not found[b]:
            break
        i = int(j[b])
    idx = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    starts = cand[idx]
    return starts, nxt[idx] - starts
