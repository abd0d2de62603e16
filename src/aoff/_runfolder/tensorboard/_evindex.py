"""Which known layout each record of a window is: the layouts indexed by size, and the
arrays that tell a whole window at once.

Why a module of its own: telling records their layouts is the bulk path's hottest
question and its own data structure, with its own trade-offs (a dict look-up for one
record; for a window, a hash of the fixed bytes size by size, :class:`SizeGroup`, or of
every size at once from the window's aligned words, :class:`Flat`; sorted hashes found by
a table of their top bits, :class:`Slots`). An :class:`Index` keeps what a folder has
learnt; its :class:`Tables` are made once a process for the same layouts added in the
same order (a file's next read learns the same). Each list of layouts an index holds is
also a number (``_list_after``), by which what a read learnt ahead is found
(``_evahead``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ._evlayout import Layout, made
from ._evwindow import Window, groups_of

__all__ = ["FLAT_SIZES", "MAX_TABLES", "Flat", "Index", "Known", "SizeGroup", "Slots", "Tables"]


class Index:
    """Layouts by record size: each record of a window told its layout among those of its
    size. What a record is looked up in, one at a time, is kept as layouts are added (a
    dict a size); the arrays that tell a window's records (``Tables``) are made when
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
        self.tables: Tables | None = None
        #: the layouts added as one number (``_list_after``), where ``numbered``
        self.state = 0
        self.numbered = numbered
        #: whether a window's records are told every size at once however few the sizes
        #: (``Flat``; the layouts of any tag: a size's layouts fix different bytes, one
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

    def classify(self, a: Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id (-1: none here)."""
        tables = self.tables
        if tables is None:
            tables = self.tables = _tables(tuple(self.added), self)
        return tables.classify(a, starts, sizes)

    def tables_with(self, lid: int, more: tuple[Layout, ...]) -> Tables:
        """The tables of this index with ``more`` layouts added, their ids from ``lid``
        on (this index unchanged): as :meth:`classify`'s once they are added."""
        key = (*self.added, *((lid + i, lay.key) for i, lay in enumerate(more)))
        tables = _TABLES.get(key)
        if tables is None:
            index = Index()
            for old, lay in zip(self.lids, self.layouts, strict=True):
                index.add(old, lay)
            for i, lay in enumerate(more):
                index.add(lid + i, lay)
            tables = _tables(key, index)
        return tables


def _tables(key: tuple[tuple[int, tuple[bytes, bytes]], ...], index: Index) -> Tables:
    """The ``Tables`` of ``index`` (its layouts ``key``), made once a process."""
    tables: Tables = made(_TABLES, key, Tables, index, MAX_TABLES)
    return tables


#: the ``Tables`` made in this process, by their layouts (ids and keys, in the order
#: added), and the most kept
_TABLES: dict[tuple[tuple[int, tuple[bytes, bytes]], ...], Tables] = {}


MAX_TABLES = 256


#: each list of layouts added to an index (their ids and keys, in order) as a number: the
#: number of the list before the last one added, the last one's id and key -> this list's
#: (0: none added); a list's number made in a look-up, not from the whole list each time
_LISTS: dict[tuple[int, int, tuple[bytes, bytes]], int] = {}


#: a list of layouts an index holds, as ``_LISTS`` numbers it, and how many they are
Known = tuple[int, int]


def _list_after(before: int, lid: int, key: tuple[bytes, bytes]) -> int:
    """The number of the list of layouts numbered ``before`` with layout ``key`` added as
    ``lid`` (a new number for a list not met before in this process)."""
    got = _LISTS.get((before, lid, key))
    if got is None:
        # (a number is never given twice: what ``FORESEEN`` holds under a forgotten
        # list's is never asked for again, and its own bound drops it)
        if len(_LISTS) >= 1 << 14:
            _LISTS.clear()
        got = _LISTS[before, lid, key] = next(_NUMBERS)
    return got


#: the list numbers, never given twice in a process (``next`` is one call: threads that
#: read at once get numbers of their own; a number met twice would cost only speed, as
#: what ``Ahead`` holds is checked against each record)
_NUMBERS = itertools.count(1)


class Tables:
    """An index's layouts as the arrays that tell a window's records their layouts: size
    by size (``SizeGroup``), or every size at once (``Flat``)."""

    def __init__(self, index: Index) -> None:
        #: record size -> its layouts; the sizes in the order first seen, and each size's
        #: place in that list by size (-1: none)
        self.sizes = list(index.sizes)
        self.lids = list(index.lids)
        self.by_size: dict[int, SizeGroup] = {}
        for lid, lay in zip(index.lids, index.layouts, strict=True):
            group = self.by_size.get(lay.size)
            if group is None:
                # the record as 64-bit words, the last one ending at its end (overlapping)
                offs = [*range(0, lay.size - 8, 8), lay.size - 8]
                group = self.by_size[lay.size] = SizeGroup(offs)
            group.add(lid, lay, *lay.words())
        self.slots = np.full(max(self.sizes) + 1, -1, np.int64)
        self.slots[self.sizes] = np.arange(len(self.sizes))
        flat = index.every_size or len(self.sizes) >= FLAT_SIZES
        self.flat = Flat(self) if flat else None

    def classify(self, a: Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id (-1: none here)."""
        if self.flat is not None and self.flat.words:
            return self.flat.classify(self, a, starts, sizes)
        return self.grouped(a, starts, sizes)

    def grouped(self, a: Window, starts: Any, sizes: Any) -> Any:
        """Each record's layout id, size by size (-1: none here)."""
        ids = np.full(len(starts), -1, np.int64)
        slots = self.slots
        slot = np.where(sizes < len(slots), slots[np.minimum(sizes, len(slots) - 1)], -1)
        for g, sel in groups_of(slot, len(self.sizes)):
            ids[sel] = self.by_size[self.sizes[g]].classify(a, starts[sel])
        return ids


#: the fewest record sizes told at once (fewer: size by size, a few NumPy calls each, are
#: as fast: a file of many rare tags learns ~4 sizes of ~20 layouts each)
FLAT_SIZES = 6


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


class Flat:
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
    their sizes are told size by size (``SizeGroup``)."""

    def __init__(self, index: Tables) -> None:
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
        self.places = Slots(self.keys)
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

    def classify(self, index: Tables, a: Window, starts: Any, sizes: Any) -> Any:
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


class Slots:
    """Sorted 64-bit hashes (``Flat``'s, ``SizeGroup``'s keys) found by a table of
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


class SizeGroup:
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
        self.places = Slots(self.keys)
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

    def classify(self, a: Window, starts: Any) -> Any:
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
