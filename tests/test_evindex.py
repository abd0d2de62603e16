"""Which known layout each record is (``_evindex``): every size told at once from the
window's aligned words names what telling size by size names, a byte a layout fixes
still checked, and a sorted hash found by its slot where a binary search finds it."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from aoff._runfolder.tensorboard._evfolder import EventFolder
from aoff._runfolder.tensorboard._evindex import FLAT_SIZES, Slots
from aoff._runfolder.tensorboard._evwindow import Window, chain


def test_every_size_at_once_names_the_layouts_size_by_size_does(tmp_path: Path) -> None:
    """Records of many sizes (thirteen tags, three step widths, CleanRL's PPO lengths) told
    their layouts at once from the buffer's aligned words name the same layout, record for
    record, as telling them size by size; a record's bytes changed where its layout fixes
    them name none."""
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(5)
    # (and tags whose records are 122-128 bytes long, the longest told at once)
    tags = [f"losses/{'x' * n}" for n in [*range(3, 14), 78, 81]]
    w = SummaryWriter(str(tmp_path))
    for i in range(4000):
        w.add_scalar(rng.choice(tags), rng.random(), rng.choice([5, 500, 50_000]) + i)
    w.close()
    (path,) = tmp_path.iterdir()
    data = bytearray(path.read_bytes())
    folder = EventFolder()
    folder.read([str(path)])
    index = folder.fast.exact
    assert len(index.sizes) >= FLAT_SIZES
    first = int.from_bytes(data[:8], "little") + 16  # after the file version's record
    a = Window(data, first, len(data) - first)
    starts, sizes = chain(a)
    flat = None
    for shift in (0, 3):  # every record at another shift from the aligned words
        buf = bytearray(shift) + data
        a = Window(buf, first + shift, len(data) - first)
        index.classify(a, starts, sizes)
        tables = index.tables
        assert tables is not None and tables.flat is not None and tables.flat.words
        flat = tables.classify(a, starts, sizes)
        assert (flat >= 0).all() and (flat == tables.grouped(a, starts, sizes)).all()
    bad = data.copy()
    changed = np.arange(0, len(starts), 97)
    for r in changed.tolist():  # a byte of its tag's name (fixed) changed
        bad[first + int(starts[r]) + 30] ^= 0x20
    got = tables.classify(Window(bad, first, len(bad) - first), starts, sizes)
    assert (got[changed] == -1).all()
    assert (np.delete(got, changed) == np.delete(flat, changed)).all()


@pytest.mark.parametrize("count", [1, 7, 300, 5000])
def test_a_key_is_found_by_its_slot_as_a_binary_search_finds_it(count: int) -> None:
    """``Slots``: each key asked is found at a place holding it, whether its slot is its
    own or shared (keys alike in their top bits, and a key twice, as ``Flat`` may hold);
    a number that is no key is found at a place holding another."""
    rng = np.random.default_rng(count)
    keys = rng.integers(0, 1 << 63, count, dtype=np.uint64) << np.uint64(1)
    near = keys[: count // 3 + 1] ^ np.uint64(0xFFFF)  # (the same top bits: a shared slot)
    keys = np.sort(np.concatenate([keys, near, keys[:1]]))
    slots = Slots(keys)
    assert slots.shared
    asked = np.concatenate([keys, keys + np.uint64(1), near[::-1], [np.uint64(0)]])
    rng.shuffle(asked)
    found = slots.find(asked)
    assert ((found >= 0) & (found < len(keys))).all()
    assert ((keys[found] == asked) == np.isin(asked, keys)).all()
