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


def test_the_wider_cycle_is_guessed_from_the_next_row(tmp_path: Path) -> None:
    """SB3's file: where the step widens the cycle is guessed from the records one byte
    longer (each checked by its checksums and known the cycle's layout but for the step),
    not found again over two rows read one by one; the points are the same. A record of
    the guessed row corrupted (its value, or a tag byte: no guess), or one of the row
    after it (the cycle path checks it), is each skipped and counted, every other point
    as from the intact file."""
    path = _sb3_run(tmp_path / "intact", 800)
    folder = EventFolder()
    folder.read([str(path)])
    # 6,401 records (the file version first): ~44 read one by one without the guess
    assert 6401 - folder.bulk_records <= 30, folder.bulk_records
    intact = aoff.read_scalars(path.parent)
    ends = _record_ends(path.read_bytes())
    first_wide = 1 + 164 * 8  # after the file version: dump 164, step 16,400
    for n, (record, back, flip, steps) in enumerate(
        [
            (first_wide + 5, 6, 0x10, [16400]),  # a value, in the guessed row
            (first_wide + 8 + 3, 6, 0x10, [16500]),  # a value, in the row after it
            (first_wide + 8 + 3, 10, 0x01, [16500]),  # a tag's last byte, there
            (first_wide + 2, 10, 0x01, [16400]),  # a tag's last byte, in the guessed row
        ]
    ):
        data = bytearray(path.read_bytes())
        data[ends[record] - back] ^= flip
        (tmp_path / str(n)).mkdir()
        reader, df, broken = read_broken(tmp_path / str(n), path.name, bytes(data))
        assert reader.problems == [f"{broken / path.name}: 1 corrupt record(s) skipped"]
        lost = lost_points(intact, df)
        assert sorted(lost["step"]) == steps and len(lost) == 1, (n, lost)
