"""The cycle path (``_evcycle``) on a regular file: its last rows, fewer than a block of
eight, are read by the cycle too, each record's fixed bytes and data checksum checked."""

from __future__ import annotations

from pathlib import Path

import aoff

from .test_read_scalars import _record_ends, _torch_run


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
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / path.name).write_bytes(bytes(data))
    reader = aoff.ScalarReader(broken)
    df = reader.read()
    assert reader.problems == [f"{broken / path.name}: 2 corrupt record(s) skipped"]
    merged = intact.drop(columns="run").merge(
        df.drop(columns="run"), on=["tag", "step", "wall_time", "value"], how="outer",
        indicator=True,
    )  # fmt: skip
    assert (merged["_merge"] == "right_only").sum() == 0
    lost = merged[merged["_merge"] == "left_only"]
    assert sorted(lost["step"]) == [398, 399] and len(lost) == 2
