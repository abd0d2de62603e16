"""TFRecord framing, the container format of TensorBoard event files, and its checksum.

Each record is ``u64 length (LE) | u32 masked CRC32C(length bytes) | data |
u32 masked CRC32C(data)``. Readers (TensorBoard's ``EventFileLoader``) verify both
checksums and stop cleanly at a truncated last record, which is what makes an event file
that is only ever appended to safe to read while it is being written.

Why a module of its own: the framing and its masked checksum are one definition that the
writer (the TensorBoard backend) and every event reader of the run folder share. Framing
is the only per-record work besides protobuf serialisation, so it must be cheap. The
checksum comes from the native ``crc32c`` package (~0.3 µs a record, against ~13 µs for
TensorBoard's pure-Python fallback), and :func:`frame_many` joins a whole batch into one
``bytes`` object so that the caller pays one ``write`` system call per batch instead of
one per record (:func:`write_all`).
"""

from __future__ import annotations

import contextlib
import errno
import importlib.machinery
import importlib.util
import os
import struct
from collections.abc import Callable, Iterable
from typing import BinaryIO

__all__ = [
    "MASK_DELTA",
    "U32",
    "crc32c",
    "frame_many",
    "fsync_and_close",
    "masked_crc32c",
    "unmask",
    "write_all",
    "write_whole",
]


def _crc32c() -> Callable[[bytes | bytearray | memoryview], int]:
    """The ``crc32c`` package's C function. Its extension module is loaded by itself:
    the package's ``__init__`` asks ``importlib.metadata`` for its version and imports
    its command line (argparse), 20-60 ms of every first read of a run; the package is
    imported as usual where that fails."""
    try:
        spec = importlib.util.find_spec("crc32c")
        assert spec is not None and spec.submodule_search_locations
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = f"{spec.submodule_search_locations[0]}/_crc32c{suffix}"
            ext = importlib.util.spec_from_file_location("crc32c._crc32c", path)
            if ext is None or ext.loader is None:
                continue
            try:
                module = importlib.util.module_from_spec(ext)
            except ImportError:
                continue
            ext.loader.exec_module(module)
            fn: Callable[[bytes | bytearray | memoryview], int] = module.crc32c
            return fn
    except (ImportError, AssertionError, OSError):
        pass
    from crc32c import crc32c as fn_pkg

    return fn_pkg


crc32c = _crc32c()

MASK_DELTA = 0xA282EAD8
U32 = 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC32C of ``data``, rotated right by 15 bits and offset, as TFRecord stores it."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + MASK_DELTA) & U32


def unmask(masked: int) -> int:
    """The plain CRC32C a stored (masked) checksum stands for."""
    c = (masked - MASK_DELTA) & U32
    return ((c << 15) | (c >> 17)) & U32


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
        append(pack_u32((((d >> 15) | (d << 17)) + MASK_DELTA) & U32))
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
