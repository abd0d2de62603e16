"""A record's byte layout: learnt from one record, and how the records of a layout are
decoded together.

Why a module of its own: what a layout *is* (its fixed bytes, where its wall time, step
and values lie, its checksum's tables: :class:`Layout`, :func:`layout_of`, the
process-wide cache :func:`known`) and the two ways a group of records of alike layouts
is decoded in bulk (a :class:`Tail`: one-value layouts of one tag each, wall time and
step first, grouped by their value's distance from the record's end; a :class:`Shape`:
layouts alike but for their fixed bytes) change with the wire format, not with how a
sweep walks a file (``_evfast``) or how a record is told its layout (``_evindex``).
The caches here are per process: a file's next read, or another run of its client,
meets the same layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .._tagseries import Columns
from ._evcrc import byte_tables, flat_rows, masked
from ._evwindow import WALL_KEY, Window, at_byte, varint_words
from ._tfrecord import crc32c
from ._wire import Buf, fields, varint

__all__ = [
    "DT_DOUBLE",
    "DT_FLOAT",
    "MAX_LAYOUTS",
    "PAD",
    "SHAPES",
    "SIMPLE_VALUE_KEY",
    "TAILS",
    "Folder",
    "Layout",
    "Shape",
    "Tail",
    "cached_layout",
    "is_plain",
    "is_simple",
    "layout_of",
    "made",
    "padded_rows",
]


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


#: the most layouts learnt for a folder
MAX_LAYOUTS = 4096


DT_FLOAT, DT_DOUBLE = 1, 2


#: a ``Summary.Value``'s ``simple_value`` key (field 2, 32-bit)
SIMPLE_VALUE_KEY = 0x15


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
        record's end (overlapping): how ``Index`` compares and hashes records."""
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
            self._facts = (Tail.key(self), Shape.key(self), is_simple(self), self.base())
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
            if len(_CRC_TABLES) >= MAX_LAYOUTS:
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


def cached_layout(folder: Folder, buf: Buf, pos: int, length: int) -> Layout | None:
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
                (width == 4 and lay.fixed[off - 1] == SIMPLE_VALUE_KEY)
                or folder.plugins.get(tag) == "scalars"
                for tag, off, width in lay.values
            ):
                return lay
    lay = layout_of(folder, buf, pos, length)
    if lay is not None:
        if _LAYOUT_COUNT[0] >= MAX_LAYOUTS:
            _LAYOUTS.clear()
            _LAYOUT_COUNT[0] = 0
        mask = int.from_bytes(lay.mask, "little")
        by = _LAYOUTS.setdefault(size, {}).setdefault(mask, {})
        by[int.from_bytes(lay.fixed, "little") & mask] = lay
        _LAYOUT_COUNT[0] += 1
    return lay


#: the shapes and tails made in this process (each made from its key alone, or from the
#: first layout of its key, as a read makes it): a read that meets them again reuses them
SHAPES: dict[Any, Any] = {}


TAILS: dict[Any, Any] = {}


def made(cache: dict[Any, Any], key: Any, make: Any, arg: Any, most: int = 0) -> Any:
    """``cache[key]``, made by ``make(arg)`` the first time; at most ``most`` kept
    (``MAX_LAYOUTS`` where 0), all forgotten once that many are."""
    got = cache.get(key)
    if got is None:
        if len(cache) >= (most or MAX_LAYOUTS):
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
    width = {DT_FLOAT: 4, DT_DOUBLE: 8}.get(dtype)
    if width is None or e - s != width:
        return None
    if (num, wire) in ((4, 2), (5, 2), (5, 5)) and width == 4:
        return s, 4
    if (num, wire) in ((4, 2), (6, 2), (6, 1)) and width == 8:
        return s, 8
    return None


#: record offsets below which ``padded_rows`` has rows of zeros (a tail's head bytes lie
#: at 13..29)
PAD = 40


_PADDED: list[Any] = [np.zeros(0, np.uint32)]


def padded_rows(after: int) -> Any:
    """``flat_rows`` (rows ``0..after`` at least) after ``PAD`` rows of zeros: a byte at
    record offset ``o`` of a record of ``size`` bytes has its row at ``size * 256`` of the
    table from ``(PAD - o - 5) * 256`` (one add an element, not three)."""
    flat = flat_rows(after)
    padded = _PADDED[0]
    if len(padded) != len(flat) + PAD * 256:
        padded = _PADDED[0] = np.concatenate([np.zeros(PAD * 256, np.uint32), flat])
    return padded


class Tail:
    """One-value layouts of one tag each, the wall time and the step where torch's,
    tensorboardX's and SB3's writers put them (the first fields), the value at one
    distance from the record's end: their records are decoded together whatever the
    length of their tags (CleanRL's eleven tags are three of these, one per step width,
    not thirty-three shapes). Each byte's share of the data checksum is looked up in
    ``padded_rows`` (the wall time's and the step's by each record's size; a byte alike in
    every record once a size)."""

    WALL, STEP = 13, 22

    def __init__(self, key: tuple[int, int, int]) -> None:
        self.step_width, self.value_end, self.width = key
        #: the wall time's and the step's bytes (record offsets)
        self.head = np.asarray(
            [*range(self.WALL, self.WALL + 8), *range(self.STEP, self.STEP + self.step_width)],
            np.intp,
        )
        #: where each head byte's and each value byte's table starts in ``padded_rows``
        #: (a value byte at ``size - value_end + i`` has ``value_end - i - 5`` data bytes
        #: after it: the data ends 4 bytes before the record)
        self.head_base = ((PAD - self.head - 5) * 256).astype(np.intp)
        #: the step's fixed continuation bits (each byte but its last): their share of the
        #: checksum, as ``padded_rows`` places (by record size, from there)
        self.head_fixed_at = [int(self.head_base[8 + i]) + 0x80 for i in range(self.step_width - 1)]
        self.value_base = [(PAD + self.value_end - i - 5) * 256 for i in range(self.width)]

    @staticmethod
    def key(lay: Layout, any_tag: bool = False) -> tuple[int, int, int] | None:
        """``(step width, value's distance from the end, value width)``; None: not one.
        ``any_tag``: of a layout of any tag (its tag's bytes, variable, are not among
        its variable bytes: their share of the checksum is taken per tag)."""
        if len(lay.values) != 1 or (lay.tag_at is not None) != any_tag or lay.step is None:
            return None
        (_tag, off, width), (step, step_width) = lay.values[0], lay.step
        if lay.wall != Tail.WALL or step != Tail.STEP or step_width > 8:
            return None
        want = [*range(13, 21), *range(22, 22 + step_width), *range(off, off + width)]
        if sorted(lay.varbytes) != want:
            return None
        return step_width, lay.size - off, width

    def take(self, a: Window, at: Any, sizes: Any, base: Any) -> tuple[Any, Any, Any, Any]:
        """``(steps, wall times, values, whether each record's data checksum fails)``.

        The checksum's bytes are read from the fields as gathered (the wall times, the
        step's word, the values, each seen as rows of bytes), not gathered again a byte
        at a time (that was ~a quarter of this). Where every record is of one size (a
        shape's: the records of a layout of any tag), each byte's table is one row: its
        bytes index it as they are, no record's size added to each of them."""
        top = int(sizes.max())
        one = int(sizes.min()) == top
        word_type = "<u4" if self.step_width <= 4 else "<u8"
        value_type = "<f4" if self.width == 4 else "<f8"
        if one and len(at):  # each record's bytes from its wall time on, gathered whole
            span = a.span(at + self.WALL, top - self.WALL)
            word = at_byte(span, self.STEP - self.WALL, word_type)
            walls = at_byte(span, 0, "<f8")
            values = at_byte(span, top - self.value_end - self.WALL, value_type)
            stored = at_byte(span, top - 4 - self.WALL, "<u4")
        else:
            word = (a.u4 if self.step_width <= 4 else a.u8)[at + self.STEP]
            walls = a.f8[at + self.WALL]
            values = (a.f4 if self.width == 4 else a.f8)[at + sizes - self.value_end]
            stored = a.u4[at + sizes - 4]
        steps = varint_words(word, self.step_width)
        rows = padded_rows(top)
        at_size = None if one else sizes.astype(np.intp, copy=False) << 8
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
                if not varies[i]:
                    once.append(int(self.head_base[head + i]) + first[i])
                elif at_size is None:  # (one size: the size's row of the byte's table)
                    row = int(self.head_base[head + i]) + (top << 8)
                    crc ^= rows[row : row + 256].take(got[i])
                else:  # (a row at a time: no index array of every row)
                    crc ^= rows[self.head_base[head + i] :].take(np.add(got[i], at_size))
            head += width
        if once and at_size is None:
            crc ^= np.bitwise_xor.reduce(rows.take(np.asarray(once, np.intp) + (top << 8)))
        elif once:
            index = np.arange(0, (top + 1) * 256, 256, dtype=np.intp)
            index = index + np.asarray(once, np.intp)[:, None]
            crc ^= np.bitwise_xor.reduce(rows.take(index), axis=0)[sizes]
        got, first, varies = _byte_rows(values, self.width)
        for i in range(self.width):
            table = rows[self.value_base[i] : self.value_base[i] + 256]
            crc ^= table.take(got[i]) if varies[i] else table[first[i]]
        return steps, walls, values, masked(crc) != stored


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


def is_simple(lay: Layout) -> bool:
    """Whether a one-value layout's value is a ``simple_value`` (else a tensor's number:
    the byte before it is a length, 4 or 8, or a packed field's key)."""
    _tag, off, width = lay.values[0]
    return width == 4 and lay.fixed[off - 1] == SIMPLE_VALUE_KEY


def is_plain(lay: Layout) -> bool:
    """Whether a layout of one tag holds only ``simple_value`` values without metadata:
    its records' points are all a record says (no plugin of a tag to note)."""
    if lay.tag_at is not None or lay.fixed[12] != WALL_KEY:
        return False
    if not all(w == 4 and lay.fixed[off - 1] == SIMPLE_VALUE_KEY for _t, off, w in lay.values):
        return False
    for num, wire, s, e in fields(lay.fixed, 12, lay.size - 4):
        if num == 5 and wire == 2:
            for _n1, _w1, s1, e1 in fields(lay.fixed, s, e):
                if any(n2 == 9 for n2, _w2, _s2, _e2 in fields(lay.fixed, s1, e1)):
                    return False
    return True


class Shape:
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
        #: a layout of any tag whose wall time, step and value lie where a ``Tail``'s
        #: do: its records' columns and checksums read as that tail reads them (the
        #: fields as gathered, a byte alike in every record once), not byte by byte
        self.tail: Tail | None = None
        if lay.tag_at is not None:
            tail = Tail.key(lay, any_tag=True)
            self.tail = None if tail is None else made(TAILS, tail, Tail, tail)
            at, length = lay.tag_at
            data = lay.size - 16
            self.tag_tables = byte_tables(
                [data - (at + i - 12) - 1 for i in range(length)], [0] * length
            )
            self.tensor = not is_simple(lay)

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
