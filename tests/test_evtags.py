"""The tags of records of a layout of any tag (``_evtags``): a tag met before is found by
its words, never by its key alone."""

from __future__ import annotations

import numpy as np

from aoff._runfolder.tensorboard._evtags import KnownTags


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
