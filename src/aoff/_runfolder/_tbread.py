"""Reading the scalars back out of TensorBoard event files, fast.

Why not TensorBoard's own reader: ``EventAccumulator`` builds a protobuf object per event
and a Python object per value; on a 65 MB file (50,000 steps of the demo) it took ~25 s.
``aoff show``/``aoff ls`` need only the scalars: this module walks the TFRecord framing
(both checksums checked, as TensorBoard does) and decodes just enough of ``Event`` and
``Summary`` to find them, skipping everything else (histograms, images, text ...).

Most summaries repeat one layout record after record (the same tags in the same order,
``simple_value`` each): the first time a layout is seen its byte pattern is turned into a
:class:`struct.Struct` that reads every tag head and float of such a summary in one call;
a record whose heads do not match goes through the general decoder. What is read is what
TensorBoard's readers show:

* ``Value.simple_value`` (what aoff, TensorBoard's ``SummaryWriter`` and torch's write);
* ``Value.tensor`` holding one float (``DT_FLOAT``/``DT_DOUBLE``/``DT_HALF``) for a tag
  whose metadata names the ``scalars`` plugin (torch's ``new_style=True``, TF2's
  ``tf.summary.scalar``);
* TensorBoard's purge rule: a ``SessionLog.START`` at step ``s`` (a resumed run) hides
  every point read before it with a step ``>= s``; files without ``brain.Event:2`` use the
  older out-of-order-step rule.

A torn or corrupt record ends the reading of its file (what came before is kept) and is
named in :attr:`Scan.problems`, as TensorBoard stops there too.

This module walks the bytes: chunks of a file, the TFRecord framing and its checksums,
and the hot loop for a record of a known layout; it also finds a record boundary in the
middle of a file (``aoff ls`` reads only a big run's ends). What a record means is
``_tbscan``'s (the values, the purge rules, the result), on the wire primitives of
``_tbwire``, ``_tbvalue`` and ``_tblayout``.
"""

from __future__ import annotations

import os
import select
import stat
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from crc32c import crc32c

from ._framing import MASK_DELTA as _MASK_DELTA
from ._framing import U32 as _U32
from ._framing import masked_crc32c
from ._tblayout import Layout
from ._tbscan import Reader, Scan, TagSeries
from ._tbwire import F64, HEADER, U32S, varint

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "Scan", "TagSeries", "scan_files", "scan_last"]

#: bytes read at a time; the progress callback is called once per chunk
CHUNK = 8 << 20

#: how often a read of a pipe that waits for its writer wakes to let Ctrl+C through
_WAKE_S = 0.1


@contextmanager
def _opened(path: str, start: int) -> Iterator[Callable[[int], bytes]]:
    """``read(n)`` for ``path`` from byte ``start``, which can always be stopped by Ctrl+C.

    A regular file is read plainly. Anything else (a FIFO, a device) could keep the main
    thread in one ``read`` for ever, and a SIGINT that the kernel hands to another thread
    (numpy's BLAS pool has some) would then never raise ``KeyboardInterrupt``: such a
    file is opened without waiting for a writer and read through ``select`` that wakes
    every ``_WAKE_S``. A FIFO with no writer at all reads as empty; it cannot start
    anywhere but at 0 (``OSError``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
            if start:  # never seek to 0: the common case needs no call
                os.lseek(fd, start, os.SEEK_SET)
            yield lambda n: os.read(fd, n)
            return
        if start:
            raise OSError(f"{path}: not a regular file, cannot start at byte {start}")

        def read(n: int) -> bytes:
            while True:
                try:
                    return os.read(fd, n)  # b"" at once when no writer has it open
                except BlockingIOError:  # a writer, nothing written yet: wait, awake
                    select.select([fd], [], [], _WAKE_S)

        yield read
    finally:
        os.close(fd)


def _read_file(
    reader: Reader,
    path: str,
    progress: Callable[[int], None] | None,
    *,
    start: int = 0,
    limit: int | None = None,
) -> tuple[str, str] | None:
    """Walk one file's records from byte ``start``; ``(path, why)`` when it stops before
    the end. ``limit``: read at most that many bytes (a record cut there is not a fault).

    The loop is written out (no calls) for the common record: ``wall_time``, ``step`` and
    a summary of a known layout; anything else goes to :meth:`Reader.event`."""
    scan = reader.scan
    event = reader.event
    header = HEADER.unpack_from
    u32 = U32S.unpack_from
    f64 = F64.unpack_from
    layouts = reader.layouts
    points = reader.points
    add_point = points.append
    left = limit
    with _opened(path, start) as read:
        buf = b""
        view = memoryview(buf)
        base = start  # file offset of buf[0]
        pos = 0
        eof = False
        want = 12
        while True:
            if len(buf) - pos < want:
                if eof:
                    if pos == len(buf) or limit is not None:
                        return None
                    return (path, "the last record is truncated")
                size = max(CHUNK, want)
                if left is not None:
                    size = min(size, left)
                    left -= size
                more = read(size) if size > 0 else b""
                if not more:
                    eof = True
                    continue
                scan.bytes_read += len(more)
                if progress is not None:
                    progress(len(more))
                base += pos
                view.release()
                buf = buf[pos:] + more
                view = memoryview(buf)
                pos = 0
                continue
            length, hcrc = header(buf, pos)
            c = crc32c(view[pos : pos + 8])
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != hcrc:
                return (path, f"a corrupt record at byte {base + pos}")
            p = pos + 12
            end = p + length
            if end + 4 > len(buf):
                want = 16 + length
                continue
            want = 12
            c = crc32c(view[p:end])
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != u32(buf, end)[0]:
                return (path, f"a corrupt record at byte {base + pos}")
            pos = end + 4
            try:
                if length > 13 and buf[p] == 0x09 and buf[p + 9] == 0x10:
                    q = p + 10
                    step = 0
                    shift = 0
                    while True:  # the step's varint, written out
                        b = buf[q]
                        q += 1
                        step |= (b & 0x7F) << shift
                        if b < 0x80:
                            break
                        shift += 7
                    if buf[q] == 0x2A:
                        size = buf[q + 1]
                        q += 2
                        if size >= 0x80:
                            b = buf[q]
                            q += 1
                            size = (size & 0x7F) | ((b & 0x7F) << 7)
                            if b >= 0x80:
                                size, q = varint(buf, q - 3)
                        if q + size == end and step < (1 << 63) and not reader.old_rule:
                            for layout in layouts.get(size, ()):
                                if layout.reader.unpack_from(buf, q) == layout.heads:
                                    (wall,) = f64(buf, p + 1)
                                    add_point(step)
                                    add_point(wall)
                                    raw = layout.raw
                                    raw += view[q:end]
                                    if len(raw) >= size * Layout.FLUSH_ROWS:
                                        layout.flush()
                                    series = layout.series
                                    series.append(reader.order)
                                    series.append(step)
                                    reader.order += 1
                                    break
                            else:
                                event(buf, p, end)
                            continue
                event(buf, p, end)
            except (ValueError, IndexError, struct.error):
                return (path, f"an unreadable event at byte {base + pos - length - 16}")


def scan_files(paths: Sequence[str], progress: Callable[[int], None] | None = None) -> Scan:
    """Read every scalar of ``paths`` (one run's event files, in the order TensorBoard
    reads them: sorted by name). ``progress`` is called with the bytes of each chunk read.

    Raises ``OSError`` for a file that cannot be opened or read."""
    reader = Reader()
    for path in paths:
        problem = _read_file(reader, path, progress)
        if problem is not None:
            reader.scan.problems.append(problem)
    return reader.finish()


#: bytes of the last event file ``scan_last`` reads, and of the first one
TAIL_BYTES = 4 << 20
HEAD_BYTES = 256 << 10


def _sync_point(buf: bytes) -> int | None:
    """The offset of the first record in ``buf`` (a slice from inside a file) whose chain
    of valid record headers runs to the end of ``buf`` (a torn last record allowed)."""
    n = len(buf)
    at = buf.find(b"\0\0\0\0", 4)
    while at != -1:
        p = at - 4  # the length's high 4 bytes are zero: a header may start here
        q = p
        hops = 0
        while q + 12 <= n:
            length, hcrc = HEADER.unpack_from(buf, q)
            if length >= n or masked_crc32c(buf[q : q + 8]) != hcrc:
                break
            q += 16 + length
            hops += 1
        if hops and (q == n or (q > n and hops > 1) or n - q < 12):
            return p
        at = buf.find(b"\0\0\0\0", at + 1)
    return None


def scan_last(paths: Sequence[str], progress: Callable[[int], None] | None = None) -> Scan | None:
    """The run's ends only, for ``aoff ls``: the first record's wall time (from the start
    of the first file) and each tag's last points (from the last ``TAIL_BYTES`` of the
    last file). Tag counts and curves are those of the tail only. ``None`` when the files
    are small enough to read whole, or the tail cannot be lined up with the records."""
    if not paths:
        return None
    last = paths[-1]
    size = os.path.getsize(last)
    if size <= 2 * TAIL_BYTES:
        return None
    with open(last, "rb") as f:
        f.seek(size - TAIL_BYTES)
        tail = f.read()
    sync = _sync_point(tail)
    if sync is None:
        return None
    head = Reader()
    _read_file(head, paths[0], None, limit=HEAD_BYTES)
    reader = Reader()
    reader.file_version = head.file_version
    problem = _read_file(reader, last, None, start=size - TAIL_BYTES + sync)
    scan = reader.finish()
    if problem is not None:
        scan.problems.append(problem)
    first = head.finish()
    if first.first_time is not None:
        scan.first_time = first.first_time
    if progress is not None:
        progress(2 * TAIL_BYTES)
    return scan
