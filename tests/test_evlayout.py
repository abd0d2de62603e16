"""A layout and how its records decode together (``_evlayout``): a ``Tail`` reads its
records' steps, wall times and values, and finds each record whose own data checksum
fails, whether its records are of one size or of several."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aoff._runfolder.tensorboard._evfolder import EventFolder
from aoff._runfolder.tensorboard._evwindow import Window, chain


def _tail_records(folder: Path, tags: list[str]) -> tuple[Any, bytearray, Any, Any, Any]:
    """torch's records of ``tags`` in no repeating order (the sweep learns a layout a
    tag, one tail for them all: one-value, a 2-byte step): the ``FastPath`` that read
    them, the file's bytes from its second record on, the records' starts and sizes,
    and each one's layout id."""
    from torch.utils.tensorboard import SummaryWriter

    rng = random.Random(2)
    w = SummaryWriter(str(folder))
    for g in range(200, 1400):
        w.add_scalar(rng.choice(tags), rng.random(), g)
    w.close()
    (path,) = folder.iterdir()
    events = EventFolder()
    events.read([str(path)])
    data = bytearray(path.read_bytes())
    first = 16 + int.from_bytes(data[:8], "little")  # (the file version's record)
    data = data[first:]
    starts, sizes = chain(Window(data, 0, len(data)))
    ids = events.fast.exact.classify(Window(data, 0, len(data)), starts, sizes)
    assert (ids >= 0).all() and len(starts) == 1200
    return events.fast, data, starts, sizes, ids


def _take(fast: Any, data: bytearray, starts: Any, sizes: Any, ids: Any) -> Any:
    (tail,) = {int(t) for t in fast.lid_tail[ids]}
    assert tail >= 0
    return fast.tails[tail].take(Window(data, 0, len(data)), starts, sizes, fast.lid_base[ids])


@pytest.mark.parametrize("one_size", [True, False], ids=["one size", "sizes"])
@pytest.mark.parametrize("field", ["wall", "step", "value"])
def test_a_tail_finds_each_record_whose_field_was_changed(
    tmp_path: Path, one_size: bool, field: str
) -> None:
    """A bit flipped in the wall time, the step or the value of three records: those
    three, and no other, fail their checksums; the steps are the ones written. With
    tags of one length (``one size``: each byte's table one row, no record's size added
    to its bytes) and of three (each record's row by its size)."""
    tags = ["aa", "bb", "cc"] if one_size else ["a", "bbb", "ccccc"]
    fast, data, starts, sizes, ids = _tail_records(tmp_path, tags)
    assert (len(set(sizes.tolist())) == 1) == one_size
    steps, _walls, _values, bad = _take(fast, data, starts, sizes, ids)
    assert steps.tolist() == list(range(200, 1400)) and not bad.any()
    hit = [5, 600, 1111]
    for r in hit:
        at = {"wall": 15, "step": 22, "value": int(sizes[r]) - 6}[field]
        data[int(starts[r]) + at] ^= 0x01
    bad = _take(fast, data, starts, sizes, ids)[3]
    assert np.flatnonzero(bad).tolist() == hit


def test_a_tail_reads_records_of_one_size_as_among_others(tmp_path: Path) -> None:
    """The records of one tag length, read alone (one size) and among a record of
    another size (each record's row by its size): the same steps, wall times, values
    and checksums."""
    fast, data, starts, sizes, ids = _tail_records(tmp_path, ["aa", "bbb"])
    one = np.flatnonzero(sizes == sizes.min())
    other = np.flatnonzero(sizes != sizes.min())[:1]
    both = np.sort(np.concatenate([one, other]))
    alone = _take(fast, data, starts[one], sizes[one], ids[one])
    among = _take(fast, data, starts[both], sizes[both], ids[both])
    keep = np.isin(both, one)
    for got, want in zip(alone, among, strict=True):
        assert got.tolist() == want[keep].tolist()
