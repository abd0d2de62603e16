"""Every record's own data checksum, computed in bulk from its variable bytes.

Why a module of its own: the bulk paths (``_evcycle``'s rows, ``_evfast``'s shapes and
tails) all check each record's CRC32C the same way, and that check was most of their
cost. CRC32C is affine in the data: a record's checksum is the checksum of its layout's
fixed bytes (its variable bytes zeroed) XOR, for each variable byte, a table indexed by
that byte, which depends only on the byte's distance from the data's end and the fixed
bits under it. Here the variable bytes of many records are gathered as one 2-D array, a
row per byte position and a column per record (so that the XOR over a record's bytes
runs over whole rows, vectorized, not over short rows one by one), and one ``take`` of a
flat table gives every contribution. A byte position that holds the same byte in every
record of a block (a wall time's high bytes, a constant value, the step's high bytes)
adds one constant, looked up once, not once per record. Each record's checksum is still
compared with the one it stores, on its own: no check over several records, whose equal
errors could cancel.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ._tfrecord import MASK_DELTA, crc32c
from ._wire import Buf

__all__ = ["RowChecksums", "byte_tables", "flat_rows", "masked", "shares"]


#: bytes after a data byte -> that byte's table against a zero byte (see ``byte_tables``)
_ZERO_ROWS: dict[int, np.ndarray[Any, np.dtype[np.uint32]]] = {}
_BYTES = np.arange(256)


def byte_tables(afters: list[int], fixed: list[int]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """Row ``i``: what a data byte stored as each of 0..255 XORs into the data's CRC32C,
    against ``fixed[i]`` in its place, with ``afters[i]`` bytes of data after it: CRC32C
    is affine, so this depends on nothing else. Built from its eight bits' effects, all
    the rows not met before at once (a first read builds a few hundred: one NumPy pass,
    not one each), and kept for reuse."""
    missing = [x for x in dict.fromkeys(afters) if x not in _ZERO_ROWS]
    if missing:
        if len(_ZERO_ROWS) + len(missing) > 8192:
            _ZERO_ROWS.clear()
            missing = list(dict.fromkeys(afters))
        deltas = np.empty((len(missing), 8), np.uint32)
        for row, after in enumerate(missing):
            tail = bytes(after)
            zero = crc32c(bytes(1) + tail)
            deltas[row] = [crc32c(bytes([1 << bit]) + tail) ^ zero for bit in range(8)]
        tables = np.zeros((len(missing), 256), np.uint32)
        for bit in range(8):
            tables ^= np.where((_BYTES >> bit) & 1 == 1, deltas[:, bit : bit + 1], np.uint32(0))
        _ZERO_ROWS.update(zip(missing, tables, strict=True))
    rows = np.stack([_ZERO_ROWS[x] for x in afters])
    if not any(fixed):
        return rows
    # indexed by the byte as stored: its change from the fixed bits
    return np.take_along_axis(rows, _BYTES[None, :] ^ np.asarray(fixed)[:, None], axis=1)


#: each data byte's table against a zero byte (its share of CRC32C), row ``after`` (the
#: data bytes after it) of 256, flat: grown as longer records need (``_evfast``'s tails)
_ROWS: list[np.ndarray[Any, np.dtype[np.uint32]]] = [np.zeros(0, np.uint32)]


def flat_rows(after: int) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """The flat tables (``_ROWS``), rows ``0..after`` at least."""
    flat = _ROWS[0]
    if len(flat) < 256 * (after + 1):
        n = max(after + 1, 2 * (len(flat) // 256), 128)
        flat = _ROWS[0] = byte_tables(list(range(n)), [0] * n).ravel()
    return flat


def masked(crc: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The checksums as TFRecord stores them (rotated right by 15 bits, offset)."""
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(MASK_DELTA)


class RowChecksums:
    """The data checksums of a row of records laid end to end (a cycle of layouts: the
    same records at the same offsets in every row), checked for many rows at once.

    ``layouts``: each record's ``(offset in the row, size, crc of its fixed data, [(offset
    of a variable byte in the record, its table)])``."""

    def __init__(
        self,
        size: int,
        layouts: list[tuple[int, int, int, list[tuple[int, np.ndarray[Any, Any]]]]],
    ) -> None:
        self.size = size
        cols: list[int] = []
        tables: list[np.ndarray[Any, Any]] = []
        starts: list[int] = []
        for at, rsize, _base, var in layouts:
            starts.append(len(cols))
            for off, table in var or [(rsize - 4, np.zeros(256, np.uint32))]:
                cols.append(at + off)  # (a record of no variable data byte: a zero table)
                tables.append(table)
        self.cols = np.asarray(cols, np.intp)
        self.tables = np.concatenate(tables).astype(np.uint32)
        self.offsets = (np.arange(len(cols)) * 256).astype(np.intp)
        self.starts = np.asarray(starts, np.intp)
        #: each column's record, and the records' fixed checksums and where each stores its own
        self.record_of = np.repeat(np.arange(len(layouts)), np.diff([*starts, len(cols)]))
        self.bases = np.asarray([lay[2] for lay in layouts], np.uint32)
        self.stored_at = np.asarray([at + rsize - 4 for at, rsize, _b, _v in layouts], np.intp)

    def first_bad(self, buf: Buf, pos: int, m: int) -> int:
        """The first of the ``m`` rows at ``pos`` with a record whose data checksum fails
        (``m``: none)."""
        size = self.size
        # the rows' bytes seen column-major: a row of this view per byte of the cycle
        by_byte = np.ndarray((size, m), np.uint8, buffer=buf, offset=pos, strides=(1, size))
        crc = shares(by_byte[self.cols], self.tables, self.offsets, self.starts, self.record_of)
        crc ^= self.bases[:, None]
        stored = np.ndarray((size - 3, m), "<u4", buffer=buf, offset=pos, strides=(1, size))
        wrong = (masked(crc) != stored[self.stored_at]).any(axis=0)
        bad = int(wrong.argmax())
        return bad if wrong[bad] else m


_ONE = np.zeros(1, np.intp)


def shares(
    got: np.ndarray[Any, Any],
    tables: np.ndarray[Any, Any],
    offsets: np.ndarray[Any, Any],
    starts: np.ndarray[Any, Any] = _ONE,
    record_of: np.ndarray[Any, Any] | None = None,
) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """Each record's share of its checksum from its variable bytes: ``got`` holds a row
    per byte position (``tables[offsets[i] + byte]`` its share) and a column per record
    (or per row of records: ``starts``, the first byte position of each record of a row,
    ``record_of`` each position's record); an array of a row per record, a column each.
    A position that holds one byte in every column is looked up once."""
    m = got.shape[1]
    first = got[:, 0]
    varies = (got != first[:, None]).any(axis=1)
    once = tables[offsets + first]
    once[varies] = 0
    crc = np.repeat(np.bitwise_xor.reduceat(once, starts)[:, None], m, axis=1)
    where = np.flatnonzero(varies)
    if len(where):
        index = got[where].astype(np.intp)
        index += offsets[where, None]
        share = tables.take(index)
        if record_of is None:
            crc[0] ^= np.bitwise_xor.reduce(share, axis=0)
            return crc
        # each record's rows XORed down (a reduce per record: ``reduceat`` down the rows
        # of a 2-D array was ~8x as slow)
        records = record_of[where]
        cuts = [0, *(np.flatnonzero(records[1:] != records[:-1]) + 1).tolist(), len(where)]
        for lo, hi in itertools.pairwise(cuts):
            crc[records[lo]] ^= np.bitwise_xor.reduce(share[lo:hi], axis=0)
    return crc
