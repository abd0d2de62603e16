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
is told its layout among the known ones of its size (a hash of the bytes fixed in all of
them; where a file has many sizes, every size at once, from the buffer's aligned words:
``_Flat``), and the records are decoded by *shape* (the layouts alike but for their fixed
bytes, a tag's name: the same variable fields at the same offsets), column by column
(wall times, steps, values, checksums) without a Python object per value; each tag's
points are handed over in record order. A record of no known layout (a histogram, a
first record of a new tag) is decoded in its place in the window, one by one, and its
layout learnt, so that the records of that layout after it are read in bulk (the
window's rest is classified again once a few are found); the sweep stops only where the
general decoder must read on: a checksum that fails, a ``SessionLog`` or a file version
(they change how what follows is read), or, in a file older than ``brain.Event:2``, any
record of no known layout (its purge rule follows every step). A read in a process that
read the file before (or another run of its client) knows which layouts come next from
the ones it knows (``_Ahead``): their first records are checked and their layouts learnt
in their place, not decoded, in file order as before (the layout and tag ids, and so
the frame's order of tags, are the same).

The data checksums are verified in bulk too, each record's own: CRC32C is affine in
the data, so a record's checksum is the checksum of its layout's fixed bytes XOR, for
each variable byte ``j`` (a wall time, a step, a value: ~15 of a scalar record's ~55),
a table ``T_j`` indexed by that byte (``crc(fixed) ^ crc(fixed with byte j changed)``).
One table look-up per variable byte per record, the bytes of a group of records
gathered at once (``_evcrc``), gives every record's checksum, compared with the one it
stores: a corrupt record is found however many others are corrupted the same way (a
check over the XOR of many records' checksums would let two equal errors cancel). The sweep is
taken up to its first failing record, which the general decoder then skips and counts.
The tables of a byte depend only on its distance from the data's end and the fixed bits
under it, so a shape's layouts share them, each layout adding the checksum of its own
fixed bytes. Every byte a record's layout fixes is compared (a hash of them, or the
layout whole): a record corrupted in one would otherwise pass, its checksum taken from
the layout's bytes, not its own.

Two kinds of layouts cut the Python work per tag. A file of many tags, each appearing
rarely (a metric per environment), would learn a layout per tag: once 64 tags are seen, a
sweep's one-value record of no known layout is learnt as the layout of *any* tag of its
tag's length (its tag bytes variable too); its records' tags are read as slices, told
apart in bulk per distinct tag, and each distinct tag's bytes' share of the checksum is
taken once (a tensor's tag must be known as a ``scalars`` one: the record of a tag not
yet known is read in its place, its metadata decides). And the one-value layouts of one
tag each whose wall time and step come first (torch's, tensorboardX's and SB3's writers)
are decoded together by their value's distance from the record's end, whatever their
tags' lengths (``_Tail``): the wall time's and step's share of the checksum is looked up
by each record's size, so CleanRL's eleven tags cost three groups of NumPy calls, not
thirty-three.

TensorBoard's purge rules hold here too: records of these layouts carry no
``SessionLog``; in a file older than ``brain.Event:2`` a sweep is taken only up to a
step that goes back (the general decoder purges there).
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .._tagseries import Columns
from ._evcrc import byte_tables, flat_rows, masked, shares
from ._tfrecord import MASK_DELTA, crc32c, masked_crc32c
from ._value import plugin_name
from ._wire import F32, F64, U32S, Buf, fields, varint

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

    def open_series(self, tag: str) -> None: ...

    def summary_values(self, buf: Buf, start: int, end: int) -> list[tuple[str, float | None]]: ...


#: the bytes swept at first after a stop, at first in a file (a record of no known
#: layout is read in its place, so a bigger window wastes nothing; not so big that a
#: regular file's sweep keeps its records from the faster cycle path), and at most
_MIN_WINDOW = 4 << 10
_FIRST_WINDOW = 64 << 10
_MAX_WINDOW = 8 << 20
#: the fewest bytes swept: a sweep's fixed cost (~40 NumPy calls) is that of decoding
#: ~10 records one by one, which the general decoder does with fewer bytes left
_MIN_SWEEP = 1 << 10
#: the last records' layouts a sweep hands on (twice the longest cycle looked for)
_TAIL = 128
#: records of a window found one by one to have a layout learnt in it (at least, and at
#: least a sixty-fourth of those left), after which the rest is classified again in bulk
#: (a look-up in Python costs ~3 us a record; classifying a window's rest, column-major,
#: ~50 us and ~0.1 us a record)
_RECLASSIFY = 8
#: the most layouts learnt for a folder
_MAX_LAYOUTS = 4096
#: tags seen, after which the sweeps' points are kept to the buffer's end and handed over
#: at once (``FastPath.flush``: one block a tag, not one a tag a window); with fewer, a
#: window's points are handed over as it is read (keeping them costs a few more passes)
_KEEP_AFTER = 64
#: the most points kept (32 bytes each, and as much again as they are handed over): more,
#: and a read's temporaries outgrow the heap that ``_heapkept`` keeps for the next read
#: (a read of an 88 MB file of many rare tags, kept a 32 MiB buffer's worth: 2.2x its
#: page faults)
_KEEP_MOST = 1 << 18
#: tags seen, after which a sweep's record of no known layout is learnt as the layout of
#: any tag of its tag's length (a file of many tags, each rare); fewer are learnt one
#: layout per tag, which the cycle path can follow (a file that repeats its tags in order)
_ANY_TAG_AFTER = 64
#: where a window of at least ``_ANY_FIRST_AFTER`` records has fewer of a layout of one tag
#: than ``_ANY_FIRST_SHARE`` of those of a layout of any tag, the next windows are told
#: the layouts of any tag first (``FastPath._classify``)
_ANY_FIRST_AFTER = 1024
_ANY_FIRST_SHARE = 1 / 8
#: an Event's first byte: its wall time (field 1, 64-bit)
_WALL_KEY = 0x09
_DT_FLOAT, _DT_DOUBLE = 1, 2
#: a ``Summary.Value``'s ``simple_value`` key (field 2, 32-bit)
_SIMPLE_VALUE_KEY = 0x15


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
    #: each value's tag bytes: offset, length
    names: tuple[tuple[int, int], ...] = ()
    #: a layout of any tag (see :meth:`any_tag`): where the record holds its tag's bytes
    tag_at: tuple[int, int] | None = None
    _crc: tuple[int, list[tuple[int, int, np.ndarray[Any, np.dtype[np.uint32]]]]] | None = None
    #: made once when first asked (see :meth:`words`, :meth:`any_tag`)
    _words: tuple[Any, Any] | None = field(default=None, compare=False, repr=False)
    _any: Layout | None = field(default=None, compare=False, repr=False)
    #: what ``FastPath`` files a layout under (see :meth:`facts`), made once
    _facts: tuple[Any, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[bytes, bytes]:
        return self.fixed, self.mask

    def words(self) -> tuple[Any, Any]:
        """The fixed bytes and the mask as 64-bit words, the last one ending at the
        record's end (overlapping): how ``_Index`` compares and hashes records."""
        if self._words is None:
            offs = [*range(0, self.size - 8, 8), self.size - 8]
            self._words = tuple(  # type: ignore[assignment]
                np.array([int.from_bytes(b[o : o + 8], "little") for o in offs], np.uint64)
                for b in (self.fixed, self.mask)
            )
        assert self._words is not None
        return self._words

    def facts(self) -> tuple[Any, ...]:
        """``(its tail's key or None, its shape's key, whether its value is a simple one,
        the CRC32C of its fixed data)``, made once (a read learns each of its file's
        layouts again: these were a third of that)."""
        if self._facts is None:
            self._facts = (_Tail.key(self), _Shape.key(self), _simple(self), self.base())
        return self._facts

    def any_tag(self) -> Layout:
        """This one-value layout with its tag's bytes variable (see :meth:`_any_tag`),
        made once."""
        if self._any is None:
            self._any = self._any_tag()
        return self._any

    def _any_tag(self) -> Layout:
        """This one-value layout with its tag's bytes variable: the records of every tag
        of the same length alike but for it, learnt once (a file of many tags each
        appearing rarely learns a layout per tag length, not per tag). Its records' tags
        are read as slices; their bytes' share of the data checksum is taken per tag."""
        (at, length), fixed, mask = self.names[0], bytearray(self.fixed), bytearray(self.mask)
        fixed[at : at + length] = mask[at : at + length] = bytes(length)
        values = [("", off, width) for _tag, off, width in self.values]
        return Layout(self.size, bytes(fixed), bytes(mask), self.wall, self.step, values,
                      self.varbytes, self.names, (at, length))  # fmt: skip

    def base(self) -> int:
        """The CRC32C of the data's fixed bytes (its variable bytes zeroed)."""
        return crc32c(self.fixed[12 : self.size - 4])

    def crc_tables(self) -> tuple[int, list[tuple[int, int, np.ndarray[Any, np.dtype[np.uint32]]]]]:
        """``(crc of the fixed data, [(offset, width, tables)])``: a record's data checksum
        is the first XOR ``tables[i][byte]`` for the ``i``-th byte of each run of
        ``width`` variable bytes at ``offset`` (built once a process: the next read of
        a file, or of another run its client wrote, meets the same layouts)."""
        if self._crc is None:
            key = (self.fixed, self.mask, self.varbytes)
            self._crc = _CRC_TABLES.get(key)
        if self._crc is None:
            data = self.fixed[12 : self.size - 4]
            tables = byte_tables(
                [len(data) - (off - 12) - 1 for off in self.varbytes],
                [data[off - 12] for off in self.varbytes],
            )
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
            base = crc32c(data)
            self._crc = (base, runs)
            if len(_CRC_TABLES) >= _MAX_LAYOUTS:
                _CRC_TABLES.clear()
            _CRC_TABLES[key] = self._crc
        return self._crc


#: each layout's checksum tables (``Layout.crc_tables``) by its fixed bytes, mask and
#: variable bytes: learnt layouts recur across reads and runs (a client writes the same
#: tags in every run), and building them was ~a quarter of reading an SB3 file of MBs
_CRC_TABLES: dict[
    tuple[bytes, bytes, tuple[int, ...]],
    tuple[int, list[tuple[int, int, np.ndarray[Any, np.dtype[np.uint32]]]]],
] = {}


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
    names: list[tuple[int, int]] = []
    for num, wire, s, e in fields(buf, *summary):
        if num != 1 or wire != 2:
            return None
        got = _value(folder, buf, s, e)
        if got is None:
            return None
        tag, at, width, name = got
        values.append((tag, at - pos, width))
        names.append((name[0] - pos, name[1] - name[0]))
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
    return Layout(size, bytes(fixed), bytes(mask), wall, step, values, varbytes, tuple(names))


#: the layouts met in this process, by record size, mask and fixed bytes (as integers of
#: the whole record): a file's layouts recur in its next read and in its client's other
#: runs, and telling a record's layout from its bytes costs far less than parsing it
_LAYOUTS: dict[int, dict[int, dict[int, Layout]]] = {}
_LAYOUT_COUNT = [0]


def _known(folder: Folder, buf: Buf, pos: int, length: int) -> Layout | None:
    """``layout_of``, from the layouts met before where one is the record's (a tensor's
    layout only where its tag is known to the folder as a ``scalars`` one, as
    ``layout_of`` asks)."""
    size = 16 + length
    by_mask = _LAYOUTS.get(size)
    if by_mask is not None:
        value = int.from_bytes(buf[pos : pos + size], "little")
        for mask, fixed in tuple(by_mask.items()):  # (another thread may add one)
            lay = fixed.get(value & mask)
            if lay is not None and all(
                (width == 4 and lay.fixed[off - 1] == _SIMPLE_VALUE_KEY)
                or folder.plugins.get(tag) == "scalars"
                for tag, off, width in lay.values
            ):
                return lay
    lay = layout_of(folder, buf, pos, length)
    if lay is not None:
        if _LAYOUT_COUNT[0] >= _MAX_LAYOUTS:
            _LAYOUTS.clear()
            _LAYOUT_COUNT[0] = 0
        mask = int.from_bytes(lay.mask, "little")
        by = _LAYOUTS.setdefault(size, {}).setdefault(mask, {})
        by[int.from_bytes(lay.fixed, "little") & mask] = lay
        _LAYOUT_COUNT[0] += 1
    return lay


#: the shapes and tails made in this process (each made from its key alone, or from the
#: first layout of its key, as a read makes it): a read that meets them again reuses them
_SHAPES: dict[Any, Any] = {}
_TAILS: dict[Any, Any] = {}


def _made(cache: dict[Any, Any], key: Any, make: Any, arg: Any, most: int = 0) -> Any:
    """``cache[key]``, made by ``make(arg)`` the first time; at most ``most`` kept
    (``_MAX_LAYOUTS`` where 0), all forgotten once that many are."""
    got = cache.get(key)
    if got is None:
        if len(cache) >= (most or _MAX_LAYOUTS):
            cache.clear()
        got = cache[key] = make(arg)
    return got


def _value(
    folder: Folder, buf: Buf, start: int, end: int
) -> tuple[str, int, int, tuple[int, int]] | None:
    """``(tag, offset of its number, 4 | 8, its tag's bytes)`` of a ``Summary.Value``
    that is a scalar of a fixed layout: a ``simple_value``, or a one-number tensor of a
    tag whose first metadata named the ``scalars`` plugin."""
    parts = fields(buf, start, end)
    if len(parts) < 2 or parts[0][:2] != (1, 2) or parts[0][3] == parts[0][2]:
        return None
    name = parts[0][2], parts[0][3]
    tag = buf[name[0] : name[1]].decode("utf-8", "replace")
    if parts[1][:2] == (2, 5) and all(q[:2] == (9, 2) for q in parts[2:]):
        return tag, parts[1][2], 4, name  # a simple_value (its metadata, if any, is fixed)
    rest = parts[1:]
    if rest[-1][:2] == (9, 2):  # metadata: the first one of a tag decides (as TensorBoard)
        if tag not in folder.plugins:
            return None
        rest = rest[:-1]
    if len(rest) != 1 or rest[0][:2] != (8, 2) or folder.plugins.get(tag) != "scalars":
        return None
    got = _tensor_number(buf, rest[0][2], rest[0][3])
    return None if got is None else (tag, *got, name)


def _tensor_number(buf: Buf, start: int, end: int) -> tuple[int, int] | None:
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
        return s, 4
    if (num, wire) in ((4, 2), (6, 2), (6, 1)) and width == 8:
        return s, 8
    return None


#: record offsets below which ``_padded_rows`` has rows of zeros (a tail's head bytes lie
#: at 13..29)
_PAD = 40
_PADDED: list[Any] = [np.zeros(0, np.uint32)]


def _padded_rows(after: int) -> Any:
    """``flat_rows`` (rows ``0..after`` at least) after ``_PAD`` rows of zeros: a byte at
    record offset ``o`` of a record of ``size`` bytes has its row at ``size * 256`` of the
    table from ``(_PAD - o - 5) * 256`` (one add an element, not three)."""
    flat = flat_rows(after)
    padded = _PADDED[0]
    if len(padded) != len(flat) + _PAD * 256:
        padded = _PADDED[0] = np.concatenate([np.zeros(_PAD * 256, np.uint32), flat])
    return padded


class _Tail:
    """One-value layouts of one tag each, the wall time and the step where torch's,
    tensorboardX's and SB3's writers put them (the first fields), the value at one
    distance from the record's end: their records are decoded together whatever the
    length of their tags (CleanRL's eleven tags are three of these, one per step width,
    not thirty-three shapes). Each byte's share of the data checksum is looked up in
    ``_padded_rows`` (the wall time's and the step's by each record's size; a byte alike in
    every record once a size)."""

    WALL, STEP = 13, 22

    def __init__(self, key: tuple[int, int, int]) -> None:
        self.step_width, self.value_end, self.width = key
        #: the wall time's and the step's bytes (record offsets)
        self.head = np.asarray(
            [*range(self.WALL, self.WALL + 8), *range(self.STEP, self.STEP + self.step_width)],
            np.intp,
        )
        #: where each head byte's and each value byte's table starts in ``_padded_rows``
        #: (a value byte at ``size - value_end + i`` has ``value_end - i - 5`` data bytes
        #: after it: the data ends 4 bytes before the record)
        self.head_base = ((_PAD - self.head - 5) * 256).astype(np.intp)
        #: the step's fixed continuation bits (each byte but its last): their share of the
        #: checksum, as ``_padded_rows`` places (by record size, from there)
        self.head_fixed_at = [int(self.head_base[8 + i]) + 0x80 for i in range(self.step_width - 1)]
        self.value_base = [(_PAD + self.value_end - i - 5) * 256 for i in range(self.width)]

    @staticmethod
    def key(lay: Layout, any_tag: bool = False) -> tuple[int, int, int] | None:
        """``(step width, value's distance from the end, value width)``; None: not one.
        ``any_tag``: of a layout of any tag (its tag's bytes, variable, are not among
        its variable bytes: their share of the checksum is taken per tag)."""
        if len(lay.values) != 1 or (lay.tag_at is not None) != any_tag or lay.step is None:
            return None
        (_tag, off, width), (step, step_width) = lay.values[0], lay.step
        if lay.wall != _Tail.WALL or step != _Tail.STEP or step_width > 8:
            return None
        want = [*range(13, 21), *range(22, 22 + step_width), *range(off, off + width)]
        if sorted(lay.varbytes) != want:
            return None
        return step_width, lay.size - off, width

    def take(self, a: _Window, at: Any, sizes: Any, base: Any) -> tuple[Any, Any, Any, Any]:
        """``(steps, wall times, values, whether each record's data checksum fails)``.

        The checksum's bytes are read from the fields as gathered (the wall times, the
        step's word, the values, each seen as rows of bytes), not gathered again a byte
        at a time (that was ~a quarter of this)."""
        word = (a.u4 if self.step_width <= 4 else a.u8)[at + self.STEP]
        steps = _varint_words(word, self.step_width)
        walls = a.f8[at + self.WALL]
        values = (a.f4 if self.width == 4 else a.f8)[at + sizes - self.value_end]
        top = int(sizes.max())
        rows = _padded_rows(top)
        at_size = sizes.astype(np.intp, copy=False) << 8
        crc = base.copy()
        # a byte alike in every record (a wall time's high bytes, the step's), and a step
        # byte's fixed continuation bit: a share of the checksum that differs only by the
        # record's size, looked up once a size (of every size up to the longest), not once
        # a record (a byte's share is linear in it: the share of ``b ^ 0x80`` is that of
        # ``b`` XOR that of ``0x80``)
        once = list(self.head_fixed_at)
        head = 0
        for column, width in ((walls, 8), (word, self.step_width)):
            got, first, varies = _byte_rows(column, width)
            for i in range(width):
                if varies[i]:  # (a row at a time: no index array of every row)
                    crc ^= rows[self.head_base[head + i] :].take(np.add(got[i], at_size))
                else:
                    once.append(int(self.head_base[head + i]) + first[i])
            head += width
        if once:
            index = np.arange(0, (top + 1) * 256, 256, dtype=np.intp)
            index = index + np.asarray(once, np.intp)[:, None]
            crc ^= np.bitwise_xor.reduce(rows.take(index), axis=0)[sizes]
        got, first, varies = _byte_rows(values, self.width)
        for i in range(self.width):
            table = rows[self.value_base[i] : self.value_base[i] + 256]
            crc ^= table.take(got[i]) if varies[i] else table[first[i]]
        return steps, walls, values, masked(crc) != a.u4[at + sizes - 4]


def _byte_rows(field: Any, width: int) -> tuple[Any, list[int], list[bool]]:
    """The first ``width`` bytes of each of ``field``'s numbers (4 or 8 bytes each,
    little-endian) as rows, a column a number (a view: no copy); the first number's bytes;
    and whether each byte varies among them."""
    size = field.dtype.itemsize
    words = field.view("<u4" if size == 4 else "<u8")
    diff = int(np.bitwise_or.reduce(words ^ words[0]))
    first = int(words[0])
    got = field.view(np.uint8).reshape(-1, size).T
    return (
        got,
        [(first >> (8 * i)) & 0xFF for i in range(width)],
        [(diff >> (8 * i)) & 0xFF != 0 for i in range(width)],
    )


def _simple(lay: Layout) -> bool:
    """Whether a one-value layout's value is a ``simple_value`` (else a tensor's number:
    the byte before it is a length, 4 or 8, or a packed field's key)."""
    _tag, off, width = lay.values[0]
    return width == 4 and lay.fixed[off - 1] == _SIMPLE_VALUE_KEY


def _plain(lay: Layout) -> bool:
    """Whether a layout of one tag holds only ``simple_value`` values without metadata:
    its records' points are all a record says (no plugin of a tag to note)."""
    if lay.tag_at is not None or lay.fixed[12] != _WALL_KEY:
        return False
    if not all(w == 4 and lay.fixed[off - 1] == _SIMPLE_VALUE_KEY for _t, off, w in lay.values):
        return False
    for num, wire, s, e in fields(lay.fixed, 12, lay.size - 4):
        if num == 5 and wire == 2:
            for _n1, _w1, s1, e1 in fields(lay.fixed, s, e):
                if any(n2 == 9 for n2, _w2, _s2, _e2 in fields(lay.fixed, s1, e1)):
                    return False
    return True


class _Shape:
    """The layouts alike but for their fixed bytes (a tag's name, its checksums): one
    record size, the same variable fields at the same offsets. Their records are decoded
    together; a record's data checksum is its layout's base XOR this shape's tables (a
    variable byte's effect on CRC32C depends only on its distance from the data's end and
    on the fixed bits under it, the same in every layout of the shape)."""

    def __init__(self, lay: Layout) -> None:
        self.size = lay.size
        self.wall = lay.wall
        self.step = lay.step
        self.slots = [(off, width) for _tag, off, width in lay.values]
        self._first = lay
        self._crc: tuple[Any, Any, Any] | None = None
        #: a layout of any tag: its tag's bytes (offset, length), each byte's checksum
        #: table (against a zero byte), and whether its value is a tensor (a tag's first
        #: metadata must have named the ``scalars`` plugin)
        self.tag_at = lay.tag_at
        self.tag_tables: Any = None
        self.tensor = False
        #: a layout of any tag whose wall time, step and value lie where a ``_Tail``'s
        #: do: its records' columns and checksums read as that tail reads them (the
        #: fields as gathered, a byte alike in every record once), not byte by byte
        self.tail: _Tail | None = None
        if lay.tag_at is not None:
            tail = _Tail.key(lay, any_tag=True)
            self.tail = None if tail is None else _made(_TAILS, tail, _Tail, tail)
            at, length = lay.tag_at
            data = lay.size - 16
            self.tag_tables = byte_tables(
                [data - (at + i - 12) - 1 for i in range(length)], [0] * length
            )
            self.tensor = not _simple(lay)

    def crc(self) -> tuple[Any, Any, Any]:
        """Each variable byte's offset, its checksum table (flat), and its table's place;
        built when first needed (the layouts a tail decodes never need them)."""
        if self._crc is None:
            runs = self._first.crc_tables()[1]
            cols = np.asarray([off + i for off, w, _t in runs for i in range(w)], np.intp)
            tables = [t[i] for _off, w, t in runs for i in range(w)]
            flat = np.concatenate(tables) if tables else np.zeros(0, np.uint32)
            self._crc = cols, flat, (np.arange(len(tables)) * 256).astype(np.intp)
        return self._crc

    @staticmethod
    def key(lay: Layout) -> tuple[Any, ...]:
        values = tuple((o, w) for _t, o, w in lay.values)
        return (lay.size, lay.wall, lay.step, values, lay.tag_at)


class FastPath:
    """Learns layouts from the general decoder's records, then sweeps the records ahead
    that have them in bulk."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self.layouts: dict[tuple[bytes, bytes], int] = {}
        self.by_id: list[Layout] = []
        #: the layouts of one tag each (the cycle path's too), and those of any tag (told
        #: a record only where none of the first is its own)
        self.exact = _Index(numbered=True)
        self.any_tag = _Index(every_size=True)
        #: (a record's tag bytes, whether its value is a tensor) -> (its tag id, True)
        self.tag_bytes: dict[tuple[bytes, bool], tuple[int, bool]] = {}
        #: per tensor layout of any tag: whether it holds metadata, and its plugin's name
        self.lid_plugin: dict[int, tuple[bool, str | None]] = {}
        #: per shape of any tag, the tags met in its records (``_KnownTags``)
        self.known_tags: dict[_Shape, _KnownTags] = {}
        #: the shapes, and per layout id: its shape, its checksum's base, its values' tags
        self.shape_ids: dict[tuple[Any, ...], int] = {}
        self.shapes: list[_Shape] = []
        self.lid_shape: Any = np.empty(0, np.int64)
        self.lid_base: Any = np.empty(0, np.uint32)
        self.lid_tags: Any = np.empty((0, 1), np.int64)
        self.lid_any: Any = np.empty(0, bool)
        self.lid_tensor: Any = np.empty(0, bool)  # of any tag, a tensor
        #: the tails (``_Tail``), and each layout's (-1: none)
        self.tail_ids: dict[tuple[int, int, int], int] = {}
        self.tails: list[_Tail] = []
        self.lid_tail: Any = np.empty(0, np.int64)
        #: the tags (their prefix in front) by id, and whether each is wanted
        self.tag_ids: dict[str, int] = {}
        self.tag_names: list[str] = []
        self.tag_wanted: Any = np.empty(0, bool)
        self.window = _FIRST_WINDOW
        #: the layouts known (as ``_FORESEEN`` is keyed) when the general decoder began to
        #: read records of layouts the sweeps did not know, since the last sweep (None:
        #: it did not, or not where :meth:`_foreseeable`)
        self.unswept: _Known | None = None
        self.gap = False
        #: the layouts of the last records of the last sweep (a cycle may be in them)
        self.tail: list[Layout] = []
        #: the sweeps' points not handed over yet (see :meth:`flush`): each window's tag
        #: ids, steps, wall times and values, in record order; and whether each tag's
        #: series is known to be open in the folder
        self.pending: list[tuple[Any, Any, Any, Any]] = []
        self.pending_points = 0
        self.tag_open: Any = np.zeros(0, bool)
        #: whether a window's records are told the layouts of any tag first, then those
        #: of one tag each (see :meth:`_classify`)
        self.any_first = False
        #: the window's records' tags (-1: not told) and their shares of the checksum, as
        #: :meth:`_classify` told the tensors of layouts of any tag (None: none told), and
        #: how many records the window has
        self.told: tuple[Any, Any] | None = None
        self.records = 0

    def forget(self) -> None:
        """A record was skipped: the next sweep starts small."""
        self.window = _MIN_WINDOW

    def learn(self, buf: Buf, pos: int, length: int, any_tag: bool = False) -> Layout | None:
        """Note the layout of a record the general decoder has just read; that layout
        (None: not one the bulk path reads). ``any_tag``: a record of one value with no
        metadata is learnt as the layout of any tag of its tag's length (a sweep's record
        of no known layout: one of many tags, each rare, costs one layout, not one each)."""
        try:
            lay = _known(self.folder, buf, pos, length)
        except (ValueError, IndexError):
            return None
        if lay is None or lay.fixed[12] != _WALL_KEY:
            return None
        index = self.exact
        if (
            any_tag
            and len(lay.values) == 1
            and (not _simple(lay) or lay.values[0][1] + lay.values[0][2] == lay.size - 4)
        ):  # a tensor (its metadata fixed bytes) or a simple value of no metadata
            lay, index = lay.any_tag(), self.any_tag
        lid = self._register(lay, index)
        return None if lid < 0 else self.by_id[lid]

    def _add(self, ahead: _Ahead, slot: int) -> int:
        """Learn ``ahead``'s layout ``slot`` as :meth:`learn` learns it from a record of
        it (its first in a window, read in its place): its id (-1: not learnt)."""
        return self._register(ahead.layouts[slot], self.exact)

    def _register(self, lay: Layout, index: _Index) -> int:
        """Layout ``lay``'s id, learnt into ``index`` where it is new (-1: a file of
        endless new layouts, past the most learnt: the general path reads on)."""
        lid = self.layouts.get(lay.key)
        if lid is not None:
            return lid
        if len(self.by_id) >= _MAX_LAYOUTS:
            return -1
        lid = self.layouts[lay.key] = len(self.by_id)
        self.by_id.append(lay)
        self._index(lid, lay)
        index.add(lid, lay)
        return lid

    def _index(self, lid: int, lay: Layout) -> None:
        """Layout ``lid``'s shape, checksum base and tags into the per-layout arrays."""
        tail, key, simple, base = lay.facts()
        sid = self.shape_ids.get(key)
        if sid is None:
            sid = self.shape_ids[key] = len(self.shapes)
            self.shapes.append(_made(_SHAPES, (key, simple), _Shape, lay))
        if lid >= len(self.lid_shape):  # room for twice as many
            cap = max(2 * len(self.lid_shape), 64)
            self.lid_shape = np.resize(self.lid_shape, cap)
            self.lid_base = np.resize(self.lid_base, cap)
            self.lid_any = np.resize(self.lid_any, cap)
            self.lid_tensor = np.resize(self.lid_tensor, cap)
            self.lid_tail = np.resize(self.lid_tail, cap)
            self.lid_tags = np.resize(self.lid_tags, (cap, self.lid_tags.shape[1]))
        if len(lay.values) > self.lid_tags.shape[1]:
            wider = np.full((len(self.lid_tags), len(lay.values)), -1, np.int64)
            wider[:, : self.lid_tags.shape[1]] = self.lid_tags
            self.lid_tags = wider
        self.lid_shape[lid] = sid
        self.lid_base[lid] = base
        self.lid_any[lid] = lay.tag_at is not None
        self.lid_tensor[lid] = lay.tag_at is not None and not simple
        if tail is not None and tail not in self.tail_ids:
            self.tail_ids[tail] = len(self.tails)
            self.tails.append(_made(_TAILS, tail, _Tail, tail))
        self.lid_tail[lid] = -1 if tail is None else self.tail_ids[tail]
        for slot, (tag, _off, _width) in enumerate(lay.values):
            self.lid_tags[lid, slot] = self._tag_id(self.folder.prefix + tag)

    def _tag_id(self, name: str) -> int:
        tid = self.tag_ids.get(name)
        if tid is None:
            tid = self.tag_ids[name] = len(self.tag_names)
            self.tag_names.append(name)
            if tid >= len(self.tag_wanted):  # room for twice as many (a tag costs O(1))
                self.tag_wanted = np.resize(self.tag_wanted, max(2 * tid, 16))
            self.tag_wanted[tid] = self.folder.tags is None or name in self.folder.tags
        return tid

    # -- the sweep ----------------------------------------------------------------------
    def run(self, buf: Buf, pos: int, end: int) -> int:
        """Decode the records from ``pos`` on, in one window: those of known layouts in
        bulk, the others (in a ``brain.Event:2`` file) one by one in their place; the
        position after them (:attr:`tail`: the layouts of the last ones)."""
        if end - pos < _MIN_SWEEP or buf[pos + 12] != _WALL_KEY:
            return pos
        size = int.from_bytes(buf[pos : pos + 8], "little") + 16
        if pos + size > end:
            return pos
        record = bytes(buf[pos : pos + size])
        early = self._lookup(size, record) < 0  # (where the general decoder would read)
        if early and self.gap:  # (what it learns is noted from where it began)
            return pos
        seen = self._foreseeable()
        ahead = None if seen is None else _FORESEEN.get(seen[0])
        if ahead is not None and not ahead.layouts:
            ahead = None  # (what was learnt there is learnt one by one)
        if early and (ahead is None or not ahead.takes(size, record)):
            self._unswept(seen)
            return pos  # the record here has no known layout: not worth a sweep
        stop = min(end, pos + self.window)
        a = _Window(buf, pos, stop - pos)
        starts, sizes = _chain(a)
        if not len(starts):
            self.window = _MIN_WINDOW
            return pos
        fore = None
        firsts: dict[int, int] = {}
        self.told, self.records = None, len(starts)
        if ahead is None:
            ids = self._classify(a, starts, sizes)
        else:
            n0 = len(self.by_id)
            fore = self.exact.tables_with(n0, ahead.layouts).classify(a, starts, sizes)
            if early and not ahead.starts_here(fore, n0):
                self._unswept(seen)
                return pos  # (the general decoder reads these records first)
            ids, firsts = ahead.ids(fore, n0)
            fore -= n0  # (each record's layout here; negative: not one of these)
        general: list[tuple[int, str, int, float, float]] = []
        k = self._others(a, pos, starts, sizes, ids, general, fore, ahead, firsts)
        start = self.unswept if self.gap else seen
        if start is not None:
            self._remember(start)
        self.gap = False
        self.unswept = None
        taken = self._take(a, starts[:k], sizes[:k], ids[:k], general)
        self.folder.bulk_records += int(np.count_nonzero(ids[:taken] >= 0))
        # the cycle path reads layouts of one tag each: those after the last record of
        # another kind among the last ``_TAIL`` (the window's others not looked at)
        first = max(taken - _TAIL, 0)
        last = ids[first:taken]
        other = np.flatnonzero((last < 0) | self.lid_any[last])
        if len(other):
            first += int(other[-1]) + 1
        self.tail = [self.by_id[i] for i in ids[first:taken].tolist()]
        if taken:
            pos += int(starts[taken - 1] + sizes[taken - 1])
        if taken < len(ids):  # a record the general decoder reads: start small after it
            self.window = _MIN_WINDOW
        else:
            self.window = min(self.window * 2, _MAX_WINDOW)
        return pos

    def _unswept(self, seen: _Known | None) -> None:
        """The general decoder reads the record here: where it began to, since the last
        sweep, the layouts known then (``seen``; None: no sweep may foresee from there, as
        before a file's version is read)."""
        if not self.gap and seen is not None:
            self.gap = True
            self.unswept = seen

    def passed(self) -> None:
        """The cycle path read records here: the general decoder's before the next sweep
        (:meth:`_unswept`) are those after them."""
        self.gap = False
        self.unswept = None

    def _foreseeable(self) -> _Known | None:
        """The layouts known now (as :data:`_FORESEEN` is keyed, and how many), where a
        sweep may learn the layouts an earlier read learnt after them (see
        :class:`_Ahead`); None where it may not: a file older than ``brain.Event:2`` (its
        records of no known layout end a sweep), layouts of any tag (learnt from many
        tags, each rare), or as many tags as make a sweep learn those."""
        folder = self.folder
        if (
            self.any_tag.sizes
            or len(self.tag_names) >= _ANY_TAG_AFTER
            or not (folder.file_version and folder.file_version >= 2)
        ):
            return None
        return self.exact.state, len(self.exact.added)

    def _remember(self, seen: _Known) -> None:
        """Note the layouts learnt since ``seen`` was known (by the general decoder before
        this sweep, and in it) for a later read (:class:`_Ahead`): those of one tag each
        whose values are all ``simple_value`` ones with no metadata, up to the first that
        is not (a record of such a layout read in bulk is read as the general decoder
        reads it: a tensor's value, or a value's metadata, notes its tag's plugin)."""
        learnt = self.by_id[seen[1] :]
        if not learnt or self.any_tag.sizes:
            return
        keys = [lay.key for lay in learnt]
        ahead = _FORESEEN.get(seen[0])
        if ahead is not None and ahead.learnt == keys:
            return  # (what a read of a file met before learns)
        plain: list[Layout] = []
        for lay in learnt:
            if not _plain(lay):
                break
            plain.append(lay)
        if len(_FORESEEN) >= _MAX_TABLES:
            _FORESEEN.clear()
        _FORESEEN[seen[0]] = _Ahead(plain, keys)

    def _others(
        self,
        a: _Window,
        pos: int,
        starts: Any,
        sizes: Any,
        ids: Any,
        general: list[tuple[int, str, int, float, float]],
        fore: Any = None,
        ahead: _Ahead | None = None,
        firsts: dict[int, int] | None = None,
    ) -> int:
        """Decode the records of no known layout among ``starts`` one by one, in a
        ``brain.Event:2`` file (``ids``: -2 for each; their points into ``general`` as
        ``(record, tag, step, wall time, value)``); learn their layouts, so that the
        records after them of the same layout are read in bulk. The records up to the
        first that the general decoder must read in its place: a checksum that fails, a
        ``SessionLog`` or a file version (a purge rule), or an older file (its purge rule
        follows every step).

        ``fore``, ``ahead`` and ``firsts``: each record's layout among those an earlier
        read learnt next too (:meth:`_Ahead.ids`): the first record of such a layout in
        the window (``firsts``) has its checksums checked and its layout learnt in its
        place, the record not decoded; the others of the layout take its id once it is
        learnt."""
        try:
            folder = self.folder
            buf = a.buf
            unknown = np.flatnonzero((ids < 0) & (ids != _LATER)).tolist()
            if not unknown:
                return len(ids)
            if not (folder.file_version and folder.file_version >= 2):
                return unknown[0]
            firsts = firsts or {}
            view = memoryview(buf)
            hits = 0  # records found to have a layout learnt since the last classification
            i = 0
            while i < len(unknown):
                u = unknown[i]
                i += 1
                if hits >= max(_RECLASSIFY, (len(unknown) - i) >> 6):
                    # layouts learnt from the records before: the rest classified again (once
                    # the look-ups one by one have cost a share of what that costs)
                    hits = 0
                    rest = np.asarray(unknown[i - 1 :], np.int64)
                    ids[rest] = self._classify(a, starts[rest], sizes[rest], rest)
                    unknown = rest[ids[rest] < 0].tolist()
                    i = 0
                    continue
                p = pos + int(starts[u])
                size = int(sizes[u])
                end = p + size - 4
                slot = firsts.get(u)
                if slot is not None:  # the first record of a layout foreseen (none learnt yet)
                    if not _checksums_hold(buf, view, p, end):
                        return u
                    assert ahead is not None and fore is not None
                    # (with as many tags, learnt as a layout of any tag, as below)
                    lid = -1 if len(self.tag_ids) >= _ANY_TAG_AFTER else self._add(ahead, slot)
                    if lid >= 0:
                        ids[u] = lid  # (no hit: the records of its layout are not unknown)
                        continue
                    # read as any other, and the records of that layout after it too
                    later = np.flatnonzero(fore[u + 1 :] == slot) + u + 1
                    ids[later] = -1
                    unknown = sorted({*unknown[i:], *later.tolist()})
                    i = 0
                else:
                    lid = -1 if ids[u] == -3 else self._lookup(size, bytes(buf[p : p + size]))
                    if lid >= 0:  # a layout learnt from a record before it in this window
                        ids[u] = lid
                        hits += 1
                        continue
                    if not _checksums_hold(buf, view, p, end):
                        return u
                    if ids[u] != -3 and _no_scalar(buf, p + 12, end, folder.plugins):
                        ids[u] = -2  # (a histogram, an image: no point, nothing to note)
                        continue
                if ids[u] == -3:  # a tensor whose tag's first metadata this may be
                    point = self._first_metadata(buf, p, size)
                    if point is not None:  # a scalar: its point as the general decoder's
                        general.append((u, *point))
                        ids[u] = -2
                        continue
                try:
                    got = _plain_event(folder, buf, p + 12, end)
                except (ValueError, IndexError, struct.error):
                    return u  # the general decoder says what is wrong
                if got is None:
                    return u
                step, wall, values = got
                scalars = bool(values)
                for tag, value in values:
                    if value is not None:
                        general.append((u, folder.prefix + tag, step, wall, value))
                    else:
                        scalars = False
                # (its layout is known; a record of a value that is no scalar, a histogram, an
                # image, a text, has none: ``layout_of`` would parse it again to say so)
                if ids[u] != -3 and scalars:
                    self.learn(buf, p, size - 16, any_tag=len(self.tag_ids) >= _ANY_TAG_AFTER)
                ids[u] = -2
            return len(ids)
        finally:
            if ahead is not None:  # the records of layouts learnt from their first one
                ahead.resolve(ids, fore, self.layouts)

    def _first_metadata(self, buf: Buf, p: int, size: int) -> tuple[str, int, float, float] | None:
        """A record (at ``p``, its checksums checked) of a tensor layout of any tag whose
        tag is not known as a scalar, read as the general decoder reads it, from its
        layout: its metadata noted (the plugin of a tag's first metadata, the records
        read in file order here), and where its tag is a scalar, its point ``(tag, step,
        wall time, value)`` (None: the general decoder reads it). The metadata is among
        the layout's fixed bytes, its plugin read once a layout: decoding each such
        record in full (the first records of each of 2,000 tags) was ~a quarter of a
        read of them."""
        lid = self.any_tag.lookup(size, bytes(buf[p : p + size]))
        if lid < 0:
            return None
        got = self.lid_plugin.get(lid)
        if got is None:
            got = self.lid_plugin[lid] = _metadata_plugin(buf, p + 12, p + size - 4)
        has_metadata, plugin = got
        lay = self.by_id[lid]
        if lay.tag_at is None or lay.wall is None or lay.step is None or not has_metadata:
            return None
        at, length = lay.tag_at
        tag = buf[p + at : p + at + length].decode("utf-8", "replace")
        plugins = self.folder.plugins
        if tag not in plugins:
            plugins[tag] = plugin
        if plugins[tag] != "scalars":
            return None
        (_tag, off, width), (step_at, _width) = lay.values[0], lay.step
        value = (F32 if width == 4 else F64).unpack_from(buf, p + off)[0]
        return (
            self.folder.prefix + tag,
            varint(buf, p + step_at)[0],
            F64.unpack_from(buf, p + lay.wall)[0],
            value,
        )

    def _lookup(self, size: int, record: bytes) -> int:
        """The id of ``record``'s layout (-1: none known)."""
        lid = self.exact.lookup(size, record)
        return lid if lid >= 0 or not self.any_tag.sizes else self.any_tag.lookup(size, record)

    def _classify(self, a: _Window, starts: Any, sizes: Any, rows: Any = None) -> Any:
        """Each record's layout id (-1: none known; -3: a tensor of a layout of any tag
        whose tag is not known to be a scalar: read in its place, its metadata says).
        The tags so told, and their shares of the checksum, are noted in :attr:`told`
        for :meth:`_take` (``rows``: the window's records these are; None: all).

        Once a window has few records of the layouts of one tag each against those of
        any tag (a file of many rare tags: its first 64 tags', at the step widths they
        had then, against the rest), the layouts of any tag are told first and the
        others only to the records left: telling every record the first kind was ~half
        of telling them. A record of both kinds reads the same either way (its tag from
        its bytes, or its layout)."""
        if not self.any_tag.sizes:
            return self.exact.classify(a, starts, sizes)
        first, then = (self.any_tag, self.exact) if self.any_first else (self.exact, self.any_tag)
        ids = first.classify(a, starts, sizes)
        rest = np.flatnonzero(ids < 0)
        if len(rest):
            ids[rest] = then.classify(a, starts[rest], sizes[rest])
        if not self.any_first and len(ids) >= _ANY_FIRST_AFTER:
            # (a window of records of neither kind, media, decides nothing)
            later = int((ids[rest] >= 0).sum())
            self.any_first = len(ids) - len(rest) < later * _ANY_FIRST_SHARE
        tensor = self.lid_tensor[np.maximum(ids, 0)] & (ids >= 0)
        if tensor.any():
            shape_of = np.where(tensor, self.lid_shape[np.maximum(ids, 0)], -1)
            for sid, sel in _grouped(shape_of, len(self.shapes)):
                tags, share, scalar = self._tags_of(a, starts[sel], self.shapes[sid])
                ids[sel[~scalar]] = -3
                if self.told is None:
                    self.told = (
                        np.full(self.records, -1, np.int64),
                        np.empty(self.records, np.uint32),
                    )
                at = sel if rows is None else rows[sel]
                self.told[0][at] = np.where(scalar, tags, -1)
                self.told[1][at] = share
        return ids

    def _take(
        self,
        a: _Window,
        starts: Any,
        sizes: Any,
        ids: Any,
        general: list[tuple[int, str, int, float, float]],
    ) -> int:
        """Decode the records at ``starts`` (those of a known layout, tail by tail, then
        shape by shape; the
        others' points are in ``general``) up to the first whose data checksum fails,
        or, in an old file, whose step goes back; how many.

        Each group's steps and wall times are handed over as decoded, beside its records'
        places (``recs``), not put in their places among the window's records and taken
        back from there (two passes over every record of a window of scalars among media,
        whose records are never all one tail's)."""
        folder = self.folder
        k = len(starts)
        if not k:
            return 0
        bad = np.zeros(k, bool)
        recs: list[Any] = []
        tags: list[Any] = []
        values: list[Any] = []
        times: list[tuple[Any, Any]] = []  # each of ``recs``' steps and wall times
        bulk = ids >= 0
        lid = np.where(bulk, ids, 0)
        tail_of = np.where(bulk, self.lid_tail[lid], -1)
        by_tail = 0  # the records the tails took
        for tid, sel in _grouped(tail_of, len(self.tails)):
            if len(sel) == k:  # every record one tail's: its columns as they come, no gather
                lids = ids
                steps, walls, value, bad = self.tails[tid].take(
                    a, starts, sizes, self.lid_base[ids]
                )
            else:
                lids = ids[sel]
                steps, walls, value, bad[sel] = self.tails[tid].take(
                    a, starts[sel], sizes[sel], self.lid_base[lids]
                )
            recs.append(sel)
            tags.append(self.lid_tags[lids, 0])
            values.append(value)
            times.append((steps, walls))
            by_tail += len(sel)
        # (every record of a known layout a tail's, as in most windows of torch's writers,
        # among media records too: no shape to look for)
        shape_of = None
        if by_tail < k and by_tail < np.count_nonzero(bulk):
            shape_of = np.where(bulk & (tail_of < 0), self.lid_shape[lid], -1)
        for sid, sel in [] if shape_of is None else _grouped(shape_of, len(self.shapes)):
            shape = self.shapes[sid]
            at = starts[sel]
            lids = ids[sel]
            if shape.tail is not None:  # a layout of any tag: its tags, then as a tail
                record_tags, share, scalar = self._tags_at(a, at, shape, sel)
                steps, walls, value, wrong = shape.tail.take(
                    a, at, sizes[sel], self.lid_base[lids] ^ share
                )
                bad[sel] = wrong | ~scalar
                recs.append(sel)
                tags.append(record_tags)
                values.append(value)
                times.append((steps, walls))
                continue
            steps = (
                np.zeros(len(sel), np.int64)
                if shape.step is None
                else _varints(a, at + shape.step[0], shape.step[1])
            )
            walls = np.zeros(len(sel)) if shape.wall is None else a.f8[at + shape.wall]
            crc = self.lid_base[lids]
            cols, tables, places = shape.crc()
            if len(cols):
                crc = crc ^ shares(a.u1[cols[:, None] + at], tables, places)[0]
            rot = a.u4[at + shape.size - 4] - np.uint32(MASK_DELTA)
            if shape.tag_at is None:
                record_tags = None
                bad[sel] = crc != ((rot << np.uint32(15)) | (rot >> np.uint32(17)))
            else:
                record_tags, share, scalar = self._tags_at(a, at, shape, sel)
                crc ^= share
                bad[sel] = (crc != ((rot << np.uint32(15)) | (rot >> np.uint32(17)))) | ~scalar
            for slot, (off, width) in enumerate(shape.slots):
                recs.append(sel)
                tags.append(self.lid_tags[lids, slot] if record_tags is None else record_tags)
                values.append((a.f4 if width == 4 else a.f8)[at + off])
                times.append((steps, walls))
        cut = int(bad.argmax()) if bad.any() else k
        if not (folder.file_version and folder.file_version >= 2):  # the old purge rule
            # (every record a known layout's: the first other ends the window in such a file)
            steps = np.zeros(k, np.int64)
            for sel, (got, _walls) in zip(recs, times, strict=True):
                steps[sel] = got
            before = np.empty(k, np.int64)
            before[0] = folder.most_recent_step
            before[1:] = steps[:-1]
            back = np.flatnonzero(steps < before)
            if len(back):
                cut = min(cut, int(back[0]))
            if cut:
                folder.most_recent_step = int(steps[cut - 1])
        if cut:
            self._hand_over(k, cut, recs, tags, values, times, general)
        return cut

    def _tags_at(self, a: _Window, at: Any, shape: _Shape, sel: Any) -> tuple[Any, Any, Any]:
        """``_tags_of`` the window's records ``sel`` (at ``at``), where :meth:`_classify`
        told them (a tensor's tag: the ``new_style`` twin of the file of many rare tags
        told its every record's tag twice) their tags as noted, the others' told now."""
        if not shape.tensor or self.told is None:
            return self._tags_of(a, at, shape)
        tags, share = self.told[0][sel], self.told[1][sel]
        miss = np.flatnonzero(tags < 0)
        scalar = np.ones(len(sel), bool)
        if len(miss):
            tags[miss], share[miss], scalar[miss] = self._tags_of(a, at[miss], shape)
        return tags, share, scalar

    def _tags_of(self, a: _Window, at: Any, shape: _Shape) -> tuple[Any, Any, Any]:
        """The tag ids of the records at ``at`` of a layout of any tag, read from their
        bytes; each one's tag bytes' share of its data checksum; and whether its value
        is a scalar (a tensor's tag whose first metadata named the ``scalars`` plugin,
        else the general decoder reads it). The tags met before in this shape's records
        are looked up all at once (``_KnownTags``); the others are told apart in bulk
        and looked up per distinct tag, not per record."""
        off, length = shape.tag_at or (0, 0)
        words, key = _tag_words(a, at + off, length)
        known = self.known_tags.get(shape)
        if known is None:
            known = self.known_tags[shape] = _KnownTags(words.shape[1])
        ids, share, hit = known.find(words, key)
        if hit is None:  # every record's tag met before (and a scalar)
            return ids, share, np.ones(len(at), bool)
        scalar = hit.copy()
        miss = np.flatnonzero(~hit)
        got_ids, got_share, got_scalar, new = self._new_tags(words[miss], key[miss], length, shape)
        ids[miss], share[miss], scalar[miss] = got_ids, got_share, got_scalar
        known.add(*new)
        return ids, share, scalar

    def _new_tags(
        self, words: Any, key: Any, length: int, shape: _Shape
    ) -> tuple[Any, Any, Any, tuple[Any, Any, Any, Any]]:
        """``_tags_of`` for records whose tags ``_KnownTags`` does not hold (their tags'
        ``words`` and ``key``), told apart in bulk, each distinct tag looked up by its
        bytes; and the distinct scalar ones' ``(words, keys, ids, shares)``, for
        ``_KnownTags.add``."""
        first, which = _distinct(words, key)
        rows = np.ascontiguousarray(words[first]).view(np.uint8)[:, :length]
        share = np.bitwise_xor.reduce(shape.tag_tables[np.arange(length), rows], axis=1)
        share = share.astype(np.uint32)
        ids = np.empty(len(rows), np.int64)
        scalar = np.empty(len(rows), bool)
        known = self.tag_bytes
        plugins = self.folder.plugins
        for i, name in enumerate(map(bytes, rows)):
            got = known.get((name, shape.tensor))
            if got is None:
                tag = name.decode("utf-8", "replace")
                # a tensor is a scalar once its tag's first metadata said so (that record,
                # with its metadata, was read by the general decoder): known for good
                if shape.tensor and plugins.get(tag) != "scalars":
                    ids[i], scalar[i] = -1, False
                    continue
                got = known[name, shape.tensor] = (self._tag_id(self.folder.prefix + tag), True)
            ids[i], scalar[i] = got
        new = (words[first[scalar]], key[first[scalar]], ids[scalar], share[scalar])
        return ids[which], share[which], scalar[which], new

    def _hand_over(
        self,
        k: int,
        cut: int,
        recs: list[Any],
        tags: list[Any],
        values: list[Any],
        times: list[tuple[Any, Any]],
        general: list[tuple[int, str, int, float, float]],
    ) -> None:
        """The points of the first ``cut`` of ``k`` records, in record order (the bulk
        records' and the others' together), kept for :meth:`flush` (``times``: each group
        of ``recs``' steps and wall times)."""
        kept = [g for g in general if g[0] < cut]
        if kept:
            recs.append(np.array([g[0] for g in kept], np.int64))
            tags.append(np.array([self._tag_id(g[1]) for g in kept], np.int64))
            values.append(np.array([g[4] for g in kept], np.float64))
            times.append((np.array([g[2] for g in kept], np.int64), np.array([g[3] for g in kept])))
        if not recs:
            return
        if len(recs) == 1:
            (rec,), (tag,), ((steps, walls),) = recs, tags, times
            value = values[0].astype(np.float64, copy=False)
        else:
            rec = np.concatenate(recs)
            tag = np.concatenate(tags)
            value = np.concatenate(values, dtype=np.float64)
            steps = np.concatenate([t[0] for t in times])
            walls = np.concatenate([t[1] for t in times])
        # (every record's, every tag wanted: as most windows are, nothing to look at)
        keep = None if cut == k else rec < cut
        if self.folder.tags is not None:
            keep = self.tag_wanted[tag] if keep is None else keep & self.tag_wanted[tag]
        if keep is not None and not keep.all():
            rec, tag, value, steps, walls = (x[keep] for x in (rec, tag, value, steps, walls))
        if not len(rec):
            return
        if len(self.tag_names) < _KEEP_AFTER:  # a few tags: handed over now, by tag
            self.flush()
            # by tag, then record (stable sorts keep a record's values in their order): by
            # record first (runs already in order, which a stable sort merges), then by tag
            if len(recs) == 1:  # one group's records: in record order already
                order = _stable_order(tag, len(self.tag_names))
            else:
                order = np.argsort(rec, kind="stable")
                order = order[_stable_order(tag[order], len(self.tag_names))]
            self._blocks(tag[order], steps[order], walls[order], value[order])
            return
        if len(recs) > 1:  # (one group's records are in record order already)
            order = _record_order(rec, cut)
            tag, steps, walls, value = tag[order], steps[order], walls[order], value[order]
        self.pending.append((tag, steps, walls, value))
        self.pending_points += len(tag)
        if self.pending_points >= _KEEP_MOST:
            self.flush()

    def flush(self) -> None:
        """Hand the sweeps' points kept since the last call over to the folder, each
        tag's in record order: one sort by tag and one block a tag for all the windows
        swept, not one a window (a file of 2,000 tags, each rare, handed ~2,000 blocks
        over a window, and its frame joined each tag's parts). The folder calls this
        before any other point reaches its series (the general decoder's, the cycle
        path's, a purge) and at the end of each buffer read, so each tag's points stay
        in file order; the series of tags new to the folder are opened in the order the
        windows met them (the window, then the tag's id, as when each window handed its
        points over itself), so the folder's order of tags is as before."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        self.pending_points = 0
        if len(pending) == 1:
            tag, s, w, value = pending[0]
        else:
            tag = np.concatenate([p[0] for p in pending])
            s = np.concatenate([p[1] for p in pending])
            w = np.concatenate([p[2] for p in pending])
            value = np.concatenate([p[3] for p in pending])
        # by tag (a stable sort keeps each tag's points in record order)
        order = _stable_order(tag, len(self.tag_names))
        s, w, value = s[order], w[order], value[order]
        # each tag's points, counted (the tags themselves not put in order)
        counts = np.bincount(tag, minlength=len(self.tag_names))
        seg_tags = np.flatnonzero(counts)
        bounds = np.zeros(len(seg_tags) + 1, np.int64)
        np.cumsum(counts[seg_tags], out=bounds[1:])
        firsts = bounds[:-1]
        if len(self.tag_open) < len(self.tag_names):  # room for twice as many
            wider = np.zeros(2 * len(self.tag_names), bool)
            wider[: len(self.tag_open)] = self.tag_open
            self.tag_open = wider
        new = np.flatnonzero(~self.tag_open[seg_tags])
        if len(new):  # their series opened by the window that met each first, then by id
            ends = np.cumsum([len(p[0]) for p in pending])
            window = np.searchsorted(ends, order[firsts[new]], side="right")
            for t in seg_tags[new[np.lexsort((seg_tags[new], window))]].tolist():
                self.folder.open_series(self.tag_names[t])
            self.tag_open[seg_tags[new]] = True
        self._blocks(None, s, w, value, bounds.tolist(), seg_tags.tolist())

    def _blocks(
        self,
        tag: Any,
        s: Any,
        w: Any,
        value: Any,
        bounds: list[int] | None = None,
        seg: list[int] | None = None,
    ) -> None:
        """Each tag's points to the folder (``tag`` sorted; ``bounds``: where each tag's
        points start, and the end; ``seg``: each one's tag, where ``tag`` is not given)."""
        if bounds is None:
            bounds = [0, *(np.flatnonzero(tag[1:] != tag[:-1]) + 1).tolist(), len(tag)]
        if seg is None:
            seg = tag[bounds[:-1]].tolist()
        names = self.tag_names
        block = self.folder.block
        for t, lo, hi in zip(seg, bounds, bounds[1:], strict=False):  # (bounds: one more)
            block(names[t], (s[lo:hi], w[lo:hi], value[lo:hi]))


class _Index:
    """Layouts by record size: each record of a window told its layout among those of its
    size. What a record is looked up in, one at a time, is kept as layouts are added (a
    dict a size); the arrays that tell a window's records (``_Tables``) are made when
    next asked, or found made for the same layouts added in the same order by an earlier
    read (a file's next read, or another run of its client, learns the same layouts:
    making them again was ~a tenth of reading an SB3 file)."""

    def __init__(self, numbered: bool = False, every_size: bool = False) -> None:
        #: the sizes in the order first seen; size -> mask -> the fixed bytes under it,
        #: as whole-record integers -> the layout's id
        self.sizes: list[int] = []
        self.exact: dict[int, dict[int, dict[int, int]]] = {}
        #: the layouts added, in order: their ids, themselves, and their ids and keys
        self.lids: list[int] = []
        self.layouts: list[Layout] = []
        self.added: list[tuple[int, tuple[bytes, bytes]]] = []
        self.tables: _Tables | None = None
        #: the layouts added as one number (``_list_after``), where ``numbered``
        self.state = 0
        self.numbered = numbered
        #: whether a window's records are told every size at once however few the sizes
        #: (``_Flat``; the layouts of any tag: a size's layouts fix different bytes, one
        #: per step width, which size by size compares each layout whole)
        self.every_size = every_size

    def add(self, lid: int, lay: Layout) -> None:
        by_mask = self.exact.get(lay.size)
        if by_mask is None:
            by_mask = self.exact[lay.size] = {}
            self.sizes.append(lay.size)
        m = int.from_bytes(lay.mask, "little")
        by_mask.setdefault(m, {})[int.from_bytes(lay.fixed, "little") & m] = lid
        self.lids.append(lid)
        self.layouts.append(lay)
        self.added.append((lid, lay.key))
        self.tables = None
        if self.numbered:
            self.state = _list_after(self.state, lid, lay.key)

    def lookup(self, size: int, record: bytes) -> int:
        """The id of ``record``'s layout (its bytes, ``size`` of them; -1: none here)."""
        by_mask = self.exact.get(size)
        if by_mask is not None:
            value = int.from_bytes(record, "little")
            for m, fixed in by_mask.items():
                lid = fixed.get(value & m)
                if lid is not None:
                    return lid
        return -1

    def classify(self, a: _Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id (-1: none here)."""
        tables = self.tables
        if tables is None:
            tables = self.tables = _tables(tuple(self.added), self)
        return tables.classify(a, starts, sizes)

    def tables_with(self, lid: int, more: tuple[Layout, ...]) -> _Tables:
        """The tables of this index with ``more`` layouts added, their ids from ``lid``
        on (this index unchanged): as :meth:`classify`'s once they are added."""
        key = (*self.added, *((lid + i, lay.key) for i, lay in enumerate(more)))
        tables = _TABLES.get(key)
        if tables is None:
            index = _Index()
            for old, lay in zip(self.lids, self.layouts, strict=True):
                index.add(old, lay)
            for i, lay in enumerate(more):
                index.add(lid + i, lay)
            tables = _tables(key, index)
        return tables


def _tables(key: tuple[tuple[int, tuple[bytes, bytes]], ...], index: _Index) -> _Tables:
    """The ``_Tables`` of ``index`` (its layouts ``key``), made once a process."""
    tables: _Tables = _made(_TABLES, key, _Tables, index, _MAX_TABLES)
    return tables


#: the ``_Tables`` made in this process, by their layouts (ids and keys, in the order
#: added), and the most kept
_TABLES: dict[tuple[tuple[int, tuple[bytes, bytes]], ...], _Tables] = {}
_MAX_TABLES = 256


class _Ahead:
    """The layouts a read learnt, in order, from where it knew some others: by the general
    decoder's records before a sweep, and in it (``_FORESEEN``). A file's next read, or
    another run of its client, learns the same ones there: each from the first record of
    it in a window, read in its place (~10-20 us a record, decoded in full and looked up;
    the window's rest told its layouts again after): what this saves is ~0.3-0.6 ms of a
    ~9.6 ms warm read of CleanRL's PPO pattern at 300,000 steps. Here a sweep tells its
    window's records these layouts too (:meth:`ids`), and such a record, the first of its
    layout in the window, has its checksums checked and its layout learnt in its place
    (``FastPath._others``), its point decoded in bulk with the others. Only the layouts
    of one tag each whose value is a ``simple_value`` without metadata (a record of one
    says nothing else the general decoder notes) and which a ``_Tail`` decodes (another
    shape, for a record or two, costs more in bulk than in the general decoder).

    The layout ids, and the tag ids they give (which order the folder's series), are as
    without this: every layout is learnt at its first record in file order, as before.
    A sweep starts early, where the general decoder would have read records one by one
    before it (:meth:`starts_here`), only where those records are each the first of a
    layout learnt so."""

    def __init__(self, layouts: list[Layout], learnt: list[tuple[bytes, bytes]]) -> None:
        self.layouts = tuple(layouts)
        #: the keys of every layout the read learnt (these the first of them): a read that
        #: learns the same notes nothing again
        self.learnt = learnt
        #: an index of these alone (is a record one of them?), and whether each is read so
        self.index = _Index()
        for lid, lay in enumerate(layouts):
            self.index.add(lid, lay)
        self.tail = np.asarray([_Tail.key(lay) is not None for lay in layouts], bool)

    def takes(self, size: int, record: bytes) -> bool:
        """Whether ``record`` (``size`` bytes) is of a layout learnt so."""
        slot = self.index.lookup(size, record)
        return slot >= 0 and bool(self.tail[slot])

    def starts_here(self, fore: Any, n0: int) -> bool:
        """Whether a sweep may start at a window whose records have ``fore`` (layout ids
        among these from ``n0`` on) where the general decoder would read the first: the
        records up to the first of a layout known or met before in the window are each the
        first of a layout learnt so (the general decoder reads those one by one, learning
        each, and then the sweep starts)."""
        new = fore >= n0
        seen = np.zeros(len(fore), bool)
        if new.any():
            at = np.flatnonzero(new)
            seen[at[np.unique(fore[at], return_index=True)[1]]] = True
        stop = int(np.argmin(seen)) if not seen.all() else len(fore)
        if stop < len(fore) and fore[stop] < 0:
            return False  # (a record of no layout known: the general decoder reads it)
        return bool(self.tail[fore[:stop] - n0].all())

    def ids(self, fore: Any, n0: int) -> tuple[Any, dict[int, int]]:
        """The records' layout ids for ``FastPath._others`` from ``fore`` (ids among these
        from ``n0`` on): the first record of each layout learnt so is unknown (-1), named
        in the dict (record -> its layout here); the others of it ``_LATER``
        (:meth:`resolve`); those of the other layouts here unknown."""
        ids = fore.copy()
        new = np.flatnonzero(fore >= n0)
        firsts: dict[int, int] = {}
        if not len(new):
            return ids, firsts
        ids[new] = _LATER
        slots, at = np.unique(fore[new] - n0, return_index=True)
        for slot, rec in zip(slots.tolist(), new[at].tolist(), strict=True):
            if self.tail[slot]:
                firsts[rec] = slot
                ids[rec] = -1
            else:
                ids[new[fore[new] == slot + n0]] = -1
        return ids, firsts

    def resolve(self, ids: Any, slots: Any, known: dict[tuple[bytes, bytes], int]) -> None:
        """The ``_LATER`` records' ids once their layouts are learnt (``slots``: each
        record's layout here; ``known``: a layout's id by its key; -1 for one not learnt:
        beyond where the sweep stops)."""
        later = np.flatnonzero(ids == _LATER)
        if len(later):
            lut = np.asarray([known.get(lay.key, -1) for lay in self.layouts], np.int64)
            ids[later] = lut[slots[later]]


#: the layouts a read learnt from where it knew some (by those: their ids and keys, in the
#: order added) to the end of its next sweep: from the general decoder's records before
#: the sweep, and in it. A file's next read, or another run of its client, learns the same
#: ones there (``_Ahead``); as many kept as ``_TABLES``
_FORESEEN: dict[int, _Ahead] = {}
#: each list of layouts added to an index (their ids and keys, in order) as a number: the
#: number of the list before the last one added, the last one's id and key -> this list's
#: (0: none added); a list's number made in a look-up, not from the whole list each time
_LISTS: dict[tuple[int, int, tuple[bytes, bytes]], int] = {}
#: a list of layouts an index holds, as ``_LISTS`` numbers it, and how many they are
_Known = tuple[int, int]


def _list_after(before: int, lid: int, key: tuple[bytes, bytes]) -> int:
    """The number of the list of layouts numbered ``before`` with layout ``key`` added as
    ``lid`` (a new number for a list not met before in this process)."""
    got = _LISTS.get((before, lid, key))
    if got is None:
        if len(_LISTS) >= 1 << 14:  # (what was learnt ahead of the lists forgotten too)
            _LISTS.clear()
            _FORESEEN.clear()
        got = _LISTS[before, lid, key] = next(_NUMBERS)
    return got


#: the list numbers, never given twice in a process (``next`` is one call: threads that
#: read at once get numbers of their own; a number met twice would cost only speed, as
#: what ``_Ahead`` holds is checked against each record)
_NUMBERS = itertools.count(1)
#: a record of a layout learnt ahead (``_Ahead.ids``), not its layout's first in a window
_LATER = -4


class _Tables:
    """An index's layouts as the arrays that tell a window's records their layouts: size
    by size (``_SizeGroup``), or every size at once (``_Flat``)."""

    def __init__(self, index: _Index) -> None:
        #: record size -> its layouts; the sizes in the order first seen, and each size's
        #: place in that list by size (-1: none)
        self.sizes = list(index.sizes)
        self.lids = list(index.lids)
        self.by_size: dict[int, _SizeGroup] = {}
        for lid, lay in zip(index.lids, index.layouts, strict=True):
            group = self.by_size.get(lay.size)
            if group is None:
                # the record as 64-bit words, the last one ending at its end (overlapping)
                offs = [*range(0, lay.size - 8, 8), lay.size - 8]
                group = self.by_size[lay.size] = _SizeGroup(offs)
            group.add(lid, lay, *lay.words())
        self.slots = np.full(max(self.sizes) + 1, -1, np.int64)
        self.slots[self.sizes] = np.arange(len(self.sizes))
        flat = index.every_size or len(self.sizes) >= _FLAT_SIZES
        self.flat = _Flat(self) if flat else None

    def classify(self, a: _Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id (-1: none here)."""
        if self.flat is not None and self.flat.words:
            return self.flat.classify(self, a, starts, sizes)
        return self.grouped(a, starts, sizes)

    def grouped(self, a: _Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id, size by size (-1: none here)."""
        ids = np.full(len(starts), -1, np.int64)
        slots = self.slots
        slot = np.where(sizes < len(slots), slots[np.minimum(sizes, len(slots) - 1)], -1)
        for g, sel in _grouped(slot, len(self.sizes)):
            ids[sel] = self.by_size[self.sizes[g]].classify(a, starts[sel])
        return ids


#: the fewest record sizes told at once (fewer: size by size, a few NumPy calls each, are
#: as fast: a file of many rare tags learns ~4 sizes of ~20 layouts each)
_FLAT_SIZES = 6
#: the longest record told its layout with the others of every size at once (longer ones:
#: size by size, as the words of every record are read up to the longest's)
_FLAT_BYTES = 128
#: the aligned words of a record, as a column (up to ``_FLAT_BYTES`` bytes at any shift)
_WORD_ROWS = np.arange((_FLAT_BYTES + 14) // 8, dtype=np.intp)[:, None]


def _shifted(x: Any, width: int) -> Any:
    """``x`` (bytes along its last axis) placed at each shift 0..7 in rows of ``width``
    zero bytes: an axis of eight before the last."""
    size = x.shape[-1]
    out = np.zeros((*x.shape[:-1], 8, width), np.uint8)
    shift = np.arange(8)[:, None]
    out[..., shift, shift + np.arange(size)] = x[..., None, :]
    return out


class _Flat:
    """The records of every size up to ``_FLAT_BYTES`` told their layouts at once, not
    size by size (a sweep of CleanRL's PPO file meets ~14 sizes, each a dozen NumPy calls
    and a share of a sort), and from the buffer's aligned 64-bit words (a gather of the
    words at every byte costs ~3x as much). A record at ``8q + r`` of the buffer is read
    as the ``words`` aligned words from ``q``: masked by the bytes fixed in every layout of
    its size, shifted by ``r`` (none outside the record), hashed, and the hash looked up
    among all the layouts' at each of the eight shifts (its size and shift checked too).
    A record named a layout that fixes more bytes than the others of its size (a step one
    varint byte wider, the same size as another tag's) has those compared too, so that
    every byte its layout fixes is checked (hashed, or compared). Two layouts of one hash:
    their sizes are told size by size (``_SizeGroup``)."""

    def __init__(self, index: _Tables) -> None:
        small = [s for s in index.sizes if s <= _FLAT_BYTES]
        #: aligned words read a record: its bytes from any shift (0..7) lie in them
        self.words = words = (max(small) + 14) // 8 if small else 0
        if not words:
            return
        width = 8 * words
        ncols = len(index.sizes) + 1  # a last column of no bytes: a size of no layout
        masks = np.zeros((ncols, 8, width), np.uint8)  # a row per (size, shift)
        #: by record size: its column (the last for none), and whether it is told here
        top = max(index.sizes) + 2
        self.col = np.full(top, ncols - 1, np.intp)
        self.here = np.zeros(top, bool)
        mult = np.arange(1, words + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C16)
        self.mult = (mult | np.uint64(1))[:, None]
        #: the layouts that fix bytes beyond their size's common ones: by layout id, their
        #: row (of eight, one a shift) of their whole mask and fixed bytes (0: none)
        self.check_row = np.zeros(max(index.lids) + 2, np.intp)
        self.col[index.sizes] = np.arange(len(index.sizes))
        # every layout of a size told here, size after size: its mask and fixed bytes (as
        # ``width`` bytes), its size's column, and where each size's layouts start
        lays = [(lid, lay) for size in small for lid, lay in index.by_size[size].members()]
        got = b"".join(lay.mask.ljust(width, b"\0") + lay.fixed.ljust(width, b"\0")
                       for _lid, lay in lays)  # fmt: skip
        both = np.frombuffer(got, np.uint8).reshape(len(lays), 2, width)
        lid = np.asarray([lid for lid, _lay in lays], np.intp)
        size = np.asarray([lay.size for _lid, lay in lays], np.intp)
        col = self.col[size]
        starts = np.flatnonzero(np.diff(size, prepend=-1))
        common = np.bitwise_and.reduceat(both[:, 0], starts, axis=0)  # a row a size
        masks[col[starts]] = _shifted(common[:, : max(small)], width)
        mine = common[np.cumsum(np.diff(size, prepend=size[0]) != 0)]  # its size's
        key = self._mix(
            _shifted(both[:, 1, : max(small)] & mine[:, : max(small)], width)
            .reshape(-1, width)
            .view(np.uint64)
            .T.copy()
        )  # (layouts x 8 shifts)
        more = np.flatnonzero((both[:, 0] != mine).any(axis=1))
        wholes = _shifted(both[more, :, : max(small)], width)  # (more, 2, 8, width)
        #: the words of the bytes where those fix more (the others are hashed whole)
        differ = (wholes[:, 0] != masks[col[more]]).any(axis=(0, 1))
        self.check_words = np.flatnonzero(differ.reshape(words, 8).any(axis=1))[:, None]
        self.check_row[lid[more]] = 8 * (1 + np.arange(len(more)))
        check = np.concatenate([np.zeros((1, 2, 8, width), np.uint8), wholes])
        check = check.transpose(1, 0, 2, 3).reshape(2, -1, width).view(np.uint64)
        self.check_masks = np.ascontiguousarray(check[0].T[self.check_words[:, 0]])
        self.check_fixed = np.ascontiguousarray(check[1].T[self.check_words[:, 0]])
        self.masks = np.ascontiguousarray(masks.reshape(-1, width).view(np.uint64).T)
        self.here[small] = True
        order = np.argsort(key, kind="stable")
        self.keys = key[order]
        self.places = _Slots(self.keys)
        self.lids = np.repeat(lid, 8)[order]
        self.where = (8 * size[:, None] + np.arange(8)).ravel()[order]
        same = np.flatnonzero(self.keys[1:] == self.keys[:-1])
        for i in same.tolist():  # two layouts of one hash (rare): their sizes size by size
            self.here[self.where[i] // 8] = self.here[self.where[i + 1] // 8] = False
        if not self.here.any():
            self.words = 0

    def _mix(self, masked: Any) -> Any:
        """Each column's hash of its masked words, a word a row (``masked`` is
        overwritten)."""
        np.multiply(masked, self.mult, out=masked)
        return masked.sum(axis=0, dtype=np.uint64)

    def classify(self, index: _Tables, a: _Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id (-1: none here)."""
        aligned = a.aligned()
        n = self.words
        # the records whose words all lie in the buffer (the last few may not)
        k = int(np.searchsorted(starts, 8 * (len(aligned) - n + 1) - a.pos - 1, side="right"))
        at = starts[:k] + a.pos
        shift = at & 7
        size_at = np.minimum(sizes[:k], len(self.col) - 1)
        row = self.col[size_at]
        row *= 8
        row += shift
        words = aligned.take(_WORD_ROWS[:n] + (at >> 3))  # a row per word
        key = self._mix(words & self.masks.take(row, axis=1))
        found = self.places.find(key)
        hit = self.keys[found] == key
        hit &= self.where[found] == sizes[:k] * 8 + shift
        ids = np.empty(len(starts), np.int64)
        lid = ids[:k]
        np.copyto(lid, np.where(hit, self.lids[found], -1))
        # the records of layouts that fix more bytes than their size's others: those too
        # (the words that hold them)
        check = self.check_row[lid]
        sel = np.flatnonzero(check)
        if len(sel):
            check = check[sel] + shift[sel]
            wrong = np.zeros(len(sel), bool)
            for j, w in enumerate(self.check_words[:, 0].tolist()):  # (a word at a time:
                # 2-D gathers of them all were ~3.5x the cost, a file of many rare tags)
                got = words[w].take(sel) & self.check_masks[j].take(check)
                wrong |= got != self.check_fixed[j].take(check)
            lid[sel[wrong]] = -1
        rest = np.flatnonzero(~self.here[size_at])
        if k < len(starts):
            rest = np.concatenate([rest, np.arange(k, len(starts))])
        if len(rest):
            ids[rest] = index.grouped(a, starts[rest], sizes[rest])
        return ids


class _Slots:
    """Sorted 64-bit hashes (``_Flat``'s, ``_SizeGroup``'s keys) found by a table of
    their top bits, not a binary search: ``searchsorted`` of a window's ~30,000 records
    among CleanRL PPO's ~260 keys took ~1.1 ms (its branches mispredicted at every step),
    a look-up in the table ~0.15 ms. A slot two keys share sends its records to the binary
    search (a few in a hundred: the table has ~32 slots a key)."""

    def __init__(self, keys: Any) -> None:
        self.keys = keys
        n = len(keys)
        bits = max(n.bit_length() + 5, 8)
        self.shift = np.uint64(64 - bits)
        slot = (keys >> self.shift).astype(np.intp)
        #: each slot's key's place; ``n`` for no key (a place whose key differs from any
        #: record's of that slot, once clipped), -1 for a slot of two keys or more
        self.table = np.full(1 << bits, n, np.intp)
        self.table[slot] = np.arange(n)
        shared, count = np.unique(slot, return_counts=True)
        shared = shared[count > 1]
        self.table[shared] = -1
        self.shared = len(shared) > 0

    def find(self, key: Any) -> Any:
        """Where each of ``key`` is among the keys, where it is one of them (else a place
        whose key is not it)."""
        found = self.table.take(key >> self.shift)
        if self.shared:
            both = np.flatnonzero(found < 0)
            if len(both):
                found[both] = self.keys.searchsorted(key[both])
        np.minimum(found, len(self.keys) - 1, out=found)
        return found


class _SizeGroup:
    """The layouts of one record size, as 64-bit words (the last one ending at the
    record's end), and how a record is told to be one of them: a hash of their fixed
    bytes names one where they all fix the same bytes (else each is compared whole)."""

    def __init__(self, offs: list[int]) -> None:
        #: each word's offset in the record, as a column (a word of every record a row)
        self.offs = np.asarray(offs, np.intp)[:, None]
        #: the words the hash reads (those with a byte fixed in every layout)
        self.used: Any = self.offs
        self.n = 0
        self.layouts: list[Layout] = []
        self.lids: Any = np.empty(0, np.int64)
        self.fixeds: Any = None
        self.masks: Any = None
        #: the bytes fixed in all of them (of the words read), each word's odd multiplier,
        #: each layout's hash of those (sorted), their rows, and whether the hashes differ
        self.common: Any = None
        self.spread: Any = None
        self.mult: Any = None
        self.keys: Any = None
        self.places: Any = None
        self.sorted_lids: Any = None
        self.hashed = True

    def add(self, lid: int, lay: Layout, fixed: Any, mask: Any) -> None:
        n = self.n
        if self.fixeds is None:
            self.fixeds = np.empty((8, len(fixed)), np.uint64)
            self.masks = np.empty_like(self.fixeds)
            self.lids = np.empty(8, np.int64)
            spread = np.arange(len(fixed), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C16)
            self.spread = spread | np.uint64(1)
        elif n == len(self.lids):  # room for twice as many, so that adding costs O(1)
            self.fixeds = np.vstack([self.fixeds, np.empty_like(self.fixeds)])
            self.masks = np.vstack([self.masks, np.empty_like(self.masks)])
            self.lids = np.concatenate([self.lids, np.empty_like(self.lids)])
        self.fixeds[n], self.masks[n], self.lids[n] = fixed, mask, lid
        self.n = n + 1
        self.layouts.append(lay)
        self.keys = None  # hashed again when next asked (layouts are learnt in runs)

    def members(self) -> list[tuple[int, Layout]]:
        """``(id, layout)`` of each layout of this size, in the order added."""
        return list(zip(self.lids[: self.n].tolist(), self.layouts, strict=True))

    def _rehash(self) -> None:
        """The bytes fixed in all the layouts, each one's hash of them, sorted."""
        n = self.n
        common = np.bitwise_and.reduce(self.masks[:n], axis=0)
        used = np.flatnonzero(common)
        self.used = self.offs[used]
        self.common = common[used, None]
        self.mult = self.spread[used, None]
        keys = self._hash(self.fixeds[:n, used].T.copy())
        order = np.argsort(keys)
        self.keys = keys[order]
        self.places = _Slots(self.keys)
        self.sorted_lids = self.lids[order]
        # a byte fixed in one layout and not in another of the size is not in the hash,
        # and a record corrupted there would pass as the named layout (its checksum taken
        # from that layout's fixed bytes, which the record no longer holds): such layouts
        # are each compared whole
        uniform = bool((self.masks[:n] == common).all())
        self.hashed = uniform and bool((self.keys[1:] != self.keys[:-1]).all())

    def _hash(self, words: Any) -> Any:
        """Each column's hash (a word a row: summed down the columns, whole rows at a
        time); ``words`` is overwritten."""
        np.bitwise_and(words, self.common, out=words)
        np.multiply(words, self.mult, out=words)
        return words.sum(axis=0, dtype=np.uint64)

    def classify(self, a: _Window, starts: Any) -> Any:
        """The layout id of each record at ``starts`` (-1: none)."""
        if self.n == 1 or self.keys is None or not self.hashed:
            words = a.u8[self.offs + starts]  # a row per word, a column per record
        if self.n == 1:
            match = ((words & self.masks[0, :, None]) == self.fixeds[0, :, None]).all(axis=0)
            return np.where(match, self.lids[0], -1)
        if self.keys is None:
            self._rehash()
        if not self.hashed:  # masks that differ, or two keys alike: each layout in turn
            ids = np.full(len(starts), -1, np.int64)
            for i in range(self.n):
                hit = ((words & self.masks[i, :, None]) == self.fixeds[i, :, None]).all(axis=0)
                ids[hit] = self.lids[i]
            return ids
        key = self._hash(a.u8[self.used + starts])
        at = self.places.find(key)
        return np.where(self.keys[at] == key, self.sorted_lids[at], -1)


def _plain_event(
    folder: Folder, buf: Buf, start: int, end: int
) -> tuple[int, float, list[tuple[str, float | None]]] | None:
    """``(step, wall time, values)`` of the ``Event`` in ``buf[start:end]``; None when it
    holds a file version or a ``SessionLog`` (the general decoder reads those: they
    change how the records after them are read)."""
    wall = 0.0
    step = 0
    summary = None
    for num, wire, s, e in fields(buf, start, end):
        if num == 1 and wire == 1:
            (wall,) = F64.unpack_from(buf, s)
        elif num == 2 and wire == 0:
            step = varint(buf, s)[0]
        elif num == 5 and wire == 2:
            summary = (s, e)
        elif num in (3, 7):
            return None
    if step >= 1 << 63:
        step -= 1 << 64
    values = folder.summary_values(buf, *summary) if summary is not None else []
    return step, wall, values


def _checksums_hold(buf: Buf, view: memoryview, p: int, end: int) -> bool:
    """Whether the record at ``p`` (its data ending at ``end``, its data checksum there)
    has its length's and its data's checksums right."""
    return bool(
        masked_crc32c(view[p : p + 8]) == U32S.unpack_from(buf, p + 8)[0]
        and masked_crc32c(view[p + 12 : end]) == U32S.unpack_from(buf, end)[0]
    )


#: a ``Summary.Value``'s keys of an image, a histogram and audio (fields 4, 5 and 6,
#: each length-delimited), of a tensor (8) and of metadata (9)
_OTHER_KINDS = frozenset((0x22, 0x2A, 0x32))
_TENSOR_KEY, _METADATA_KEY = 0x42, 0x4A


def _no_scalar(buf: Buf, start: int, end: int, plugins: dict[str, str | None]) -> bool:
    """Whether the ``Event`` in ``buf[start:end]`` is a wall time, a step and a summary
    of one value, and nothing else, that gives no point and nothing to note: an image, a
    histogram or audio without metadata, or a tensor (with its metadata or none) of a tag
    whose plugin is not ``scalars`` (``plugins``: each tag's, as the folder noted them) and
    whose first metadata this is not (a text's, after its first). Told in a few steps, not
    decoded in full: such records are most of what a sweep reads in its place in a file of
    scalars among media, ~15 us each decoded. False for anything else, a record that is not
    well formed included (the general path reads it)."""
    try:
        if end - start < 11 or buf[start] != 0x09:  # the wall time
            return False
        p = start + 9
        if buf[p] == 0x10:  # the step
            p = varint(buf, p + 1)[1]
        if p >= end or buf[p] != 0x2A:  # the summary, to the end
            return False
        n, p = varint(buf, p + 1)
        if p + n != end or p >= end or buf[p] != 0x0A:  # its one value, to the end
            return False
        n, p = varint(buf, p + 1)
        if p + n != end or p >= end or buf[p] != 0x0A:  # the value's tag, not empty
            return False
        length, at = varint(buf, p + 1)
        p = at + length
        if not length or p >= end:
            return False
        if buf[p] in _OTHER_KINDS:
            n, p = varint(buf, p + 1)  # the image, histogram or audio, to the end
            return p + n == end
        if buf[p] != _TENSOR_KEY:
            return False
        n, p = varint(buf, p + 1)  # the tensor, then its metadata or the end
        p += n
        metadata = p != end
        if metadata:
            if p > end or buf[p] != _METADATA_KEY:
                return False
            n, p = varint(buf, p + 1)
            if p + n != end:
                return False
    except (ValueError, IndexError):
        return False
    tag = bytes(buf[at : at + length]).decode("utf-8", "replace")  # (as ``summary_values``)
    if metadata and tag not in plugins:
        return False  # (its first metadata: the general decoder notes its plugin)
    return plugins.get(tag) != "scalars"


def _metadata_plugin(buf: Buf, start: int, end: int) -> tuple[bool, str | None]:
    """Whether the ``Event`` in ``buf[start:end]`` holds a summary value's metadata,
    and its plugin's name (its first value's first metadata, as ``summary_values``
    reads it)."""
    for num, wire, s, e in fields(buf, start, end):
        if num == 5 and wire == 2:
            for n1, w1, s1, e1 in fields(buf, s, e):
                if n1 == 1 and w1 == 2:
                    for n2, w2, s2, e2 in fields(buf, s1, e1):
                        if n2 == 9 and w2 == 2:
                            return True, plugin_name(buf, s2, e2)
                    return False, None
    return False, None


def _varints(a: _Window, at: Any, width: int) -> Any:
    """The varints of ``width`` bytes at each of ``at``: the bytes from there read as one
    little-endian word (what follows the varint is masked off), each byte's seven bits
    put in place."""
    if width > 8:
        out = a.u1[at].astype(np.int64) & 0x7F
        for i in range(1, width):
            out |= (a.u1[at + i].astype(np.int64) & 0x7F) << (7 * i)
        return out
    return _varint_words((a.u4 if width <= 4 else a.u8)[at], width)


def _varint_words(words: Any, width: int) -> Any:
    """The varints of ``width`` bytes (up to 8) at the start of each of ``words`` (read
    little-endian: what follows the varint is masked off)."""
    word = words.astype(np.int64)
    out = word & 0x7F
    for i in range(1, width):
        out |= (word >> i) & (0x7F << (7 * i))
    return out


def _tag_words(a: _Window, at: Any, length: int) -> tuple[Any, Any]:
    """The byte strings of ``length`` bytes at ``at`` as rows of 64-bit words (the bytes
    past a string's end masked off: a record's tag is followed by at least its value
    and checksum), and each row's key (one number; rows alike have keys alike).

    Gathered a word at a time into a column each (the rows a view of them): a gather of
    every row's words at once, and the key summed along the rows, cost ~2.5x as much."""
    cols = np.empty(((length + 7) // 8, len(at)), np.uint64)
    for i in range(len(cols)):
        cols[i] = a.u8[at + 8 * i]
    tail = length % 8
    if tail:
        cols[-1] &= np.uint64((1 << (8 * tail)) - 1)
    if len(cols) == 1:
        return cols.T, cols[0]
    key = cols[0] * _MIX
    for i in range(1, len(cols)):
        key += cols[i] * np.uint64((i + 1) * int(_MIX) & (1 << 64) - 1)
    return cols.T, key


def _distinct(words: Any, key: Any) -> tuple[Any, Any]:
    """The distinct rows of ``words`` (``_tag_words``): the first place of each, and
    which of them each row is; by their keys, the keys' groups checked to hold equal
    rows (else told apart exactly)."""
    _keys, first, which = np.unique(key, return_index=True, return_inverse=True)
    which = which.ravel()
    if words.shape[1] > 1 and not (words == words[first[which]]).all():  # keys alike (rare)
        _rows, first, which = np.unique(words, axis=0, return_index=True, return_inverse=True)
        which = which.ravel()
    return first, which


class _KnownTags:
    """The scalar tags met in one shape's records (a layout of any tag): their words
    (``_tag_words``), tag ids and their bytes' share of the data checksum, and a table
    from a key's hash to its tag: a window's records are told their tags by one look-up
    of their keys and one comparison of their words, not a sort of the window and a
    Python look-up per distinct tag (a file of 2,000 tags, each rare, meets most of them
    in every window). A record is given a tag only where its words equal the tag's (a
    key alike is not enough); a tag whose slot another has (rare) is told the slow way,
    as before; a tensor's tag is added only once known as a scalar (its first metadata)."""

    def __init__(self, nwords: int) -> None:
        self.keys: Any = np.empty(0, np.uint64)
        self.words: Any = np.empty((0, nwords), np.uint64)
        self.cols: Any = self.words.T  # (the words of each tag a column)
        self.ids: Any = np.empty(0, np.int64)
        self.shares: Any = np.empty(0, np.uint32)
        #: slot (the top ``64 - shift`` bits of a key times ``_MIX``) -> entry (-1: none)
        self.table: Any = np.full(1, -1, np.intp)
        self.shift = np.uint64(63)

    def find(self, words: Any, key: Any) -> tuple[Any, Any, Any]:
        """Each record's tag id and share (where it has none, anything), and which
        records have one (None: all of them)."""
        n = len(key)
        if not len(self.keys):
            return np.empty(n, np.int64), np.zeros(n, np.uint32), np.zeros(n, bool)
        at = self.table[(key * _MIX) >> self.shift]
        hit = at >= 0
        np.maximum(at, 0, out=at)
        for i in range(words.shape[1]):  # (a word of every record at a time)
            hit &= self.cols[i].take(at) == words[:, i]
        return self.ids[at], self.shares[at], None if hit.all() else hit

    def add(self, words: Any, keys: Any, ids: Any, shares: Any) -> None:
        """Tags not held before (one of a key already held: left out)."""
        if not len(keys):
            return
        keep = ~np.isin(keys, self.keys)
        if not keep.any():
            return
        self.keys = np.concatenate([self.keys, keys[keep]])
        self.words = np.concatenate([self.words, words[keep]])
        self.cols = np.ascontiguousarray(self.words.T)
        self.ids = np.concatenate([self.ids, ids[keep]])
        self.shares = np.concatenate([self.shares, shares[keep]])
        # a table of 16x as many slots as tags (few share a slot); where two do, one of
        # them has it (which one does not matter: a record's words are compared)
        bits = max(len(self.keys).bit_length() + 4, 8)
        self.shift = np.uint64(64 - bits)
        table = np.full(1 << bits, -1, np.intp)
        table[(self.keys * _MIX) >> self.shift] = np.arange(len(self.keys))
        self.table = table


#: an odd 64-bit multiplier: a key's slot is the top bits of its product with it
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _stable_order(keys: Any, n: int) -> Any:
    """The stable order of ``keys`` (each in ``range(n)``): as 16-bit numbers where they
    fit, which NumPy sorts by radix in one pass over them (a 64-bit key's stable sort is
    a merge sort, ~10x the time)."""
    if n <= 1 << 16:
        keys = keys.astype(np.uint16)
    return np.argsort(keys, kind="stable")


def _record_order(rec: Any, n: int) -> Any:
    """The stable order of ``rec`` (record numbers in ``range(n)``): where no record is
    named twice (a value a record: a file of many rare tags), each one's place scattered
    to its record's, no sort (a stable sort of a window's ~143,000 was ~5x the cost);
    else a stable sort."""
    place = np.full(n, -1, np.intp)
    place[rec] = np.arange(len(rec))
    order = place[place >= 0]
    return order if len(order) == len(rec) else np.argsort(rec, kind="stable")


def _grouped(keys: Any, n: int) -> list[tuple[int, Any]]:
    """``(key, the positions holding it, in order)`` for each key in ``range(n)`` that
    ``keys`` holds (other keys left out)."""
    if len(keys):
        lo, hi = int(keys.min()), int(keys.max())
        if lo == hi:  # one key (a window of one tail: PPO's, SB3's): no sort, no count
            return [(lo, np.arange(len(keys)))] if 0 <= lo < n else []
    inside = (keys >= 0) & (keys < n)
    if not inside.all():
        where = np.flatnonzero(inside)
        return [(k, where[sel]) for k, sel in _grouped(keys[where], n)]
    order = _stable_order(keys, n)
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
        self.buf = buf
        self.pos = pos
        self.n = n
        #: the buffer as aligned 64-bit words (made when first asked: see ``_Flat``)
        self._aligned: Any = None

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

    def aligned(self) -> Any:
        """The whole buffer as 64-bit words at multiples of 8 bytes from its start: a
        gather of these is a plain one, ~3x as fast as of the views at every byte (NumPy
        copies an element of a view of stride one byte by byte)."""
        if self._aligned is None:
            self._aligned = np.frombuffer(self.buf, np.uint64, count=len(self.buf) // 8)
        return self._aligned


def _chain(a: _Window) -> tuple[Any, Any]:
    """``(starts, sizes)`` of the whole records at the start of ``a`` whose data begins
    with an ``Event``'s wall time, each found from the one before by its length."""
    n = a.n
    if n < 17 or a.u1[12] != _WALL_KEY:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    cand = np.flatnonzero(a.u1[12:] == _WALL_KEY)
    # (a length past the window's end, taken as the window's: past it from here too)
    nxt = cand + 16 + np.minimum(a.u8[cand], n).view(np.int64)
    fits = nxt <= n
    if not fits.all():
        cand, nxt = cand[fits], nxt[fits]
    if not len(cand) or cand[0] != 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # a record whose next is not the next candidate: a byte 0x09 inside a record (rare),
    # or the chain's end; where its next is found among the candidates, for those only
    follows = np.zeros(len(cand), bool)
    np.equal(nxt[:-1], cand[1:], out=follows[:-1])
    bad = np.flatnonzero(~follows)
    j = np.searchsorted(cand, nxt[bad])
    found = j < len(cand)
    found[found] = cand[j[found]] == nxt[bad][found]
    pieces = []
    i = 0
    while True:
        at = int(np.searchsorted(bad, i))  # the last candidate is always one
        b = int(bad[at])
        pieces.append(np.arange(i, b + 1))
        if not found[at]:
            break
        i = int(j[at])
    idx = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    starts = cand[idx]
    return starts, nxt[idx] - starts
