"""Each record's own data checksum in bulk (``_evcrc``): the rows of a cycle and the
records of an irregular file (CleanRL's episode returns between its losses, read by the
sweep) are each checked against the checksum they store, so records corrupted alike are
each caught (a check over several records' XOR would let equal errors cancel)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aoff
from aoff._runfolder.tensorboard._evcrc import RowChecksums
from aoff._runfolder.tensorboard._evlayout import layout_of
from aoff._runfolder.tensorboard._tfrecord import crc32c, frame_many

from .test_read_scalars import _record_ends, lost_points, read_broken, write_irregular_runs


class _Plugins:
    """The folder state ``layout_of`` reads: no tag known yet."""

    def __init__(self) -> None:
        self.prefix = ""
        self.plugins: dict[str, str | None] = {}


def test_row_checks_name_the_first_row_whose_record_is_wrong_as_crc32c_says() -> None:
    """Rows of two records each (wall time, step, value varying; some of those bytes the
    same in every row, some not): the first row with a record whose stored checksum
    is not its data's CRC32C, found by the bulk check, is the one ``crc32c`` names."""
    rng = np.random.default_rng(4)
    events = []
    for step in range(64):
        for tag, value in ((b"loss", rng.random()), (b"q", 5.0)):  # q: a constant value
            summary = b"\x0a" + bytes([len(tag) + 7]) + b"\x0a" + bytes([len(tag)]) + tag
            summary += b"\x15" + np.float32(value).tobytes()
            wall = np.float64(1.7e9 + step * 0.37 + rng.random()).tobytes()
            events.append(b"\x09" + wall + b"\x10" + bytes([step]) + b"\x2a"
                          + bytes([len(summary)]) + summary)  # fmt: skip
    buf = bytearray(frame_many(events))
    ends = [0, *_record_ends(bytes(buf))]
    layouts = [layout_of(_Plugins(), buf, ends[i], ends[i + 1] - ends[i] - 16) for i in (0, 1)]
    records = []
    for lay, at in zip(layouts, ends[:2], strict=True):
        assert lay is not None
        base, runs = lay.crc_tables()
        var = [(off + i, t[i]) for off, width, t in runs for i in range(width)]
        records.append((at, lay.size, base, var))
    check = RowChecksums(ends[2], records)
    assert check.first_bad(buf, 0, 64) == 64
    for bad_rows in ([40, 41], [9, 17, 25, 33, 41, 49, 57, 63]):  # alike: equal errors
        broken = bytearray(buf)
        for row in bad_rows:
            broken[ends[2 * row + 1] - 6] ^= 0x10  # the "q" record's value (constant)
        truth = [
            i
            for i in range(128)
            if crc32c(bytes(broken[ends[i] + 12 : ends[i + 1] - 4]))
            != crc32c(bytes(buf[ends[i] + 12 : ends[i + 1] - 4]))
        ]
        assert [i // 2 for i in truth] == bad_rows
        assert check.first_bad(broken, 0, 64) == bad_rows[0]
        assert check.first_bad(broken, 0, bad_rows[0]) == bad_rows[0]


@pytest.fixture(scope="module")
def sac_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """CleanRL's SAC logging through torch's writer (its event file), and what reads back."""
    (run, _ppo) = write_irregular_runs(tmp_path_factory.mktemp("intact"), 3000)
    (path,) = run.iterdir()
    return path, aoff.read_scalars(run)


@pytest.mark.parametrize("corrupted", [2, 10])
def test_episode_returns_corrupted_alike_are_each_caught_by_the_sweep(
    tmp_path: Path, sac_run: tuple[Path, Any], corrupted: int
) -> None:
    """The same bit flipped in the value of ``corrupted`` episode returns in a row of
    CleanRL's SAC logging (records in no repeating order: read by the sweep, one group
    of records a window): every one is skipped and counted, no corrupted value comes
    back, every other point is read."""
    path, intact = sac_run
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    returns = [r for r in range(1, len(ends)) if b"episodic_return" in data[ends[r - 1] : ends[r]]]
    hit = returns[len(returns) // 2 :][:corrupted]
    for r in hit:
        data[ends[r] - 6] ^= 0x10  # a value byte
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.bulk_records > 0.9 * len(ends)
    assert reader.problems == [f"{broken / path.name}: {corrupted} corrupt record(s) skipped"]
    lost = lost_points(intact, df)
    assert len(lost) == corrupted and set(lost["tag"]) == {"charts/episodic_return"}
