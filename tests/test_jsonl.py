"""The JSONL backend writes strict JSON, one object per step, with every tag."""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path
from typing import Any, BinaryIO, cast

import pytest

from aoff import FinishReport, NullDisplay, OffPolicyLogger
from aoff._backends._base import Backend, BackendContext
from aoff._backends._file import AppendFileBackend
from aoff._backends._jsonl import JsonlBackend
from aoff._core._records import StepRecord
from aoff._runfolder.lines._jsonl import encode_lines

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


def test_fast_lines_are_the_general_paths_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's own record is encoded through its tags' msgspec row type; every line is
    byte for byte what the general path (a dict a line) writes, whatever the tags and
    values (the fast path steps aside for what it cannot write the same)."""
    from aoff._core._records import scalars_of
    from aoff._runfolder.lines import _jsonl

    tags = ["a", "b%s", "ünï/タグ", 'q"uote', "back\\slash", "ctrl\x01", "null", "x,y"]
    tags += ["step", "wall_time", "producer", "run"]
    values = [0.0, -0.0, 1e-5, 1e300, 5e-324, 123456789.125, -1.5, 2.0**60, 0.1, math.nan]
    values += [math.inf, -math.inf, 3, True]
    records: list[StepRecord] = []
    for i in range(600):
        k = i % 7
        chosen = tuple(tags[(i * 5 + j * 3) % len(tags)] for j in range(k))
        vals = tuple(values[(i * 7 + j) % len(values)] for j in range(k))
        scalars = scalars_of(chosen, vals) if i % 2 else tuple(zip(chosen, vals, strict=True))
        producer = "p" if i % 11 == 0 else None
        wall = 0.0 if i % 13 == 0 else 1.7e9 + i / 3
        records.append(StepRecord(i * 4096 - 5, i, wall, scalars, producer=producer))
    records += make_records(20)
    fast = encode_lines(records)
    assert any(row is not None for row in _jsonl._row_types.values())  # it was used
    monkeypatch.setattr(_jsonl, "_fast_row", lambda rec: None)
    assert fast == encode_lines(records)


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


# -- a full disk: a failed batch leaves nothing of itself ------------------------------------
class TearingFile:
    """Wraps the backend's file: once a batch would take it past ``limit`` bytes, that
    write hands half the batch to the file and then fails with ENOSPC (what a full disk
    does), ``tears`` times (``None``: for ever); after that, writes go through again."""

    def __init__(self, f: BinaryIO, *, limit: int, tears: int | None) -> None:
        self.f = f
        self.limit = limit
        self.tears = tears
        self.torn = 0  # batches torn so far
        self._fail_next = False

    def write(self, data: bytes) -> int:
        if self._fail_next:
            self._fail_next = False
            self.torn += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        size = os.fstat(self.f.fileno()).st_size
        if size + len(data) > self.limit and (self.tears is None or self.torn < self.tears):
            self._fail_next = True
            return self.f.write(data[: max(len(data) // 2, 1)])
        return self.f.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.f, name)


class Tearing(AppendFileBackend):
    """Mixed in before a real file backend (JSONL, CSV): its file is a :class:`TearingFile`."""

    def __init__(self, path: Path, *, limit: int, tears: int | None) -> None:
        super().__init__(path)
        self.limit = limit
        self.tears = tears
        self.tearing: TearingFile | None = None

    def _open_sync(self) -> None:
        super()._open_sync()
        assert self._file is not None
        self.tearing = TearingFile(self._file, limit=self.limit, tears=self.tears)
        self._file = cast(BinaryIO, self.tearing)


class TearingJsonlBackend(Tearing, JsonlBackend):
    """The real JSONL backend, on a :class:`TearingFile`."""


@pytest.mark.anyio
async def test_a_torn_batch_is_cut_back_and_a_retry_leaves_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    first = make_records(3)
    backend = TearingJsonlBackend(path, limit=len(encode_lines(first)), tears=1)
    await backend.open(BackendContext())
    await backend.write(first)
    # write() returned: the batch is in the file, without flush() (nothing is buffered)
    assert [r["iteration"] for r in read_rows(path)] == [0, 1, 2]
    size = path.stat().st_size
    second = make_records(5, start=3)
    with pytest.raises(OSError) as info:
        await backend.write(second)
    assert info.value.errno == errno.ENOSPC
    assert backend.tearing is not None and backend.tearing.torn == 1  # half was written...
    assert path.stat().st_size == size  # ...and cut back: nothing of the batch is left
    assert [r["iteration"] for r in read_rows(path)] == [0, 1, 2]
    await backend.write(second)  # the runner's retry
    await backend.write(make_records(2, start=8))
    await backend.close()
    assert [r["iteration"] for r in read_rows(path)] == list(range(10))


def run_logger(backend: JsonlBackend, n: int) -> FinishReport:
    log = OffPolicyLogger(
        log_backend="none", backends=[backend], display=NullDisplay(), handle_sigterm=False
    )
    for i in range(1, n + 1):
        log.log_step(i, {"loss": i / 3})
        if i % 10 == 0:
            log.flush()  # batches of 10
    return log.finish()


def test_a_transient_full_disk_is_retried_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    backend = TearingJsonlBackend(path, limit=8_000, tears=2)  # the runner retries twice
    report = run_logger(backend, 200)
    assert backend.tearing is not None and backend.tearing.torn == 2
    assert report.backend_written == {"jsonl": 200} and report.complete
    assert [r["iteration"] for r in read_rows(path)] == list(range(1, 201))


def test_a_full_disk_leaves_exactly_the_written_rows(tmp_path: Path) -> None:
    """``backend_written`` is the number of lines in the file; every line is whole."""
    path = tmp_path / "m.jsonl"
    backend = TearingJsonlBackend(path, limit=8_000, tears=None)
    report = run_logger(backend, 200)
    assert backend.tearing is not None and backend.tearing.torn == 3  # 1 try + 2 retries
    written, lost = report.backend_written["jsonl"], report.backend_lost["jsonl"]
    rows = read_rows(path)
    assert 0 < written == len(rows) < 200 and written + lost == 200
    assert [r["iteration"] for r in rows] == list(range(1, written + 1))
    assert "No space left on device" in report.backend_errors["jsonl"]
    assert path.stat().st_size <= 8_000
