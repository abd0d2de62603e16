"""The tags of records of a layout of any tag (``_evtags``): a tag met before is found by
its words, never by its key alone."""

from __future__ import annotations

import numpy as np
import pytest

from aoff._runfolder.tensorboard._evtags import KnownTags, tag_words
from aoff._runfolder.tensorboard._evwindow import Window


def test_a_known_tag_is_given_by_its_words_not_its_key() -> None:
    """``KnownTags``: two tags of one key (one slot) and a third string of that key: a
    record gets a tag only where its words are that tag's; the others are misses (told
    apart the slow way), never another tag's id or checksum share."""
    known = KnownTags(2)
    words = np.array([[1, 10], [2, 20]], np.uint64)
    key = np.array([7, 7], np.uint64)
    known.add(words, key, np.array([3, 4], np.int64), np.array([30, 40], np.uint32))
    asked = np.array([[1, 10], [2, 20], [1, 20], [2, 20], [1, 10]], np.uint64)
    ids, shares, hit = known.find(asked, np.full(5, 7, np.uint64))
    assert hit is not None
    owner = 0 if hit[0] else 1  # the tag that has the slot
    assert hit.tolist() == (
        [True, False, False, False, True] if owner == 0 else [False, True, False, True, False]
    )
    assert ids[hit].tolist() == [3 + owner] * 2 and shares[hit].tolist() == [30 + 10 * owner] * 2


@pytest.mark.parametrize("length", [1, 7, 8, 9, 16, 19, 24, 30])
def test_tag_words_are_each_strings_bytes_masked_past_its_end(length: int) -> None:
    """``tag_words`` (each row gathered whole, ``Window.span``): a window that starts
    inside its buffer, strings at odd offsets up to its last byte: each row is the
    string's bytes (little-endian words, zeros past its end, whatever follows), and
    rows of equal strings, and only those here, have equal keys."""
    rng = np.random.default_rng(length)
    buf = bytearray(rng.integers(0, 256, 4000, dtype=np.uint8).tobytes())
    pos, n = 13, 3000
    words = (length + 7) // 8
    last = n - 8 * words  # a row's words are read whole, up to the window's end
    at = np.array([0, 1, 5, 333, 334, 1001, last - 1, last], np.int64)
    buf[pos + 1001 : pos + 1001 + length] = buf[pos + 5 : pos + 5 + length]  # alike
    got, key = tag_words(Window(buf, pos, n), at, length)
    assert got.shape == (len(at), words)
    for row, off in zip(got, at.tolist(), strict=True):
        want = bytes(buf[pos + off : pos + off + length]).ljust(8 * words, b"\0")
        assert row.astype("<u8").tobytes() == want
    same = key[:, None] == key[None, :]
    assert same.sum() == len(at) + 2 and same[2, 5] and same[5, 2]
