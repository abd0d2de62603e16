"""The cycle path: runs of event records that repeat a cycle of layouts, decoded as
rows of a 2-D array.

Why a module of its own: most files are a short cycle of layouts repeated (torch's
``SummaryWriter`` writes the same tags in the same order every step, aoff one record per
step). Once the general decoder (``_evfolder``) has seen a cycle twice in a row, the
bytes ahead are laid out as a 2-D array, one row per cycle, and checked against it in
bulk: every fixed byte equal (this checks each header and its checksum), each step
varint's continuation bits where the layout has them; the rows that match are decoded
column by column through strided views, with no search for where records start. This is
the fastest path; a file whose records follow no cycle (CleanRL's episode returns
between its losses) is swept by ``_evfast`` instead, which finds each record's start.

Each record's own data checksum is checked (``_evcrc``, a block of rows at once), and
TensorBoard's purge rules hold as in ``_evfast``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._evcrc import RowChecksums
from ._evlayout import Folder, Layout
from ._tfrecord import masked_crc32c
from ._wire import Buf

#: learns the layout of the record at a position of a buffer, of a data length
#: (``FastPath.learn``); None: not one the bulk paths read
Learn = Callable[[Buf, int, int], Layout | None]

__all__ = ["CyclePath"]

#: rows tried in the first block after a cycle is found, how much bigger each next block
#: is (a block's fixed cost is ~100 NumPy calls; rows past where the cycle breaks cost only
#: their comparison, two passes over their bytes), and the most bytes in a block
_FIRST_ROWS = 16
_GROWTH = 16
_BLOCK_BYTES = 4 << 20
#: the longest cycle of layouts looked for
_MAX_PERIOD = 64
#: cycles kept for reuse
_MAX_CYCLES = 64


class _Cycle:
    """A cycle of layouts, laid out as one row of a 2-D array; blocks are a multiple of 8
    rows, so that a block's bytes are whole 64-bit words (compared 8 bytes at a time)."""

    def __init__(self, layouts: list[Layout]) -> None:
        self.layouts = layouts
        self.size = size = sum(lay.size for lay in layouts)
        self.starts = np.cumsum([0] + [lay.size for lay in layouts[:-1]]).tolist()
        self.rows = _FIRST_ROWS
        self.max_rows = max(_BLOCK_BYTES // size // 8 * 8, 8)
        # eight rows as words, compared with a block's rows eight at a time (broadcast:
        # a block's worth of repeated rows would be built and paged in anew each read)
        self.fixed = np.frombuffer(b"".join(lay.fixed for lay in layouts) * 8, np.uint64)
        self.mask = np.frombuffer(b"".join(lay.mask for lay in layouts) * 8, np.uint64)
        #: one row's, as bytes (the last rows of a buffer, fewer than eight)
        self.fixed_row = np.frombuffer(b"".join(lay.fixed for lay in layouts), np.uint8)
        self.mask_row = np.frombuffer(b"".join(lay.mask for lay in layouts), np.uint8)
        #: each tag's (record in the cycle, offset in the row, width), in record order
        self.tags: dict[str, list[tuple[int, int, int]]] = {}
        for j, (lay, at) in enumerate(zip(layouts, self.starts, strict=True)):
            for tag, off, width in lay.values:
                self.tags.setdefault(tag, []).append((j, at + off, width))
        self._checksums: RowChecksums | None = None

    def checksums(self) -> RowChecksums:
        """The cycle's records' checksum check (built at its first block)."""
        if self._checksums is None:
            key = tuple(lay.key for lay in self.layouts)
            self._checksums = _ROW_CHECKSUMS.get(key)
        if self._checksums is None:
            records = []
            for lay, at in zip(self.layouts, self.starts, strict=True):
                base, runs = lay.crc_tables()
                var = [(off + i, tables[i]) for off, width, tables in runs for i in range(width)]
                records.append((at, lay.size, base, var))
            self._checksums = RowChecksums(self.size, records)
            if len(_ROW_CHECKSUMS) >= _MAX_CYCLES or _KEPT_BYTES[0] > _MAX_KEPT_BYTES:
                _ROW_CHECKSUMS.clear()
                _KEPT_BYTES[0] = 0
            _ROW_CHECKSUMS[key] = self._checksums
            _KEPT_BYTES[0] += self._checksums.tables.nbytes
        return self._checksums


#: the cycles' checksum checks met in this process, by their layouts (a file's cycles
#: recur in its next read and in its client's other runs)
_ROW_CHECKSUMS: dict[tuple[tuple[bytes, bytes], ...], RowChecksums] = {}
#: their tables' bytes, and the most kept (a table is 1 KiB a variable byte of a cycle)
_KEPT_BYTES = [0]
_MAX_KEPT_BYTES = 16 << 20


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


def _widened(cycle: _Cycle, buf: Buf, pos: int, end: int) -> bool:
    """Whether the row at ``pos`` that breaks ``cycle`` does so at a record one byte
    longer than its layout whose step's varint is one byte wider (records before it in
    the row of their layouts' sizes)."""
    for lay in cycle.layouts:
        if pos + 12 > end:
            return False
        size = int.from_bytes(buf[pos : pos + 8], "little") + 16
        if size != lay.size:
            if size != lay.size + 1 or lay.step is None:
                return False
            at, width = lay.step
            if pos + at + width >= end:
                return False
            wide = buf[pos + at : pos + at + width + 1]
            return all(b & 0x80 for b in wide[:-1]) and not wide[-1] & 0x80
        pos += size
    return False


def _wider(old: Layout, new: Layout) -> bool:
    """Whether ``new`` is ``old`` with its step's varint one byte wider, every other byte
    of the event alike (the same tags, metadata and value fields: the general decoder
    has read a record of ``old``, so it would learn nothing from one of ``new``)."""
    if old.step is None or new.step != (old.step[0], old.step[1] + 1):
        return False
    if new.size != old.size + 1:
        return False
    at, width = old.step
    head, tail = slice(12, at), slice(at + width + 1, new.size - 4)
    return (
        new.fixed[head] == old.fixed[head]
        and new.mask[head] == old.mask[head]
        and new.fixed[tail] == old.fixed[at + width : old.size - 4]
        and new.mask[tail] == old.mask[at + width : old.size - 4]
    )


class CyclePath:
    """Learns the cycle of layouts from the general decoder's records' layouts, then
    decodes the records ahead that follow it in bulk."""

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self.layouts: dict[tuple[bytes, bytes], int] = {}
        self.by_id: list[Layout] = []
        #: each layout object met -> its id here, and the object (kept, so that its
        #: ``id()`` names no other): the sweep hands on the same objects, looked up
        #: without hashing their bytes
        self.by_object: dict[int, tuple[int, Layout]] = {}
        self.history: list[int] = []
        self.cycle: _Cycle | None = None
        #: cycles met before, by their layouts (a file comes back to its cycle after
        #: each break: a chunk's end, a step that needs one more varint byte)
        self.cycles: dict[tuple[int, ...], _Cycle] = {}
        #: a block's masked words and their comparison (one pair for all cycles)
        self.scratch: np.ndarray[Any, np.dtype[np.uint64]] = np.empty(0, np.uint64)
        self.flags: np.ndarray[Any, np.dtype[np.bool_]] = np.empty(0, bool)
        #: records decoded here (the folder's ``bulk_records`` counts the sweep's too)
        self.records = 0
        #: whether the last cycle broke where a record's step needs one more varint byte
        #: (the same tags, one byte longer: the cycle comes back as soon as they are learnt)
        self.widened = False
        self.widened_from: list[Layout] = []
        #: whether the cycle is a guess (``widen``) no row of which is taken yet: a guess
        #: not followed is not guessed again (the general decoder reads on)
        self.guessed = False
        #: the guessed wider cycle: the buffer and position it starts at, and itself
        self.pending: tuple[Buf, int, _Cycle] | None = None

    # -- learning ---------------------------------------------------------------------------
    def forget(self) -> None:
        """A record was skipped: the records before it are no cycle with those after."""
        self.history.clear()
        self.pending = None

    def adopt(self, layouts: list[Layout]) -> None:
        """The layouts of records the sweep has just read, in order: a cycle may be
        found in them (history starts with them)."""
        self.history.clear()
        if len(layouts) < 2:
            return
        known = self.by_object.get
        history = self.history
        for lay in layouts[:-1]:  # the last one, learnt below, looks for the cycle once
            got = known(id(lay))
            history.append(self._id(lay) if got is None else got[0])
        self.learn(layouts[-1])

    def _id(self, lay: Layout) -> int:
        """``lay``'s id here (a new one for a layout not met before)."""
        got = self.by_object.get(id(lay))
        if got is not None:
            return got[0]
        lid = self.layouts.get(lay.key)
        if lid is None:
            lid = self.layouts[lay.key] = len(self.by_id)
            self.by_id.append(lay)
        self.by_object[id(lay)] = (lid, lay)
        return lid

    def learn(self, lay: Layout | None) -> None:
        """Note the layout of a record the general decoder has just read (None: none
        the bulk path reads)."""
        history = self.history
        if lay is None:
            history.clear()
            return
        history.append(self._id(lay))
        if len(history) > 2 * _MAX_PERIOD:
            del history[:-_MAX_PERIOD]
        n = len(history)
        last = history[-1]
        for p in range(1, min(_MAX_PERIOD, n // 2) + 1):
            # the last record's layout one period back first (two slices compared for
            # each period, a record at a time, were most of a sweep's hand-on)
            if history[n - 1 - p] == last and history[n - p :] == history[n - 2 * p : n - p]:
                ids = tuple(history[n - p :])
                cycle = self.cycles.get(ids)
                if cycle is None:
                    if len(self.cycles) >= _MAX_CYCLES:
                        self.cycles.clear()
                    cycle = self.cycles[ids] = _Cycle([self.by_id[i] for i in ids])
                self.cycle = cycle
                return

    def widen(self, learn: Learn, buf: Buf, pos: int, end: int) -> None:
        """Where the cycle broke at a step one varint byte wider (:attr:`widened`), at a
        row whose records from the ``j``-th on are one byte longer (a cycle's row need
        not start where a step does): guess the wider cycle from the ``p`` records from
        that one on (``p`` the cycle's period, each checked by its own header and data
        checksum as the general decoder checks them, its layout learnt by ``learn``, and
        each the cycle's layout in its place but for the step one byte wider:
        ``_wider``). The general decoder reads the row's first ``j`` records, and the
        cycle path the rest from where the guess starts (:meth:`resume`), every row
        checked as any cycle's (its fixed bytes and each record's data checksum): a guess
        it does not follow costs a comparison. Reading two rows one by one to find the
        cycle again (16 of the ~44 records an SB3 file's read decoded one by one, each
        ~20-40 us) was ~5% of that read at 300,000 steps."""
        self.pending = None
        old = self.widened_from
        p = len(old)
        view = memoryview(buf)
        wider: list[Layout | None] = [None] * p
        first = start = -1
        for i in range(2 * p):
            if pos + 12 > end:
                return
            length = int.from_bytes(buf[pos : pos + 8], "little")
            stop = pos + 12 + length
            if first < 0 and length + 16 == old[i % p].size:
                if i + 1 == p:
                    return  # a row of the cycle's sizes: not where it widens
                pos = stop + 4  # (one of the row's first records, the general decoder's)
                continue
            if (
                stop + 4 > end
                or masked_crc32c(view[pos : pos + 8])
                != int.from_bytes(buf[pos + 8 : pos + 12], "little")
                or masked_crc32c(view[pos + 12 : stop])
                != int.from_bytes(buf[stop : stop + 4], "little")
            ):
                return
            lay = learn(buf, pos, length)
            if lay is None or not _wider(old[i % p], lay):
                return
            if first < 0:
                first, start = i, pos
            wider[i % p] = lay
            pos = stop + 4
            if i - first + 1 == p:
                break
        else:
            return
        layouts = [wider[(first + t) % p] for t in range(p)]
        ids = tuple(self._id(lay) for lay in layouts if lay is not None)
        cycle = self.cycles.get(ids)
        if cycle is None:
            if len(self.cycles) >= _MAX_CYCLES:
                self.cycles.clear()
            cycle = self.cycles[ids] = _Cycle([self.by_id[i] for i in ids])
        self.pending = (buf, start, cycle)

    def resume(self, buf: Buf, pos: int) -> bool:
        """Whether the guessed wider cycle (:meth:`widen`) starts at ``pos``: then it is
        the cycle (the cycle path reads on from there)."""
        pending = self.pending
        if pending is None or pending[0] is not buf or pending[1] != pos:
            return False
        self.pending = None
        self.history.clear()
        self.cycle = pending[2]
        self.guessed = True
        return True

    # -- bulk -------------------------------------------------------------------------------
    def run(self, buf: Buf, pos: int, end: int) -> int:
        """Decode the records from ``pos`` that follow the cycle; the position after them."""
        cycle = self.cycle
        if cycle is None:
            return pos
        size = cycle.size
        while True:
            rows = (end - pos) // size
            m = min(cycle.rows, rows) // 8 * 8
            if m:
                good = self._matching(buf, pos, m)
            elif rows:  # the last rows before the end, fewer than eight: byte by byte (a
                m = rows  # sweep of a few records costs ~20x as much a record)
                got = np.frombuffer(buf, np.uint8, count=m * size, offset=pos).reshape(m, size)
                wrong = ((got & cycle.mask_row) != cycle.fixed_row).any(axis=1)
                first = int(wrong.argmax())
                good = first if wrong[first] else m
            else:
                return pos
            if good:
                good = self._take(buf, pos, good)
            guessed = self.guessed and not good
            self.guessed = guessed
            self.history.clear()  # what it holds is no longer the records just before
            self.folder.bulk_records += good * len(cycle.layouts)
            self.records += good * len(cycle.layouts)
            pos += good * size
            if good < m:  # the cycle ends here: back to the general decoder
                self.cycle = None
                cycle.rows = _FIRST_ROWS
                # (a guess that took no row: not guessed again here)
                self.widened = not guessed and _widened(cycle, buf, pos, end)
                self.guessed = False
                self.widened_from = cycle.layouts
                return pos
            cycle.rows = min(cycle.rows * _GROWTH, cycle.max_rows)

    def _matching(self, buf: Buf, pos: int, m: int) -> int:
        """How many of the ``m`` rows at ``pos`` (a multiple of 8) hold the cycle's fixed
        bytes, compared 8 bytes at a time."""
        cycle = self.cycle
        assert cycle is not None
        size = cycle.size
        words = m * size // 8
        if words > len(self.scratch):  # room for twice as many, kept for the next block
            self.scratch = np.empty(max(words, 2 * len(self.scratch)), np.uint64)
            self.flags = np.empty(len(self.scratch), bool)
        got = np.frombuffer(buf, np.uint64, count=words, offset=pos).reshape(-1, size)
        scratch = self.scratch[:words].reshape(-1, size)
        masked = np.bitwise_and(got, cycle.mask, out=scratch)
        diff = self.flags[:words]
        np.not_equal(masked, cycle.fixed, out=diff.reshape(-1, size))
        first = int(diff.argmax())
        return first * 8 // size if diff[first] else m

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
        return cycle.checksums().first_bad(buf, pos, m) if m else 0

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
