"""A window of an event file's bytes as NumPy sees it, and the passes every bulk step
makes over it.

Why a module of its own: the bulk path (``_evfast``) and the tables that tell records
their layouts (``_evindex``) read the same window, the same way: its bytes as unsigned
bytes, 32- and 64-bit words and floats at every offset (:class:`Window`), its records'
starts found by following their lengths (:func:`chain`), steps read as varints of a
fixed width (:func:`varints`), and records grouped by a key in record order
(:func:`groups_of`). These change with NumPy's costs, not with what a record means.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._wire import Buf

__all__ = [
    "WALL_KEY",
    "Window",
    "at_byte",
    "chain",
    "groups_of",
    "stable_order",
    "varint_words",
    "varints",
]


#: an Event's first byte: its wall time (field 1, 64-bit)
WALL_KEY = 0x09


def varints(a: Window, at: Any, width: int) -> Any:
    """The varints of ``width`` bytes at each of ``at``: the bytes from there read as one
    little-endian word (what follows the varint is masked off), each byte's seven bits
    put in place."""
    if width > 8:
        out = a.u1[at].astype(np.int64) & 0x7F
        for i in range(1, width):
            out |= (a.u1[at + i].astype(np.int64) & 0x7F) << (7 * i)
        return out
    return varint_words((a.u4 if width <= 4 else a.u8)[at], width)


def varint_words(words: Any, width: int) -> Any:
    """The varints of ``width`` bytes (up to 8) at the start of each of ``words`` (read
    little-endian: what follows the varint is masked off)."""
    word = words.astype(np.int64)
    out = word & 0x7F
    for i in range(1, width):
        out |= (word >> i) & (0x7F << (7 * i))
    return out


def at_byte(rows: Any, off: int, dtype: str) -> Any:
    """The number of ``dtype`` at byte ``off`` of each of ``rows`` (``Window.span``'s),
    as a contiguous array of its own."""
    width = rows.shape[1]
    return np.ndarray((len(rows),), dtype, buffer=rows, offset=off, strides=(width,)).copy()


def stable_order(keys: Any, n: int) -> Any:
    """The stable order of ``keys`` (each in ``range(n)``): as 16-bit numbers where they
    fit, which NumPy sorts by radix in one pass over them (a 64-bit key's stable sort is
    a merge sort, ~10x the time)."""
    if n <= 1 << 16:
        keys = keys.astype(np.uint16)
    return np.argsort(keys, kind="stable")


def groups_of(keys: Any, n: int) -> list[tuple[int, Any]]:
    """``(key, the positions holding it, in order)`` for each key in ``range(n)`` that
    ``keys`` holds (other keys left out)."""
    if len(keys):
        lo, hi = int(keys.min()), int(keys.max())
        if lo == hi:  # one key (a window of one tail: PPO's, SB3's): no sort, no count
            return [(lo, np.arange(len(keys)))] if 0 <= lo < n else []
    inside = (keys >= 0) & (keys < n)
    if not inside.all():
        where = np.flatnonzero(inside)
        return [(k, where[sel]) for k, sel in groups_of(keys[where], n)]
    order = stable_order(keys, n)
    counts = np.bincount(keys, minlength=n)
    out = []
    at = 0
    for k in np.flatnonzero(counts).tolist():
        c = int(counts[k])
        out.append((k, order[at : at + c]))
        at += c
    return out


class Window:
    """Bytes of a buffer seen as numbers of each width starting at every byte (views with
    a stride of one: a gather of whole fields, not of their bytes one by one)."""

    def __init__(self, buf: Buf, pos: int, n: int) -> None:
        self.buf = buf
        self.pos = pos
        self.n = n
        #: the buffer as aligned 64-bit words (made when first asked: see ``Flat``)
        self._aligned: Any = None

        def at_every_byte(dtype: str) -> Any:
            width = np.dtype(dtype).itemsize
            count = max(n - width + 1, 0)
            return np.ndarray((count,), dtype, buffer=buf, offset=pos, strides=(1,))

        self.u1 = at_every_byte("u1")
        self.u2 = at_every_byte("<u2")
        self.u4 = at_every_byte("<u4")
        self.u8 = at_every_byte("<u8")
        self.f4 = at_every_byte("<f4")
        self.f8 = at_every_byte("<f8")

    def span(self, at: Any, width: int) -> Any:
        """The ``width`` bytes from each of ``at`` on, a row each (``(len(at), width)``
        bytes): each row gathered as one item, not a gather a field or a word (a tag's
        three words of a file of many rare tags: 7 against 19 ms a read of 87 MB; a
        tail's four fields: 11 against 28 ms). NumPy copies an item of a view of stride
        one byte by byte either way, but reads each index once, makes no ``at + off``
        a field, and passes over the window's memory once."""
        count = max(self.n - width + 1, 0)
        every = np.ndarray((count,), f"V{width}", buffer=self.buf, offset=self.pos,
                           strides=(1,))  # fmt: skip
        return every[at].view(np.uint8).reshape(len(at), width)

    def aligned(self) -> Any:
        """The whole buffer as 64-bit words at multiples of 8 bytes from its start: a
        gather of these is a plain one, ~3x as fast as of the views at every byte (NumPy
        copies an element of a view of stride one byte by byte)."""
        if self._aligned is None:
            self._aligned = np.frombuffer(self.buf, np.uint64, count=len(self.buf) // 8)
        return self._aligned


def chain(a: Window) -> tuple[Any, Any]:
    """``(starts, sizes)`` of the whole records at the start of ``a`` whose data begins
    with an ``Event``'s wall time, each found from the one before by its length."""
    n = a.n
    if n < 17 or a.u1[12] != WALL_KEY:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    cand = np.flatnonzero(a.u1[12:] == WALL_KEY)
    # (a length past the window's end, taken as the window's: past it from here too)
    nxt = cand + 16 + np.minimum(a.u8[cand], n).view(np.int64)
    fits = nxt <= n
    if not fits.all():
        cand, nxt = cand[fits], nxt[fits]
    if not len(cand) or cand[0] != 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # a record whose next is not the next candidate: a byte 0x09 inside a record (rare),
    # or the chain's end; where its next is found among the candidates, for those only
    follows = np.zeros(len(cand), bool)
    np.equal(nxt[:-1], cand[1:], out=follows[:-1])
    bad = np.flatnonzero(~follows)
    j = np.searchsorted(cand, nxt[bad])
    found = j < len(cand)
    found[found] = cand[j[found]] == nxt[bad][found]
    pieces = []
    i = 0
    while True:
        at = int(np.searchsorted(bad, i))  # the last candidate is always one
        b = int(bad[at])
        pieces.append(np.arange(i, b + 1))
        if not found[at]:
            break
        i = int(j[at])
    idx = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    starts = cand[idx]
    return starts, nxt[idx] - starts
