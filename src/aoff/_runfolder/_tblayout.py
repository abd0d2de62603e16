"""A summary layout seen before: its values read in one ``struct`` call, kept in bulk.

Why a module of its own: most summaries repeat one layout record after record (the same
tags in the same order, ``simple_value`` each). This is the reader's fast path
(``_tbscan`` makes a layout the first time it sees one, ``_tbread``'s loop matches
records against it): the byte pattern, and the rows of floats it collects without a
Python float per value.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["Layout"]


class Layout:
    """A summary's byte pattern: heads (tag + ``simple_value`` key) around 4-byte floats.

    ``reader`` unpacks the heads of a summary of this size and skips its floats; the
    summaries that match are copied whole into ``raw`` and their floats cut out of it in
    bulk (numpy) every ``FLUSH_ROWS`` rows, so no Python float is made per value."""

    __slots__ = ("heads", "offsets", "raw", "reader", "rows", "series", "size", "tags")
    FLUSH_ROWS = 4096

    def __init__(self, heads: tuple[bytes, ...], tags: tuple[str, ...]) -> None:
        self.heads = heads
        self.tags = tags
        self.reader = struct.Struct("<" + "".join(f"{len(h)}s4x" for h in heads))
        self.size = self.reader.size
        offsets = []
        at = 0
        for h in heads:
            at += len(h)
            offsets.append(at)
            at += 4
        self.offsets = np.asarray(offsets, np.intp)
        self.raw = bytearray()
        #: float32 blocks of (rows, tags), in order
        self.rows: list[np.ndarray[Any, np.dtype[np.float32]]] = []
        #: per matching summary: its record order, then its step
        self.series: array[int] = array("q")

    def flush(self) -> None:
        if not self.raw:
            return
        table = np.frombuffer(self.raw, np.uint8).reshape(-1, self.size)
        cols = self.offsets[:, None] + np.arange(4)  # (tags, 4) byte positions
        block = table[:, cols].reshape(len(table), -1).copy().view("<f4")
        self.rows.append(block.astype(np.float32, copy=False))
        self.raw = bytearray()

    def add_row(self, values: Sequence[float]) -> None:
        self.flush()
        self.rows.append(np.asarray([values], np.float32))
