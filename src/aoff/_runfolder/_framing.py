"""TFRecord framing's checksum, the container format of TensorBoard event files.

Each record is ``u64 length (LE) | u32 masked CRC32C(length bytes) | data |
u32 masked CRC32C(data)``. Why a module of its own: the writer (``_backends/_tfrecord``)
and every reader of the run folder check the same masked checksum; this is its one
definition.
"""

from __future__ import annotations

from crc32c import crc32c

__all__ = ["MASK_DELTA", "U32", "masked_crc32c", "unmask"]

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
