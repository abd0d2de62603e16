"""Column batches (``_core/_columns``) and the TensorBoard records framed from them in
bulk (``_runfolder/tensorboard/_columns``): the same bytes as the per-event encoder, record for
record, on adversarial records, and the same values read back by TensorBoard."""

from __future__ import annotations

import math
import struct
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoff._core._columns import ScalarColumns, column_runs
from aoff._core._records import Record, StepRecord, TextRecord, scalars_of, step_record
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import FILE_VERSION, EventEncoder, load_event_class
from aoff._runfolder.tensorboard._tfrecord import frame_many

from .conftest import tensorboard_accumulator

TAG_POOL = ("loss", "train/q1", "reward/mean", "ünï/cödé", "日本/語", "a" * 130, "x/y/z")
I64 = st.integers(-(2**63), 2**63 - 1)
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),  # NaNs of every sign and payload
    st.sampled_from([0.0, -0.0, 1e300, -1e300, 3.4028235e38, 3.4028236e38, 1e-46]),
)


def per_event(records: list[StepRecord]) -> bytes:
    """Today's encoder, record by record (never the bulk path)."""
    return frame_many(map(EventEncoder().encode, records))


@st.composite
def batches(draw: st.DrawFn) -> list[Record]:
    """Runs of records with one tag sequence (tags appear and vanish between runs),
    steps from 0 to int64's ends, wall times with 0, and records of other kinds between
    them (a text: the per-event path)."""
    out: list[Record] = []
    for _ in range(draw(st.integers(1, 4))):
        tags = tuple(draw(st.lists(st.sampled_from(TAG_POOL), min_size=1, max_size=6)))
        for _ in range(draw(st.integers(1, 24))):
            step = draw(st.one_of(st.integers(0, 2**35), I64))
            wall = draw(st.sampled_from([0.0, 1.7e9, 1.7e9 + 0.25, -0.0]))
            values = tuple(draw(VALUES) for _ in tags)
            out.append(step_record(step, 1, wall, scalars_of(tags, values)))
        if draw(st.booleans()):
            out.append(TextRecord(3, 1.0, (("t", "hi"),)))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_bulk_framing_is_the_per_event_encoders_bytes(records: list[Record]) -> None:
    assert encode_records(EventEncoder(), records) == _per_event_with_texts(records)


def _per_event_with_texts(records: list[Record]) -> bytes:
    """The per-event path with ``SummaryWriter``'s texts (one record at a time)."""
    enc = EventEncoder()
    return b"".join(encode_records(enc, (rec,)) for rec in records)


def test_column_runs_keep_order_and_split_at_irregular_records() -> None:
    a, b = ("x", "y"), ("x",)
    recs = [step_record(i, i, 1.0, scalars_of(a, (float(i), 2.0))) for i in range(10)]
    text = TextRecord(3, 1.0, (("t", "hi"),))
    recs += [text, *(step_record(i, i, 1.0, scalars_of(b, (float(i),))) for i in range(3))]
    got = column_runs(recs)
    assert type(got[0]) is ScalarColumns and len(got[0]) == 10
    assert got[0].values[:, 0].tolist() == [float(i) for i in range(10)]
    assert got[0].steps.tolist() == list(range(10))
    assert got[1] is text and got[2:] == recs[11:]  # a short run stays records


def test_a_step_beyond_int64_keeps_the_encoders_own_error() -> None:
    recs = [
        step_record(2**63 if i == 4 else i, i, 1.0, scalars_of(("x",), (1.0,))) for i in range(9)
    ]
    assert type(column_runs(recs)[0]) is StepRecord
    try:
        encode_records(EventEncoder(), recs)
    except ValueError as exc:
        assert "out of range" in str(exc)
    else:  # pragma: no cover - the assertion's message
        raise AssertionError("a step beyond int64 was written")


def test_tensorboard_reads_the_bulk_records_bit_for_bit(tmp_path: Path) -> None:
    tags = ("train/loss", "reward/mean", "ünï/x")
    special = [math.nan, -math.inf, math.inf, 1e300, -0.0, 1e-46, 0.1]
    recs = [
        step_record(i * 4096, i, 1.7e9 + i, scalars_of(tags, (special[i % 7], i * 0.5, -i)))
        for i in range(300)
    ]
    header = frame_many(
        [load_event_class()(wall_time=1.0, file_version=FILE_VERSION).SerializeToString()]
    )
    for name, data in (("bulk", encode_records(EventEncoder(), recs)), ("per", per_event(recs))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.out.tfevents.1.h").write_bytes(header + data)
    bulk, per = (tensorboard_accumulator(tmp_path / n) for n in ("bulk", "per"))
    f32 = struct.Struct("<f").pack
    for j, tag in enumerate(tags):
        got, want = bulk.Scalars(tag), per.Scalars(tag)
        assert [(e.step, e.wall_time) for e in got] == [(r.step, r.wall_time) for r in recs]
        assert [f32(e.value) for e in got] == [f32(e.value) for e in want]
        with_inf = [f32(r.scalars[j][1]) if abs(r.scalars[j][1]) < 1e39 else None for r in recs]
        assert [f32(e.value) for e, w in zip(got, with_inf, strict=True) if w] == [
            w for w in with_inf if w
        ]


def _drawn_table(data: st.DataObject, tags: tuple[str, ...], n: int) -> ScalarColumns:
    """A run fold's table of ``n`` rows of ``tags``: steps of every varint length, wall
    times of either zero's sign, values from :data:`VALUES`."""
    import numpy as np

    steps = data.draw(st.lists(st.one_of(st.integers(0, 2**35), I64), min_size=n, max_size=n))
    walls = data.draw(st.lists(st.sampled_from([0.0, 1.7e9, -0.0]), min_size=n, max_size=n))
    flat = data.draw(st.lists(VALUES, min_size=n * len(tags), max_size=n * len(tags)))
    return ScalarColumns(
        tags,
        np.array(steps, np.int64),
        np.array(walls, np.float64),
        np.array(flat, np.float64).reshape(n, len(tags)),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_batchs_tables_in_a_row_frame_as_their_records(data: st.DataObject) -> None:
    """A batch holds one run fold table a drained slice: tables in a row with one tag
    sequence are framed as one (``_encode._in_runs``), a table of other tags or a text
    between them cuts it; the bytes stay the per-event encoder's, record by record."""
    from aoff._core._columns import row_records

    out: list[Record] = []
    for _ in range(data.draw(st.integers(1, 6))):
        tags = data.draw(st.sampled_from([("loss", "q"), ("loss", "q"), ("ünï/cödé",)]))
        n = data.draw(st.integers(8, 30))
        out += row_records(_drawn_table(data, tags, n), range(n))
        if data.draw(st.integers(0, 3)) == 0:
            out.append(TextRecord(3, 1.0, (("t", "hi"),)))
    assert encode_records(EventEncoder(), out) == _per_event_with_texts(out)


RUN_TAGS = tuple(f"train/metric_{i}" for i in range(24)) + TAG_POOL


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_values_copied_as_runs_of_one_spacing_are_the_scatters_bytes(
    data: st.DataObject,
) -> None:
    """A table's values go into its records as one scatter, or (a long enough table) as
    one strided float32 copy a run of evenly spaced tags (``_columns._value_runs``):
    forced here for every table (``_RUN_COST`` 0), on tag sequences of runs of one name
    length and of names of every length (unicode, 130 bytes, a tag twice), NaNs, ±inf,
    -0.0, float32's overflow and subnormals, steps of every varint length: the per-event
    encoder's bytes, record for record."""
    from aoff._core._columns import row_records
    from aoff._runfolder.tensorboard import _columns

    out: list[Record] = []
    for _ in range(data.draw(st.integers(1, 3))):
        tags = tuple(data.draw(st.lists(st.sampled_from(RUN_TAGS), min_size=1, max_size=30)))
        if data.draw(st.booleans()):  # a run fold's: its metrics in order
            tags = RUN_TAGS[: len(tags)]
        n = data.draw(st.integers(8, 24))
        out += row_records(_drawn_table(data, tags, n), range(n))
    cost = _columns._RUN_COST
    _columns._template.cache_clear()
    _columns._RUN_COST = 0
    try:
        got = encode_records(EventEncoder(), out)
    finally:
        _columns._RUN_COST = cost
        _columns._template.cache_clear()
    assert got == _per_event_with_texts(out)
    assert got == encode_records(EventEncoder(), out)  # the scatter's (tables this short)
