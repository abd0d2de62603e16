"""The tags of records whose layout is that of any tag (a file of many tags, each rare):
read as words, told apart in bulk, and found among the tags met before.

Why a module of its own: a layout of any tag leaves its records' tag bytes variable, so
each record's tag is read from its bytes. They are gathered as 64-bit words with a key
each (:func:`tag_words`), the distinct ones found by sorting their keys
(:func:`distinct`), and the tags met before found by a table of key slots
(:class:`KnownTags`): a few NumPy passes a window, not a Python look-up a tag.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._evwindow import Window

__all__ = ["KnownTags", "distinct", "tag_words"]


def tag_words(a: Window, at: Any, length: int) -> tuple[Any, Any]:
    """The byte strings of ``length`` bytes at ``at`` as rows of 64-bit words (the bytes
    past a string's end masked off: a record's tag is followed by at least its value
    and checksum), and each row's key (one number; rows alike have keys alike).

    Each row gathered whole (``Window.span``: one copy of a record's tag, ~2.7x as fast
    as a gather a word), the key summed a word (a column) at a time."""
    words = (length + 7) // 8
    rows = a.span(at, 8 * words).view("<u8")
    tail = length % 8
    if tail:
        rows[:, -1] &= np.uint64((1 << (8 * tail)) - 1)
    if rows.shape[1] == 1:
        return rows, rows[:, 0]
    key = rows[:, 0] * _MIX
    for i in range(1, rows.shape[1]):
        key += rows[:, i] * np.uint64((i + 1) * int(_MIX) & (1 << 64) - 1)
    return rows, key


def distinct(words: Any, key: Any) -> tuple[Any, Any]:
    """The distinct rows of ``words`` (``tag_words``): the first place of each, and
    which of them each row is; by their keys, the keys' groups checked to hold equal
    rows (else told apart exactly)."""
    _keys, first, which = np.unique(key, return_index=True, return_inverse=True)
    which = which.ravel()
    if words.shape[1] > 1 and not (words == words[first[which]]).all():  # keys alike (rare)
        _rows, first, which = np.unique(words, axis=0, return_index=True, return_inverse=True)
        which = which.ravel()
    return first, which


class KnownTags:
    """The scalar tags met in one shape's records (a layout of any tag): their words
    (``tag_words``), tag ids and their bytes' share of the data checksum, and a table
    from a key's hash to its tag: a window's records are told their tags by one look-up
    of their keys and one comparison of their words, not a sort of the window and a
    Python look-up per distinct tag (a file of 2,000 tags, each rare, meets most of them
    in every window). A record is given a tag only where its words equal the tag's (a
    key alike is not enough); a tag whose slot another has (rare) is told the slow way,
    as before; a tensor's tag is added only once known as a scalar (its first metadata)."""

    def __init__(self, nwords: int) -> None:
        self.keys: Any = np.empty(0, np.uint64)
        self.words: Any = np.empty((0, nwords), np.uint64)
        self.cols: Any = self.words.T  # (the words of each tag a column)
        self.ids: Any = np.empty(0, np.int64)
        self.shares: Any = np.empty(0, np.uint32)
        #: slot (the top ``64 - shift`` bits of a key times ``_MIX``) -> entry (-1: none)
        self.table: Any = np.full(1, -1, np.intp)
        self.shift = np.uint64(63)

    def find(self, words: Any, key: Any) -> tuple[Any, Any, Any]:
        """Each record's tag id and share (where it has none, anything), and which
        records have one (None: all of them)."""
        n = len(key)
        if not len(self.keys):
            return np.empty(n, np.int64), np.zeros(n, np.uint32), np.zeros(n, bool)
        at = self.table[(key * _MIX) >> self.shift]
        hit = at >= 0
        np.maximum(at, 0, out=at)
        for i in range(words.shape[1]):  # (a word of every record at a time)
            hit &= self.cols[i].take(at) == words[:, i]
        return self.ids[at], self.shares[at], None if hit.all() else hit

    def add(self, words: Any, keys: Any, ids: Any, shares: Any) -> None:
        """Tags not held before (one of a key already held: left out)."""
        if not len(keys):
            return
        keep = ~np.isin(keys, self.keys)
        if not keep.any():
            return
        self.keys = np.concatenate([self.keys, keys[keep]])
        self.words = np.concatenate([self.words, words[keep]])
        self.cols = np.ascontiguousarray(self.words.T)
        self.ids = np.concatenate([self.ids, ids[keep]])
        self.shares = np.concatenate([self.shares, shares[keep]])
        # a table of 16x as many slots as tags (few share a slot); where two do, one of
        # them has it (which one does not matter: a record's words are compared)
        bits = max(len(self.keys).bit_length() + 4, 8)
        self.shift = np.uint64(64 - bits)
        table = np.full(1 << bits, -1, np.intp)
        table[(self.keys * _MIX) >> self.shift] = np.arange(len(self.keys))
        self.table = table


#: an odd 64-bit multiplier: a key's slot is the top bits of its product with it
_MIX = np.uint64(0x9E3779B97F4A7C15)
