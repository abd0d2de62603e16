"""Protobuf's wire format, as much as the event parser (``_evfolder``, ``_evfast``) and
the writers' last-step reader (``_files``) need of it.

Why a module of its own: the reader decodes ``Event``, ``Summary``, ``TensorProto`` and
``SummaryMetadata`` by hand (TensorBoard's protobuf classes cost a Python object per value,
see ``_scan``); these few primitives (a varint, skipping a field, listing a message's
fields) and the fixed-width layouts are what every one of those decoders stands on. The
TFRecord framing's checksum around the events (the masked CRC32C) is ``_tfrecord``'s,
shared with the writer (``_tfrecord``).
"""

from __future__ import annotations

import struct

__all__ = ["F16", "F32", "F64", "HEADER", "U32S", "Buf", "fields", "skip", "varint"]

#: what the decoders read: a file's bytes, or a chunk read in place into a bytearray
Buf = bytes | bytearray

#: a TFRecord header: the payload's length, then the masked CRC32C of those 8 bytes
HEADER = struct.Struct("<QI")
U32S = struct.Struct("<I")
F32 = struct.Struct("<f")
F64 = struct.Struct("<d")
F16 = struct.Struct("<e")


def varint(buf: Buf, pos: int) -> tuple[int, int]:
    """The varint at ``buf[pos]`` and the position after it."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def skip(buf: Buf, pos: int, wire: int) -> int:
    """The position after a field's value of wire type ``wire`` starting at ``pos``."""
    if wire == 0:
        return varint(buf, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        n, pos = varint(buf, pos)
        return pos + n
    if wire == 5:
        return pos + 4
    raise ValueError(f"unsupported wire type {wire}")


def fields(buf: Buf, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """``(field, wire, start, stop)`` of each field in ``buf[pos:end]`` (length-delimited
    fields: start/stop of their content)."""
    out = []
    while pos < end:
        key, pos = varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 2:
            n, pos = varint(buf, pos)
            out.append((num, wire, pos, pos + n))
            pos += n
        else:
            start = pos
            pos = skip(buf, pos, wire)
            out.append((num, wire, start, pos))
    if pos != end:
        raise ValueError("field runs past its message")
    return out
