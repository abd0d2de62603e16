"""The cycle path (``_evcycle``) on a regular file: its last rows, fewer than a block of
eight, are read by the cycle too, each record's fixed bytes and data checksum checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import aoff
from aoff._runfolder.tensorboard._evfolder import EventFolder

from .test_read_scalars import _record_ends, _torch_run, lost_points, read_broken


def test_the_last_rows_of_a_cycle_are_checked_as_every_other(tmp_path: Path) -> None:
    """torch's three tags a step: a value byte flipped in the last record and a tag byte
    in the fifth from the end (both in the last few rows) are each skipped and counted,
    every other point read as from the intact file."""
    path = _torch_run(tmp_path / "intact", 400)
    intact = aoff.read_scalars(path.parent)
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    data[ends[-1] - 6] ^= 0x10  # the last record's value
    data[ends[-5] - 10] ^= 0x01  # the tag's last byte, four records before
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.problems == [f"{broken / path.name}: 2 corrupt record(s) skipped"]
    lost = lost_points(intact, df)
    assert sorted(lost["step"]) == [398, 399] and len(lost) == 2


def _sb3_run(folder: Path, dumps: int) -> Path:
    """SB3's logger: eight tags a dump, every 100 steps (the step's varint one byte wider
    at 128 and at 16,384); its one event file."""
    from stable_baselines3.common.logger import configure

    log = configure(str(folder), ["tensorboard"])
    for it in range(dumps):
        for t in range(8):
            log.record(f"train/loss_{t}", np.sin(it / 50 + t))
        log.dump(step=it * 100)
    log.close()
    (path,) = folder.iterdir()
    return path


def test_the_cycle_carries_on_where_the_step_widens(tmp_path: Path) -> None:
    """SB3's file: where the step needs a third varint byte the cycle breaks; a short sweep
    learns the wider layouts and the cycle takes up the rest (most of the file). A value
    byte flipped in the first record of the wider step and in one a few cycles after
    (in that short sweep) is each skipped and counted, every other point read as from
    the intact file."""
    path = _sb3_run(tmp_path / "intact", 800)
    folder = EventFolder()
    folder.read([str(path)])
    assert folder.cycle.records > 0.75 * 6400, folder.cycle.records
    intact = aoff.read_scalars(path.parent)
    data = bytearray(path.read_bytes())
    ends = _record_ends(bytes(data))
    first_wide = 1 + 164 * 8  # after the file version: dump 164, step 16,400
    data[ends[first_wide] - 6] ^= 0x10
    data[ends[first_wide + 3 * 8 + 2] - 6] ^= 0x10
    reader, df, broken = read_broken(tmp_path, path.name, bytes(data))
    assert reader.problems == [f"{broken / path.name}: 2 corrupt record(s) skipped"]
    lost = lost_points(intact, df)
    assert sorted(lost["step"]) == [16400, 16700], lost
