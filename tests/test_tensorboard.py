"""The TensorBoard backend writes event files that TensorBoard itself reads back exactly.

Read-back goes through TensorBoard's own ``EventAccumulator`` (and, in one test, the real
``tensorboard`` server over loopback HTTP), never through aoff's code, so a framing,
checksum or protobuf mistake fails here.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import sys
import time
import types
from collections.abc import Sequence
from pathlib import Path

import anyio
import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2

import aoff._backends._tensorboard as tbmod
from aoff._backends._base import Backend, BackendContext
from aoff._backends._tensorboard import TensorBoardBackend
from aoff._core._records import StepRecord, scalars_of
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import EventEncoder
from aoff._runfolder.tensorboard._tfrecord import frame_many, masked_crc32c

from .conftest import tensorboard_accumulator as load
from .tbserver import tensorboard_server

TAGS = tuple(
    [
        "axis/iteration",
        "axis/env_steps_total",
        *(f"train/metric_{i}" for i in range(10)),
        *(f"reward/part_{i}" for i in range(8)),
        *(f"timing/t_{i}" for i in range(10)),
    ]
)
assert len(TAGS) == 30


def value(step: int, j: int) -> float:
    """Deterministic values spanning magnitudes and signs (not only small integers)."""
    return math.sin(step * 0.013 + j) * 10.0 ** ((j % 7) - 3) + (step if j == 1 else 0)


def make_records(n: int, start: int = 0, tags: Sequence[str] = TAGS) -> list[StepRecord]:
    return [
        StepRecord(
            step=s,
            iteration=s,
            wall_time=1_700_000_000.0 + s * 0.001,
            scalars=tuple((t, value(s, j)) for j, t in enumerate(tags)),
        )
        for s in range(start, start + n)
    ]


class Said:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)


def read_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def truncated_copy(src: str, dst: Path, cut: int) -> None:
    """Copy ``src`` to ``dst`` and drop its last ``cut`` bytes, as a crash would."""
    dst.parent.mkdir(parents=True)
    shutil.copyfile(src, dst)
    os.truncate(dst, os.path.getsize(dst) - cut)


async def write_all(backend: TensorBoardBackend, records: list[StepRecord], batch: int) -> None:
    for i in range(0, len(records), batch):
        await backend.write(records[i : i + batch])


def check_roundtrip(path: str, n: int) -> None:
    acc = load(path)
    assert set(acc.Tags()["scalars"]) == set(TAGS)
    steps_expected = np.arange(n)
    for j, tag in enumerate(TAGS):
        events = acc.Scalars(tag)
        steps = np.fromiter((e.step for e in events), dtype=np.int64, count=len(events))
        assert np.array_equal(steps, steps_expected), tag
        got = np.fromiter((e.value for e in events), dtype=np.float32, count=len(events))
        want = np.array([value(s, j) for s in range(n)], dtype=np.float32)
        assert np.array_equal(got, want), tag
        walls = np.fromiter((e.wall_time for e in events), dtype=np.float64, count=len(events))
        assert np.all(np.diff(walls) >= 0), tag
        assert walls[0] == pytest.approx(1_700_000_000.0)


# -- framing ---------------------------------------------------------------------------
def test_masked_crc_known_value() -> None:
    # CRC32C("123456789") = 0xE3069283 (RFC 3720 check value), then TFRecord's mask
    c = 0xE3069283
    assert masked_crc32c(b"123456789") == (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_framing_matches_tensorboard_reader() -> None:
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_crc

    for payload in (b"", b"x", b"hello world" * 100):
        framed = frame_many([payload])
        header = framed[:8]
        assert int.from_bytes(header, "little") == len(payload)
        assert int.from_bytes(framed[8:12], "little") == tb_crc(header)
        assert framed[12 : 12 + len(payload)] == payload
        assert int.from_bytes(framed[-4:], "little") == tb_crc(payload)


def test_framing_heads_kept_per_length_stay_right() -> None:
    """Each record's length head is kept per length: many lengths, repeated and
    interleaved, in one buffer, each head still its own length's checksum."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_crc

    payloads = [bytes([i % 251]) * (i % 37) for i in range(300)]
    framed = frame_many(payloads)
    pos = 0
    for payload in payloads:
        header = framed[pos : pos + 8]
        assert int.from_bytes(header, "little") == len(payload)
        assert int.from_bytes(framed[pos + 8 : pos + 12], "little") == tb_crc(header)
        assert framed[pos + 12 : pos + 12 + len(payload)] == payload
        pos += 16 + len(payload)
    assert pos == len(framed)


@pytest.mark.parametrize("width", range(1, 11))
def test_event_steps_of_every_varint_width_match_protobuf(width: int) -> None:
    """The step's varint, made without a loop up to four bytes: each width's first and
    last value, as protobuf writes them (negative steps are ten bytes)."""
    enc = EventEncoder()
    lo, hi = (1 << (7 * (width - 1))) if width > 1 else 1, (1 << (7 * width)) - 1
    for step in {lo, lo + 1, hi - 1, hi}:
        if step < 2**63:
            rec = StepRecord(step, 1, 1.0, (("a", 1.0),))
            assert enc.encode(rec) == protobuf_bytes(rec), step
    rec = StepRecord(-width, 1, 1.0, (("a", 1.0),))
    assert enc.encode(rec) == protobuf_bytes(rec)


def protobuf_bytes(rec: StepRecord) -> bytes:
    """What TensorBoard's own protobuf classes serialise for ``rec``."""
    ev = event_pb2.Event(wall_time=rec.wall_time, step=rec.step)
    for tag, value in rec.scalars:
        ev.summary.value.add(tag=tag, simple_value=value)
    return bytes(ev.SerializeToString())


@pytest.mark.parametrize(
    "rec",
    [
        StepRecord(4096, 1, 1_718_000_000.25, (("train/q_loss", 0.5), ("reward/mean", -123.4))),
        StepRecord(0, 0, 0.0, (("a", 0.0),)),  # zero step and wall time are omitted
        StepRecord(-5, -5, 1.0, (("neg/step", 1.0),)),  # int64 two's complement varint
        StepRecord(2**62, 1, 2.0, (("big", 1e300), ("small", -1e300), ("tiny", 1e-50))),
        StepRecord(7, 7, 3.0, (("nan", math.nan), ("inf", math.inf), ("ninf", -math.inf))),
        StepRecord(
            8, 8, 4.0, (("ünïcode/タグ", 1.5), ("x" * 300, 2.5), ("dup", 1.0), ("dup", 2.0))
        ),
        StepRecord(9, 9, 5.0, ()),  # no scalars: no summary field
    ],
)
def test_event_encoder_matches_protobuf_byte_for_byte(rec: StepRecord) -> None:
    enc = EventEncoder()
    assert enc.encode(rec) == protobuf_bytes(rec)
    assert enc.encode(rec) == protobuf_bytes(rec)  # again, from the tag cache


def test_event_encoder_from_the_folds_columns_matches_protobuf() -> None:
    """Records whose scalars keep their columns (the fold's ``Scalars``), in changing
    tag sequences, one value past float32 (±inf, value by value): protobuf's bytes."""
    enc = EventEncoder()
    seqs = [("a", "b/c", "ünï"), ("a", "b/c"), ("a", "b/c", "ünï"), ("x",) * 3]
    for i in range(12):
        tags = seqs[i % len(seqs)]
        values = tuple(float(i * 10 + j) for j in range(len(tags)))
        if i == 7:
            values = (1e300, *values[1:])
        rec = StepRecord(i, i, 1.5 + i, scalars_of(tags, values))
        assert enc.encode(rec) == protobuf_bytes(rec)


def test_encode_records_is_protobuf_event() -> None:
    recs = make_records(3)
    data = encode_records(EventEncoder(), recs)
    pos = 0
    for rec in recs:
        n = int.from_bytes(data[pos : pos + 8], "little")
        ev = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + n])
        pos += 16 + n
        assert ev.step == rec.step and ev.wall_time == rec.wall_time
        assert [(v.tag, v.simple_value) for v in ev.summary.value] == [
            (t, float(np.float32(x))) for t, x in rec.scalars
        ]
    assert pos == len(data)


# -- the backend -----------------------------------------------------------------------
def test_is_a_backend(tmp_path: Path) -> None:
    assert isinstance(TensorBoardBackend(tmp_path), Backend)
    assert TensorBoardBackend(tmp_path).name == "tensorboard"
    with pytest.raises(ValueError, match="path separator"):
        TensorBoardBackend(tmp_path, filename_suffix="a/b")


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # asyncio only: the read-back is slow
async def test_10k_steps_30_tags_roundtrip(tmp_path: Path) -> None:
    """The stress run: 300,000 scalars in 10 batches of 1,000 steps (asyncio only; the trio
    run below uses 5,000 steps). It was 100,000 steps, then 25,000, most of it TensorBoard's
    reader reading them back; 10 batches prove the same framing and ordering."""
    n = 10_000
    records = make_records(n)
    backend = TensorBoardBackend(tmp_path / "tb")
    said = Said()
    await backend.open(BackendContext(say=said))
    await write_all(backend, records, 1000)
    await backend.flush()
    await backend.close()
    assert said.lines == [f"[dim]TensorBoard logging to: {tmp_path / 'tb'}[/]"]
    assert backend.path is not None
    assert os.listdir(tmp_path / "tb") == [os.path.basename(backend.path)]
    check_roundtrip(backend.path, n)


@pytest.mark.anyio
async def test_roundtrip_on_each_event_loop(tmp_path: Path) -> None:
    n = 5_000
    backend = TensorBoardBackend(tmp_path)
    await backend.open(BackendContext())
    await write_all(backend, make_records(n), 700)  # uneven batches, one short at the end
    await backend.close()
    assert backend.path is not None
    check_roundtrip(backend.path, n)


@pytest.mark.anyio
async def test_file_name_and_first_event(tmp_path: Path) -> None:
    before = int(time.time())
    backend = TensorBoardBackend(tmp_path / "a" / "b", filename_suffix=".aoff")
    await backend.open(BackendContext())
    await backend.close()
    assert backend.path is not None
    name = os.path.basename(backend.path)
    assert os.path.dirname(backend.path) == str(tmp_path / "a" / "b")
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)", name)
    assert m is not None, name
    assert before <= int(m.group(1)) <= int(time.time())
    assert m.group(2) == f"{socket.gethostname()}.{os.getpid()}.0.aoff"
    data = read_bytes(backend.path)
    n = int.from_bytes(data[:8], "little")
    first = event_pb2.Event.FromString(data[12 : 12 + n])
    assert first.file_version == "brain.Event:2"
    assert first.wall_time > 0
    assert len(data) == 16 + n  # nothing else: no records were written


@pytest.mark.anyio
async def test_non_finite_values_roundtrip(tmp_path: Path) -> None:
    specials = [
        ("x/nan", math.nan),
        ("x/inf", math.inf),
        ("x/ninf", -math.inf),
        ("x/big", 1e300),  # beyond float32: stored as +inf, like SummaryWriter
        ("x/negzero", -0.0),
        ("x/tiny", 1e-30),
    ]
    recs = [StepRecord(s, s, 100.0 + s, tuple(specials)) for s in range(3)]
    backend = TensorBoardBackend(tmp_path)
    await backend.open(BackendContext())
    await backend.write(recs)
    await backend.close()
    assert backend.path is not None
    acc = load(backend.path)
    got = {tag: [e.value for e in acc.Scalars(tag)] for tag, _ in specials}
    assert all(math.isnan(v) for v in got["x/nan"])
    assert got["x/inf"] == [math.inf] * 3
    assert got["x/ninf"] == [-math.inf] * 3
    assert got["x/big"] == [math.inf] * 3
    assert got["x/negzero"] == [0.0] * 3 and math.copysign(1, got["x/negzero"][0]) == -1
    assert got["x/tiny"] == [float(np.float32(1e-30))] * 3


@pytest.mark.anyio
async def test_repeated_tag_is_written_twice(tmp_path: Path) -> None:
    backend = TensorBoardBackend(tmp_path)
    await backend.open(BackendContext())
    await backend.write([StepRecord(1, 1, 5.0, (("a/x", 1.0), ("a/x", 2.0)))])
    await backend.close()
    assert backend.path is not None
    data = read_bytes(backend.path)
    first_len = int.from_bytes(data[:8], "little")
    pos = 16 + first_len
    n = int.from_bytes(data[pos : pos + 8], "little")
    ev = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + n])
    assert [(v.tag, v.simple_value) for v in ev.summary.value] == [("a/x", 1.0), ("a/x", 2.0)]


@pytest.mark.anyio
async def test_two_backends_same_second_never_clobber(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen = types.SimpleNamespace(time=lambda: 1_700_000_000.25)
    monkeypatch.setattr(tbmod, "time", frozen)
    base = f"events.out.tfevents.1700000000.{socket.gethostname()}.{os.getpid()}"
    (tmp_path / f"{base}.0").write_bytes(b"someone else's file")

    a, b = TensorBoardBackend(tmp_path), TensorBoardBackend(tmp_path)
    await a.open(BackendContext())
    await b.open(BackendContext())
    await a.write(make_records(10))
    await b.write(make_records(20, start=100))
    await a.close()
    await b.close()

    assert (tmp_path / f"{base}.0").read_bytes() == b"someone else's file"
    assert a.path == str(tmp_path / f"{base}.1")
    assert b.path == str(tmp_path / f"{base}.2")
    assert [e.step for e in load(a.path).Scalars("axis/iteration")] == list(range(10))
    assert [e.step for e in load(b.path).Scalars("axis/iteration")] == list(range(100, 120))


@pytest.mark.anyio
async def test_truncated_last_record_keeps_earlier_ones(tmp_path: Path) -> None:
    n = 200
    records = make_records(n)
    backend = TensorBoardBackend(tmp_path / "run")
    await backend.open(BackendContext())
    await write_all(backend, records, 64)
    await backend.close()
    assert backend.path is not None

    last_len = len(encode_records(EventEncoder(), records[-1:]))
    copy = tmp_path / "copy" / os.path.basename(backend.path)
    truncated_copy(backend.path, copy, cut=last_len - 12 - (last_len - 16) // 2)  # mid-payload

    acc = load(copy)
    for j, tag in enumerate(TAGS):
        events = acc.Scalars(tag)
        assert [e.step for e in events] == list(range(n - 1)), tag
        assert [e.value for e in events] == [float(np.float32(value(s, j))) for s in range(n - 1)]


@pytest.mark.anyio
async def test_writes_reach_the_os_without_flush(tmp_path: Path) -> None:
    """Durable without flush(): another reader sees each batch as soon as write returns."""
    backend = TensorBoardBackend(tmp_path)
    await backend.open(BackendContext())
    await backend.write(make_records(5))
    assert backend.path is not None
    assert len(load(backend.path).Scalars("axis/iteration")) == 5
    await backend.write(make_records(5, start=5))
    assert len(load(backend.path).Scalars("axis/iteration")) == 10
    await backend.close()


@pytest.mark.anyio
async def test_close_without_open_and_twice(tmp_path: Path) -> None:
    backend = TensorBoardBackend(tmp_path / "never")
    await backend.close()
    await backend.close()
    assert not (tmp_path / "never").exists()
    with pytest.raises(RuntimeError):
        await backend.write(make_records(1))


@pytest.mark.anyio
async def test_write_after_close_raises(tmp_path: Path) -> None:
    backend = TensorBoardBackend(tmp_path)
    await backend.open(BackendContext())
    await backend.close()
    with pytest.raises(RuntimeError):
        await backend.write(make_records(1))


@pytest.mark.anyio
async def test_missing_tensorboard_is_a_noop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto", None)
    said = Said()
    backend = TensorBoardBackend(tmp_path / "tb")
    await backend.open(BackendContext(say=said))
    await backend.write(make_records(3))
    await backend.flush()
    await backend.close()
    assert said.lines == ["[yellow]tensorboard not installed[/]"]
    assert backend.disabled
    assert not (tmp_path / "tb").exists()


# -- the real TensorBoard server -------------------------------------------------------
@pytest.mark.slow  # starts the real tensorboard server
def test_real_tensorboard_server_shows_the_scalars(tmp_path: Path) -> None:
    n = 300
    logdir = tmp_path / "logs"

    async def produce() -> None:
        backend = TensorBoardBackend(logdir)
        await backend.open(BackendContext())
        await write_all(backend, make_records(n), 100)
        await backend.close()

    anyio.run(produce)

    tag = "train/metric_3"
    with tensorboard_server(logdir, "--load_fast=false") as server:

        def served() -> tuple[object, list[list[float]]] | None:
            tags = server.get("/data/plugin/scalars/tags")
            if not (isinstance(tags, dict) and tag in tags.get(".", {})):
                return None
            points = server.scalars(".", tag)
            return (tags, points) if len(points) == n else None

        tags, points = server.until(served, f"{n} points of {tag}")

    assert isinstance(points, list)
    assert isinstance(tags, dict) and set(tags["."]) == set(TAGS)
    j = TAGS.index(tag)
    assert [p[1] for p in points] == list(range(n))
    assert [p[2] for p in points] == [float(np.float32(value(s, j))) for s in range(n)]


@pytest.mark.anyio
async def test_a_resumed_sub_run_file_sorts_after_the_earlier_sessions(tmp_path: Path) -> None:
    # Readers take a folder's files in name order. A resumed session's file in a sub-run
    # folder (a producer's, or SummaryWriter.add_scalars') must sort after the earlier
    # session's even in the same second, as its main file does, or its points read first.
    def rec(step: int, value: float) -> StepRecord:
        return StepRecord(step, step, 1.0, (("q", value),), producer="collector")

    first = TensorBoardBackend(tmp_path)
    await first.open(BackendContext())
    await first.write([rec(1, 1.0), rec(2, 2.0)])
    await first.close()
    second = TensorBoardBackend(tmp_path, purge_after=1)
    await second.open(BackendContext())
    await second.write([rec(2, 20.0), rec(3, 30.0)])
    await second.close()
    names = sorted(os.listdir(tmp_path / "collector"))
    stamps = [int(re.match(r"events\.out\.tfevents\.(\d+)\.", n)[1]) for n in names]  # type: ignore[index]
    assert len(stamps) == 2 and stamps[1] > stamps[0], names
    points = [(e.step, e.value) for e in load(str(tmp_path / "collector")).Scalars("q")]
    assert points == [(1, 1.0), (2, 2.0), (2, 20.0), (3, 30.0)]
