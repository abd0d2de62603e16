"""TFRecord framing, the container format of TensorBoard event files.

Each record is ``u64 length (LE) | u32 masked CRC32C(length bytes) | data |
u32 masked CRC32C(data)``. Readers (TensorBoard's ``EventFileLoader``) verify both
checksums and stop cleanly at a truncated last record, which is what makes an event file
that is only ever appended to safe to read while it is being written.

Why a module of its own: framing is the only per-record work besides protobuf
serialisation, so it must be cheap. The checksum comes from the native ``crc32c``
package (~0.3 µs a record, against ~13 µs for TensorBoard's pure-Python fallback), and
:func:`frame_many` joins a whole batch into one ``bytes`` object so that the caller pays
one ``write`` system call per batch instead of one per record (:func:`write_all`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
from collections.abc import Iterable
from typing import BinaryIO

from ._framing import MASK_DELTA as _MASK_DELTA
from ._framing import U32 as _U32
from ._framing import crc32c, masked_crc32c

__all__ = ["frame_many", "fsync_and_close", "masked_crc32c", "write_all", "write_whole"]

_pack_len = struct.Struct("<Q").pack
_pack_u32 = struct.Struct("<I").pack


#: a record's length and its checksum, per length (a run's records have a few lengths)
_heads: dict[int, bytes] = {}
_HEADS_MAX = 4096


def _head(n: int) -> bytes:
    if len(_heads) >= _HEADS_MAX:
        _heads.clear()
    length = _pack_len(n)
    head = _heads[n] = length + _pack_u32(masked_crc32c(length))
    return head


def frame_many(payloads: Iterable[bytes]) -> bytes:
    """Frame every payload and concatenate the records, in order, into one buffer."""
    parts: list[bytes] = []
    append = parts.append
    crc = crc32c
    pack_u32 = _pack_u32
    heads = _heads
    for data in payloads:
        n = len(data)
        d = crc(data)
        append(heads.get(n) or _head(n))
        append(data)
        append(pack_u32((((d >> 15) | (d << 17)) + _MASK_DELTA) & _U32))
    return b"".join(parts)


def write_all(f: BinaryIO, data: bytes) -> None:
    """Write ``data`` to an unbuffered binary file, looping over short writes.

    Unbuffered (``buffering=0``) files hand each ``write`` straight to the OS, so after
    this returns the bytes survive a crash of this process (not of the machine: that
    needs ``fsync``). A raw write may legally write fewer bytes than asked; loop.
    """
    view = memoryview(data)
    total = len(view)
    done = 0
    while done < total:
        n = f.write(view[done:])
        if not n:  # None (non-blocking, would block) or 0: never for a regular file
            raise OSError(f"short write: {done} of {total} bytes written")
        done += n


def write_whole(f: BinaryIO, data: bytes) -> None:
    """:func:`write_all`, or nothing: a batch torn part-way (disk full mid-write) is cut
    back to the file's size before it and the error re-raised. A torn record or line in
    the middle of a file, once a retry succeeds, would stop its reader there."""
    start = os.fstat(f.fileno()).st_size  # not tell(): in append mode writes go to the end
    try:
        write_all(f, data)
    except BaseException:
        with contextlib.suppress(OSError):
            f.truncate(start)
            f.seek(start)
        raise


def fsync_and_close(f: BinaryIO) -> None:
    """Make the file durable once, at the end, then close it (always)."""
    try:
        os.fsync(f.fileno())
    except OSError as exc:  # e.g. a file system without fsync support
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        f.close()
