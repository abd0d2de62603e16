"""The JSONL backend writes strict JSON, one object per step, with every tag."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from aoff._backends._base import Backend, BackendContext
from aoff._backends._jsonl import JsonlBackend
from aoff._core._records import StepRecord

TAGS = [f"grp{j % 4}/tag_{j}" for j in range(30)]


def val(step: int, j: int) -> float:
    return (step * 31 + j * 7) % 1000 / 7.0 - 50.0


def make_records(n: int, start: int = 0) -> list[StepRecord]:
    return [
        StepRecord(s * 10, s, 1000.0 + s / 8, tuple((t, val(s, j)) for j, t in enumerate(TAGS)))
        for s in range(start, start + n)
    ]


def _no_constants(name: str) -> float:
    raise AssertionError(f"non-strict JSON constant {name} in output")


def read_rows(path: Path) -> list[dict[str, object]]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line, parse_constant=_no_constants) for line in text.splitlines()]


@pytest.mark.anyio
async def test_all_rows_all_tags(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "metrics.jsonl"
    backend = JsonlBackend(path)
    assert isinstance(backend, Backend) and backend.name == "jsonl"
    said: list[str] = []
    await backend.open(BackendContext(say=said.append))
    records = make_records(3000)
    for i in range(0, len(records), 1000):
        await backend.write(records[i : i + 1000])
        await backend.flush()
    await backend.write(make_records(1, start=3000))  # a one-record batch too
    await backend.close()
    assert said == [f"[dim]JSONL logging to: {path}[/]"]

    rows = read_rows(path)
    assert len(rows) == 3001
    for s, row in enumerate(rows):
        assert list(row)[:3] == ["step", "iteration", "wall_time"]
        assert row["step"] == s * 10 and row["iteration"] == s
        assert row["wall_time"] == 1000.0 + s / 8
        assert len(row) == 3 + len(TAGS)
        for j, t in enumerate(TAGS):
            assert row[t] == val(s, j)  # float repr round-trips exactly


@pytest.mark.anyio
async def test_non_finite_are_strings_and_repeats_keep_last(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    backend = JsonlBackend(path)
    await backend.open(BackendContext())
    await backend.write(
        [
            StepRecord(
                1,
                1,
                2.5,
                (
                    ("a/nan", math.nan),
                    ("a/inf", math.inf),
                    ("a/ninf", -math.inf),
                    ("a/rep", 1.0),
                    ("a/ok", 3.25),
                    ("a/rep", 2.0),
                    ("step", 99.0),  # a tag that shadows a fixed key does not win
                    ("ünï/cödé", 1.5),
                ),
            ),
            StepRecord(2, 2, 3.0, (("a/nan", 0.5),)),
        ]
    )
    await backend.close()
    rows = read_rows(path)
    assert rows[0] == {
        "step": 1,
        "iteration": 1,
        "wall_time": 2.5,
        "a/nan": "nan",
        "a/inf": "inf",
        "a/ninf": "-inf",
        "a/rep": 2.0,
        "a/ok": 3.25,
        "ünï/cödé": 1.5,
    }
    assert math.isnan(float(rows[0]["a/nan"]))  # type: ignore[arg-type]
    assert float(rows[0]["a/ninf"]) == -math.inf  # type: ignore[arg-type]
    assert rows[1] == {"step": 2, "iteration": 2, "wall_time": 3.0, "a/nan": 0.5}


@pytest.mark.anyio
async def test_appends_to_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": -1}\n', encoding="utf-8")
    backend = JsonlBackend(path)
    await backend.open(BackendContext())
    await backend.write(make_records(2))
    await backend.close()
    rows = read_rows(path)
    assert [r["step"] for r in rows] == [-1, 0, 10]


@pytest.mark.anyio
async def test_lifecycle_errors(tmp_path: Path) -> None:
    backend = JsonlBackend(tmp_path / "x" / "m.jsonl")
    await backend.close()  # without open: fine, creates nothing
    assert not (tmp_path / "x").exists()
    with pytest.raises(RuntimeError):
        await backend.write(make_records(1))
    other = JsonlBackend(tmp_path / "m.jsonl")
    await other.open(BackendContext())
    await other.close()
    await other.close()
    with pytest.raises(RuntimeError):
        await other.write(make_records(1))
