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
``Flat``), and the records are decoded by *shape* (the layouts alike but for their fixed
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
the ones it knows (``Ahead``): their first records are checked and their layouts learnt
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
tags' lengths (``Tail``): the wall time's and step's share of the checksum is looked up
by each record's size, so CleanRL's eleven tags cost three groups of NumPy calls, not
thirty-three.

TensorBoard's purge rules hold here too: records of these layouts carry no
``SessionLog``; in a file older than ``brain.Event:2`` a sweep is taken only up to a
step that goes back (the general decoder purges there).

The parts it stands on live beside it, each with one reason to change: the window and the
passes every step makes over it (``_evwindow``), what a layout is and how its records
decode together (``_evlayout``), which known layout each record is (``_evindex``), the
layouts a read learns ahead (``_evahead``) and the tags of a layout of any tag
(``_evtags``). This module is the sweep: a window's records told, decoded and handed
over, and the records of no known layout read in their place.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ._evahead import FORESEEN, LATER, Ahead
from ._evcrc import shares
from ._evindex import MAX_TABLES, Index, Known
from ._evlayout import (
    MAX_LAYOUTS,
    SHAPES,
    TAILS,
    Folder,
    Layout,
    Shape,
    Tail,
    cached_layout,
    is_plain,
    is_simple,
    made,
)
from ._evtags import KnownTags, distinct, tag_words
from ._evwindow import WALL_KEY, Window, chain, groups_of, stable_order, varints
from ._tfrecord import MASK_DELTA, masked_crc32c
from ._value import plugin_name
from ._wire import F32, F64, U32S, Buf, fields, varint

__all__ = ["FastPath", "Folder", "Layout"]


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


class FastPath:
    """Learns layouts from the general decoder's records, then sweeps the records ahead
    that have them in bulk."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self.layouts: dict[tuple[bytes, bytes], int] = {}
        self.by_id: list[Layout] = []
        #: the layouts of one tag each (the cycle path's too), and those of any tag (told
        #: a record only where none of the first is its own)
        self.exact = Index(numbered=True)
        self.any_tag = Index(every_size=True)
        #: (a record's tag bytes, whether its value is a tensor) -> (its tag id, True)
        self.tag_bytes: dict[tuple[bytes, bool], tuple[int, bool]] = {}
        #: per tensor layout of any tag: whether it holds metadata, and its plugin's name
        self.lid_plugin: dict[int, tuple[bool, str | None]] = {}
        #: per shape of any tag, the tags met in its records (``KnownTags``)
        self.known_tags: dict[Shape, KnownTags] = {}
        #: the shapes, and per layout id: its shape, its checksum's base, its values' tags
        self.shape_ids: dict[tuple[Any, ...], int] = {}
        self.shapes: list[Shape] = []
        self.lid_shape: Any = np.empty(0, np.int64)
        self.lid_base: Any = np.empty(0, np.uint32)
        self.lid_tags: Any = np.empty((0, 1), np.int64)
        self.lid_any: Any = np.empty(0, bool)
        self.lid_tensor: Any = np.empty(0, bool)  # of any tag, a tensor
        #: the tails (``Tail``), and each layout's (-1: none)
        self.tail_ids: dict[tuple[int, int, int], int] = {}
        self.tails: list[Tail] = []
        self.lid_tail: Any = np.empty(0, np.int64)
        #: the tags (their prefix in front) by id, and whether each is wanted
        self.tag_ids: dict[str, int] = {}
        self.tag_names: list[str] = []
        self.tag_wanted: Any = np.empty(0, bool)
        self.window = _FIRST_WINDOW
        #: the layouts known (as ``FORESEEN`` is keyed) when the general decoder began to
        #: read records of layouts the sweeps did not know, since the last sweep (None:
        #: it did not, or not where :meth:`_foreseeable`)
        self.unswept: Known | None = None
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
            lay = cached_layout(self.folder, buf, pos, length)
        except (ValueError, IndexError):
            return None
        if lay is None or lay.fixed[12] != WALL_KEY:
            return None
        index = self.exact
        if (
            any_tag
            and len(lay.values) == 1
            and (not is_simple(lay) or lay.values[0][1] + lay.values[0][2] == lay.size - 4)
        ):  # a tensor (its metadata fixed bytes) or a simple value of no metadata
            lay, index = lay.any_tag(), self.any_tag
        lid = self._register(lay, index)
        return None if lid < 0 else self.by_id[lid]

    def _add(self, ahead: Ahead, slot: int) -> int:
        """Learn ``ahead``'s layout ``slot`` as :meth:`learn` learns it from a record of
        it (its first in a window, read in its place): its id (-1: not learnt)."""
        return self._register(ahead.layouts[slot], self.exact)

    def _register(self, lay: Layout, index: Index) -> int:
        """Layout ``lay``'s id, learnt into ``index`` where it is new (-1: a file of
        endless new layouts, past the most learnt: the general path reads on)."""
        lid = self.layouts.get(lay.key)
        if lid is not None:
            return lid
        if len(self.by_id) >= MAX_LAYOUTS:
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
            self.shapes.append(made(SHAPES, (key, simple), Shape, lay))
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
            self.tails.append(made(TAILS, tail, Tail, tail))
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
        if end - pos < _MIN_SWEEP or buf[pos + 12] != WALL_KEY:
            return pos
        size = int.from_bytes(buf[pos : pos + 8], "little") + 16
        if pos + size > end:
            return pos
        record = bytes(buf[pos : pos + size])
        early = self._lookup(size, record) < 0  # (where the general decoder would read)
        if early and self.gap:  # (what it learns is noted from where it began)
            return pos
        seen = self._foreseeable()
        ahead = None if seen is None else FORESEEN.get(seen[0])
        if ahead is not None and not ahead.layouts:
            ahead = None  # (what was learnt there is learnt one by one)
        if early and (ahead is None or not ahead.takes(size, record)):
            self._unswept(seen)
            return pos  # the record here has no known layout: not worth a sweep
        stop = min(end, pos + self.window)
        a = Window(buf, pos, stop - pos)
        starts, sizes = chain(a)
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

    def _unswept(self, seen: Known | None) -> None:
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

    def _foreseeable(self) -> Known | None:
        """The layouts known now (as :data:`FORESEEN` is keyed, and how many), where a
        sweep may learn the layouts an earlier read learnt after them (see
        :class:`Ahead`); None where it may not: a file older than ``brain.Event:2`` (its
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

    def _remember(self, seen: Known) -> None:
        """Note the layouts learnt since ``seen`` was known (by the general decoder before
        this sweep, and in it) for a later read (:class:`Ahead`): those of one tag each
        whose values are all ``simple_value`` ones with no metadata, up to the first that
        is not (a record of such a layout read in bulk is read as the general decoder
        reads it: a tensor's value, or a value's metadata, notes its tag's plugin)."""
        learnt = self.by_id[seen[1] :]
        if not learnt or self.any_tag.sizes:
            return
        keys = [lay.key for lay in learnt]
        ahead = FORESEEN.get(seen[0])
        if ahead is not None and ahead.learnt == keys:
            return  # (what a read of a file met before learns)
        plain: list[Layout] = []
        for lay in learnt:
            if not is_plain(lay):
                break
            plain.append(lay)
        if len(FORESEEN) >= MAX_TABLES:
            FORESEEN.clear()
        FORESEEN[seen[0]] = Ahead(plain, keys)

    def _others(
        self,
        a: Window,
        pos: int,
        starts: Any,
        sizes: Any,
        ids: Any,
        general: list[tuple[int, str, int, float, float]],
        fore: Any = None,
        ahead: Ahead | None = None,
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
        read learnt next too (:meth:`Ahead.ids`): the first record of such a layout in
        the window (``firsts``) has its checksums checked and its layout learnt in its
        place, the record not decoded; the others of the layout take its id once it is
        learnt."""
        try:
            folder = self.folder
            buf = a.buf
            unknown = np.flatnonzero((ids < 0) & (ids != LATER)).tolist()
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

    def _classify(self, a: Window, starts: Any, sizes: Any, rows: Any = None) -> Any:
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
            for sid, sel in groups_of(shape_of, len(self.shapes)):
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
        a: Window,
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
        for tid, sel in groups_of(tail_of, len(self.tails)):
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
        for sid, sel in [] if shape_of is None else groups_of(shape_of, len(self.shapes)):
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
                else varints(a, at + shape.step[0], shape.step[1])
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

    def _tags_at(self, a: Window, at: Any, shape: Shape, sel: Any) -> tuple[Any, Any, Any]:
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

    def _tags_of(self, a: Window, at: Any, shape: Shape) -> tuple[Any, Any, Any]:
        """The tag ids of the records at ``at`` of a layout of any tag, read from their
        bytes; each one's tag bytes' share of its data checksum; and whether its value
        is a scalar (a tensor's tag whose first metadata named the ``scalars`` plugin,
        else the general decoder reads it). The tags met before in this shape's records
        are looked up all at once (``KnownTags``); the others are told apart in bulk
        and looked up per distinct tag, not per record."""
        off, length = shape.tag_at or (0, 0)
        words, key = tag_words(a, at + off, length)
        known = self.known_tags.get(shape)
        if known is None:
            known = self.known_tags[shape] = KnownTags(words.shape[1])
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
        self, words: Any, key: Any, length: int, shape: Shape
    ) -> tuple[Any, Any, Any, tuple[Any, Any, Any, Any]]:
        """``_tags_of`` for records whose tags ``KnownTags`` does not hold (their tags'
        ``words`` and ``key``), told apart in bulk, each distinct tag looked up by its
        bytes; and the distinct scalar ones' ``(words, keys, ids, shares)``, for
        ``KnownTags.add``."""
        first, which = distinct(words, key)
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
                order = stable_order(tag, len(self.tag_names))
            else:
                order = np.argsort(rec, kind="stable")
                order = order[stable_order(tag[order], len(self.tag_names))]
            self._blocks(tag[order], steps[order], walls[order], value[order])
            return
        # (one group's records are in record order already, and so is each tag's points
        # where no tag has points in two groups: ``flush`` sorts by tag, stably)
        if len(recs) > 1 and not _tags_apart(tags, len(self.tag_names)):
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
        order = stable_order(tag, len(self.tag_names))
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


def _record_order(rec: Any, n: int) -> Any:
    """The stable order of ``rec`` (record numbers in ``range(n)``): where no record is
    named twice (a value a record: a file of many rare tags), each one's place scattered
    to its record's, no sort (a stable sort of a window's ~143,000 was ~5x the cost);
    else a stable sort."""
    place = np.full(n, -1, np.intp)
    place[rec] = np.arange(len(rec))
    order = place[place >= 0]
    return order if len(order) == len(rec) else np.argsort(rec, kind="stable")


def _tags_apart(tags: list[Any], n: int) -> bool:
    """Whether no tag id (in ``range(n)``; -1: a record that gives no point) is in two of
    ``tags`` (each group's records' tags): then each tag's points, the groups one after
    another, are in record order, with no sort of the window's points into it (a window
    of a file of many rare tags has a group a tag length, each tag's records in one of
    them: the order's scatter and its four gathers cost ~0.8 ms a window of 143,000
    records, this ~0.15)."""
    groups = np.zeros(n + 1, np.int64)  # (the last: -1's)
    seen = np.empty(n + 1, bool)
    for group in tags:
        seen[:] = False
        seen[group] = True
        groups += seen
    return bool((groups[:n] <= 1).all())
