"""One TensorBoard run folder's event files, read incrementally into scalar series.

Why a module of its own: :func:`aoff.read_scalars` must read event files nobody here
wrote, exactly as TensorBoard's ``EventAccumulator`` reads them, and read a growing file
again from where it stopped. This module keeps each file's offset and the folder's
TensorBoard state (the file version, each tag's plugin, the last step seen), walks the
TFRecord framing and decodes any record in full (the general path); records of a layout
seen before go through the bulk paths: ``_evcycle`` while they repeat a cycle of
layouts, ``_evfast`` in any order.

What is read, as ``EventAccumulator`` shows it: every ``Value.simple_value``; a
``Value.tensor`` holding one float for a tag whose first metadata names the ``scalars``
plugin (torch's ``new_style=True``, TF2's ``tf.summary.scalar``); TensorBoard's purge
rules (a ``SessionLog.START`` at step ``s`` in a ``brain.Event:2`` file drops the points
read before it with a step ``>= s``; an older file drops a tag's points from an
out-of-order step on).

What to do at a corrupt record is the caller's policy, not a second parser:
``stop_at_corrupt=False`` (:func:`aoff.read_scalars`) skips a record whose checksum fails
in the middle of a file and counts it, where TensorBoard stops reading the file;
``stop_at_corrupt=True`` (``aoff ls/show``, through ``_scan``) stops there as TensorBoard
does and names the place (:attr:`Cursor.stopped`), so what they print is what TensorBoard
shows. A torn last record is left for the next read (a writer may still be appending it)
and reported.
"""

from __future__ import annotations

import os
import re
import select
import stat
import struct
import weakref
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .._heapkept import keep_freed_memory
from .._tagseries import Columns, Series
from ._evcycle import CyclePath
from ._evfast import FastPath
from ._tfrecord import masked_crc32c
from ._value import plugin_name, tensor_scalar
from ._wire import F32, F64, HEADER, U32S, Buf, fields, varint

__all__ = ["CHUNK", "Cursor", "EventFolder"]

#: bytes read at a time, at most: a chunk (with a record the last one cut, and ``_SLACK``)
#: under the 32 MiB at which glibc maps a block of its own, however ``_heapkept`` moved
#: its thresholds, so that it comes from the heap and its pages stay for the next chunk
#: and read (each chunk is freed before the next is made: two at once, and a sweep's
#: temporaries, outgrew what the heap keeps, 64 MiB). Chunks of 32 MiB were each mapped
#: and faulted in again: a warm read of an 84 MB file of scalars among media took
#: ~8,200-12,000 page faults, of a 222 MB file of aoff's ~62,000 (525 ms of CPU, a third
#: of it system time); now ~130 and ~300 (371 ms)
CHUNK = 31 << 20
#: bytes asked for beyond a regular file's size (it may have grown since its ``stat``)
_SLACK = 64 << 10
_START = 1  # SessionLog.START
#: how often a read of a pipe that waits for its writer wakes to let Ctrl+C through
_WAKE_S = 0.1


@dataclass
class Cursor:
    """Where the reading of one file stands."""

    path: str
    #: bytes read and decoded (a torn tail starts here)
    offset: int = 0
    #: records skipped because their checksum failed
    corrupt: int = 0
    #: bytes after ``offset`` at the end of the last read: a torn (or still written) record
    torn: int = 0
    #: read no further than this byte (``aoff ls`` reads a big file's ends): a record cut
    #: there is not torn
    end: int | None = None
    #: why reading stopped for good (``stop_at_corrupt``): ``"a corrupt record at byte N"``
    stopped: str | None = None
    #: the file's size, mtime and inode when its end was last read: a read that finds
    #: them unchanged is one ``stat``
    seen: tuple[int, int, int] | None = None
    #: in a bad region (no record found in it yet): its chunks are one corrupt place
    resyncing: bool = False


class EventFolder:
    """A TensorBoard run: one folder's event files, read in name order.

    ``prefix`` goes before every tag (a sub-folder's path and ``/``: TensorBoard shows
    each sub-folder as a run of its own). ``tags``: only these (with their prefix).
    ``stop_at_corrupt``: the policy at a corrupt record (see the module). ``pipes``: read
    a file that is not a regular one (a FIFO) as a stream, once, waiting for its writer
    (``aoff show``); otherwise it is refused with ``OSError``, as an incremental reader
    that reads a file again from where it stopped cannot read a pipe. ``progress`` is
    called with the bytes of each ``chunk`` read."""

    def __init__(
        self,
        prefix: str = "",
        tags: Collection[str] | None = None,
        *,
        stop_at_corrupt: bool = False,
        pipes: bool = False,
        progress: Callable[[int], None] | None = None,
        chunk: int = CHUNK,
    ) -> None:
        self.prefix = prefix
        self.stop_at_corrupt = stop_at_corrupt
        self.pipes = pipes
        self.progress = progress
        self.chunk = chunk
        self.tags = None if tags is None else frozenset(tags)
        self.cursors: dict[str, Cursor] = {}
        self.series: dict[str, Series] = {}
        #: ``brain.Event:N``'s N, as ``EventAccumulator`` parses it
        self.file_version: float | None = None
        self.most_recent_step = -1
        #: tag -> plugin name of its first metadata (None: metadata without a plugin)
        self.plugins: dict[str, str | None] = {}
        #: purges that reached points already handed out: (step, tags or None for all)
        self.retracted: list[tuple[int, frozenset[str] | None]] = []
        self.handed_out = False
        self.bytes_read = 0
        #: records decoded by the bulk path (the rest went through :meth:`event`)
        self.bulk_records = 0
        # the bulk paths reach their folder through a weak proxy, not a reference: a
        # strong one back would make every run's reading state (~80 objects) a cycle that
        # only the cyclic collector frees, seconds for thousands of runs at a later,
        # unrelated allocation; without it a reader's state is freed the moment it is
        # dropped (the folder owns its paths, so the proxy never outlives its target)
        me = weakref.proxy(self)
        self.fast = FastPath(me)
        self.cycle = CyclePath(me)
        # a read's buffer and temporaries reused from the heap by the next read, not
        # paged in again (``_heapkept``: once a process)
        keep_freed_memory()

    # -- files ------------------------------------------------------------------------------
    def read(self, files: list[str]) -> None:
        """Read what was appended to ``files`` (sorted by name) since the last call.

        Raises ``OSError`` for a file that cannot be opened or read."""
        for path in files:
            cur = self.cursors.get(path)
            if cur is None:
                cur = self.cursors[path] = Cursor(path)
            self._read_file(cur)

    def _read_file(self, cur: Cursor) -> None:
        if cur.stopped is not None:  # stopped at a corrupt record: nothing after it counts
            return
        if cur.seen is not None and cur.end is None:  # unchanged since the last read: a stat
            try:
                now = os.stat(cur.path)
            except OSError:
                pass  # opened below, which says what is wrong
            else:
                if (now.st_size, now.st_mtime_ns, now.st_ino) == cur.seen:
                    return
        with _opened(cur, pipes=self.pipes) as (readinto, st):
            size = None if st is None else st.st_size
            left = b""  # the start of a record the last chunk cut
            while True:
                want = self.chunk
                if size is not None:  # a buffer as big as the file holds, not a whole chunk
                    want = min(want, max(size - cur.offset - len(left), 0) + _SLACK)
                if cur.end is not None:
                    want = max(min(want, cur.end - cur.offset - len(left)), 0)
                # the chunk is read in place after what is left (no copy of the chunk)
                buf = bytearray(len(left) + want)
                buf[: len(left)] = left
                got = readinto(memoryview(buf)[len(left) :]) if want else 0
                self.bytes_read += got
                if got and self.progress is not None:
                    self.progress(got)
                # a regular file's short read is its end (a pipe's is not)
                final = not got or (size is not None and got < want)
                del buf[len(left) + got :]
                used = self._walk(cur, buf, final)
                cur.offset += used
                left = bytes(buf[used:])
                if final or cur.stopped is not None:
                    cur.torn = len(left) if cur.end is None and cur.stopped is None else 0
                    if st is not None:  # as it was before the read: what grew since is new
                        cur.seen = (st.st_size, st.st_mtime_ns, st.st_ino)
                    return
                del buf  # (freed before the next chunk's is made: one in the heap at a time)

    def _walk(self, cur: Cursor, buf: bytearray, final: bool) -> int:
        """Decode the whole records at the start of ``buf``; the bytes used (the sweeps'
        points handed over to the series by the end)."""
        try:
            return self._records(cur, buf, final)
        finally:
            self.fast.flush()

    def _records(self, cur: Cursor, buf: bytearray, final: bool) -> int:
        n = len(buf)
        pos = 0
        view = memoryview(buf)
        header = HEADER.unpack_from
        u32 = U32S.unpack_from
        fast = self.fast
        cycle = self.cycle
        #: records left for the general decoder to find the cycle again in, no sweep
        relearn = 0
        while n - pos >= 12:
            while True:  # the bulk paths while they move: a cycle, else a sweep
                was = pos
                following = cycle.cycle is not None
                pos = cycle.run(buf, pos, n)
                if pos != was:
                    fast.passed()
                if following and cycle.cycle is None and cycle.widened:
                    # the cycle broke where the step widens: its records one byte longer
                    # are read one by one for a few rows (their layouts learnt), until
                    # the cycle path finds the wider cycle (a sweep would learn them at
                    # ~3x the cost and read on past where the cycle is back)
                    relearn = 3 * len(cycle.widened_from)
                    cycle.widen(fast.learn, buf, pos, n)  # (often: the wider cycle guessed)
                if relearn and cycle.cycle is None:
                    if cycle.resume(buf, pos):
                        continue  # the guessed wider cycle starts here
                    relearn -= 1
                    break
                relearn = 0
                swept = fast.run(buf, pos, n)
                if swept != pos:  # a cycle may be in what the sweep read
                    cycle.adopt(fast.tail)
                pos = swept
                if pos == was or n - pos < 12:
                    break
            if n - pos < 12:
                break
            length, hcrc = header(buf, pos)
            if masked_crc32c(view[pos : pos + 8]) != hcrc:
                if self.stop_at_corrupt:
                    return self._stop(cur, pos, "a corrupt record")
                q = _resync(buf, pos + 1)
                if not cur.resyncing:  # a bad region is counted once, however many chunks
                    cur.corrupt += 1
                fast.forget()
                cycle.forget()
                if q is None:
                    if final:
                        cur.resyncing = False
                        return n
                    # no record starts before the last 11 bytes: the rest waits for more
                    cur.resyncing = True
                    return max(pos + 1, n - 11)
                cur.resyncing = False
                pos = q
                continue
            end = pos + 12 + length
            if end + 4 > n:
                break
            if masked_crc32c(view[pos + 12 : end]) != u32(buf, end)[0]:
                if self.stop_at_corrupt:
                    return self._stop(cur, pos, "a corrupt record")
                cur.corrupt += 1
                fast.forget()
                cycle.forget()
            else:
                try:
                    self.event(buf, pos + 12, end)
                except (ValueError, IndexError, struct.error) as exc:  # protobuf wrong
                    if self.stop_at_corrupt:
                        return self._stop(cur, pos, "an unreadable event")
                    raise ValueError(
                        f"{cur.path}: an unreadable event at byte {cur.offset + pos}: {exc}"
                    ) from None
                cycle.learn(fast.learn(buf, pos, length))
            pos = end + 4
        return pos

    @staticmethod
    def _stop(cur: Cursor, pos: int, what: str) -> int:
        """Stop reading ``cur``'s file at ``pos`` of the buffer (``stop_at_corrupt``)."""
        cur.stopped = f"{what} at byte {cur.offset + pos}"
        return pos

    # -- one record, in full ------------------------------------------------------------------
    def event(self, buf: Buf, start: int, end: int) -> None:
        wall = 0.0
        step = 0
        summary: tuple[int, int] | None = None
        session_start = False
        for num, wire, s, e in fields(buf, start, end):
            if num == 1 and wire == 1:
                (wall,) = F64.unpack_from(buf, s)
            elif num == 2 and wire == 0:
                step = varint(buf, s)[0]
            elif num == 3 and wire == 2:  # file_version, e.g. "brain.Event:2"
                text = buf[s:e].decode("utf-8", "replace")
                try:
                    self.file_version = float(text.split("brain.Event:")[-1])
                except ValueError:
                    self.file_version = -1.0
            elif num == 5 and wire == 2:
                summary = (s, e)
            elif num == 7 and wire == 2:  # SessionLog: status (1)
                for n2, w2, s2, _e2 in fields(buf, s, e):
                    if n2 == 1 and w2 == 0 and varint(buf, s2)[0] == _START:
                        session_start = True
        if step >= 1 << 63:
            step -= 1 << 64
        values = self.summary_values(buf, *summary) if summary is not None else None
        self.maybe_purge(step, session_start, values)
        if values:
            prefix = self.prefix
            for tag, value in values:
                if value is not None:
                    self.point(prefix + tag, step, wall, value)

    def summary_values(self, buf: Buf, start: int, end: int) -> list[tuple[str, float | None]]:
        """``(tag, scalar or None)`` of each value of a ``Summary``."""
        out: list[tuple[str, float | None]] = []
        for num, wire, s, e in fields(buf, start, end):
            if num != 1 or wire != 2:
                continue
            tag = node = ""
            simple: float | None = None
            tensor: tuple[int, int] | None = None
            for n2, w2, s2, e2 in fields(buf, s, e):
                if n2 == 1 and w2 == 2:
                    tag = buf[s2:e2].decode("utf-8", "replace")
                elif n2 == 7 and w2 == 2:
                    node = buf[s2:e2].decode("utf-8", "replace")
                elif n2 == 2 and w2 == 5:
                    (simple,) = F32.unpack_from(buf, s2)
                elif n2 == 8 and w2 == 2:
                    tensor = (s2, e2)
                elif n2 == 9 and w2 == 2 and tag not in self.plugins:
                    self.plugins[tag] = plugin_name(buf, s2, e2)
            if simple is not None:
                out.append((tag, simple))
            elif tensor is not None:
                tag = tag or node
                value = None
                if self.plugins.get(tag) == "scalars":
                    value = tensor_scalar(buf, tensor[0], tensor[1])
                out.append((tag, value))
            else:
                out.append((tag, None))
        return out

    def open_series(self, tag: str) -> None:
        """``tag``'s series, empty, where it has none yet (the sweeps' points, handed
        over later, keep the folder's order of tags: :meth:`FastPath.flush`)."""
        if tag not in self.series:
            self.series[tag] = Series()

    def block(self, tag: str, cols: Columns) -> None:
        """The bulk paths' points of one tag (already filtered by :attr:`tags`)."""
        if self.fast.pending:  # the sweeps' points before these
            self.fast.flush()
        series = self.series.get(tag)
        if series is None:
            series = self.series[tag] = Series()
        series.block(cols)

    def point(self, tag: str, step: int, wall: float, value: float) -> None:
        if self.tags is not None and tag not in self.tags:
            return
        if self.fast.pending:  # the sweeps' points before this one
            self.fast.flush()
        series = self.series.get(tag)
        if series is None:
            series = self.series[tag] = Series()
        series.point(step, wall, value)

    # -- TensorBoard's purge rules ------------------------------------------------------------
    def maybe_purge(
        self, step: int, session_start: bool, values: list[tuple[str, float | None]] | None
    ) -> None:
        if self.file_version and self.file_version >= 2:
            if session_start:
                self.purge(step, None)
        elif step < self.most_recent_step and values is not None:
            self.purge(step, frozenset(self.prefix + t for t, _ in values))
        else:
            self.most_recent_step = step

    def purge(self, step: int, tags: frozenset[str] | None) -> None:
        self.fast.flush()  # (the sweeps' points are purged too)
        for tag, series in self.series.items():
            if tags is None or tag in tags:
                series.drop_from(step)
        if self.handed_out:
            self.retracted.append((step, tags))


@contextmanager
def _opened(
    cur: Cursor, *, pipes: bool
) -> Iterator[tuple[Callable[[memoryview], int], os.stat_result | None]]:
    """``(readinto(view), stat)`` for ``cur``'s file from ``cur.offset``, which Ctrl+C can
    always stop; ``stat`` is a regular file's as it was opened (None for a pipe).

    A regular file is read plainly; one cut back below ``cur.offset`` (a resume) is read
    again from the start. Anything else (a FIFO, a device) is refused unless ``pipes``
    (``OSError``). Such a file could keep the main thread in one ``read`` for ever, and a
    SIGINT that the kernel hands to another thread (numpy's BLAS pool has some) would then
    never raise ``KeyboardInterrupt``: it is opened without waiting for a writer and read
    through ``select`` that wakes every ``_WAKE_S``. A FIFO with no writer at all reads as
    empty; it cannot start anywhere but at 0 (``OSError``)."""
    fd = os.open(cur.path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            os.set_blocking(fd, True)
            with open(fd, "rb", buffering=0, closefd=False) as f:
                if st.st_size < cur.offset:
                    cur.offset = 0
                if cur.offset:  # never seek to 0: the common case needs no call
                    f.seek(cur.offset)
                yield (lambda view: f.readinto(view) or 0), st
            return
        if not pipes:
            raise OSError(f"{cur.path}: not a regular file")
        if cur.offset:
            raise OSError(f"{cur.path}: not a regular file, cannot start at byte {cur.offset}")

        def readinto(view: memoryview) -> int:
            while True:
                try:
                    data = os.read(fd, len(view))  # b"" at once when no writer has it open
                except BlockingIOError:  # a writer, nothing written yet: wait, awake
                    select.select([fd], [], [], _WAKE_S)
                    continue
                view[: len(data)] = data
                return len(data)

        yield readinto, None
    finally:
        os.close(fd)


def _resync(buf: Buf, start: int) -> int | None:
    """The first offset from ``start`` where a record with a good header checksum starts
    (a length's high four bytes are zero: only those places are tried). Twelve zero bytes
    are no header (the checksum of a zero length is not zero), so a zero-filled region is
    jumped over to 11 bytes before its end, not tried byte by byte."""
    n = len(buf)
    at = buf.find(b"\0\0\0\0", start + 4)
    while at != -1 and at + 8 <= n:
        p = at - 4
        if buf[p : p + 12] == _ZEROS:
            more = _NONZERO.search(buf, p)
            if more is None:
                return None
            at = buf.find(b"\0\0\0\0", max(at + 1, more.start() - 7))
            continue
        length, hcrc = HEADER.unpack_from(buf, p)
        if masked_crc32c(buf[p : p + 8]) == hcrc:
            end = p + 12 + length
            if end + 4 > n or masked_crc32c(buf[p + 12 : end]) == U32S.unpack_from(buf, end)[0]:
                return p
        at = buf.find(b"\0\0\0\0", at + 1)
    return None


_ZEROS = bytes(12)
_NONZERO = re.compile(b"[^\x00]")
# a zero length's header checksum is not zero: twelve zero bytes never start a record
assert masked_crc32c(bytes(8)) != 0
