"""A window of an event file's bytes (``_evwindow``): each record's bytes gathered as
one row (``Window.span``), and a field read from those rows (``at_byte``)."""

from __future__ import annotations

import struct

import numpy as np

from aoff._runfolder.tensorboard._evwindow import Window, at_byte


def test_span_rows_and_the_fields_read_from_them_are_the_bytes_at_each_place() -> None:
    """Rows of 21 bytes at odd places of a window that starts inside its buffer, up to its
    last byte: each row is those bytes; a double, a 32-bit and a 64-bit number at odd
    offsets of the rows are those read by ``struct`` there (little-endian)."""
    rng = np.random.default_rng(7)
    buf = bytes(rng.integers(0, 256, 1000, dtype=np.uint8).tobytes())
    pos, n, width = 11, 900, 21
    at = np.array([0, 3, 100, 101, 477, n - width], np.int64)
    rows = Window(buf, pos, n).span(at, width)
    assert rows.shape == (len(at), width)
    for row, off in zip(rows, at.tolist(), strict=True):
        assert row.tobytes() == buf[pos + off : pos + off + width]
    for off, dtype, fmt in ((0, "<f8", "<d"), (9, "<u4", "<I"), (13, "<u8", "<Q")):
        got = at_byte(rows, off, dtype)
        assert got.flags.c_contiguous
        want = [struct.unpack_from(fmt, buf, pos + p + off)[0] for p in at.tolist()]
        assert got.tolist() == want or np.array_equal(got, want, equal_nan=True)
