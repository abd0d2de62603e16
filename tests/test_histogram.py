"""``log_histogram``: distributions read back through TensorBoard's own reader, JSONL and CSV.

Real inputs only: torch CPU tensors, NumPy arrays, Python lists. What is checked:

* the reduction (count, min, max, sum, sum of squares, buckets, percentiles) against
  NumPy, for the NumPy path and for the torch ops the CUDA path runs (device-agnostic,
  so they run here on CPU tensors; ``tests/gpu/test_histogram_gpu.py`` runs them on a
  GPU under ``set_sync_debug_mode("error")``);
* a run in each pump mode: TensorBoard's ``EventAccumulator`` reads the histogram
  (``Histograms`` and ``CompressedHistograms``) and the percentile scalars at the next
  ``log_step``'s step; JSONL and CSV hold the same percentiles;
* the TensorBoard bytes equal protobuf's own serialisation;
* bad input: each a specific error at the call; NaN/inf counted apart;
* the caller's array may change after the call; ``metrics`` still refuse multi-element
  tensors.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from aoff import OffPolicyLogger
from aoff._core._histogram import DEFER_MAX, capture, summarize
from aoff._core._histogram_data import (
    BINS,
    PERCENTILES,
    Histogram,
    from_packed,
    histogram_scalars,
)
from aoff._core._histogram_torch import reduce_tensor
from aoff._core._records import StepRecord
from aoff._pump._options import PumpMode
from aoff._runfolder.tensorboard._events import EventEncoder, encode_histogram
from aoff.testing import MemoryBackend, RecordingDisplay

from .conftest import make_async_logger, make_logger, read_jsonl

pd: Any = importlib.import_module("pandas")

STATS = ("min", "max", "mean", *(f"p{q}" for q in PERCENTILES))


def reference(values: Any) -> dict[str, float]:
    """What NumPy says about the finite values."""
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    out = {"min": x.min(), "max": x.max(), "mean": x.mean()}
    out.update(
        {f"p{q}": v for q, v in zip(PERCENTILES, np.percentile(x, PERCENTILES), strict=True)}
    )
    return {k: float(v) for k, v in out.items()}


def check_against_numpy(h: Histogram, values: Any, *, rel: float = 1e-12) -> None:
    x = np.asarray(values, dtype=np.float64).ravel()
    finite = x[np.isfinite(x)]
    assert h.count == finite.size
    assert h.nonfinite == x.size - finite.size
    got = dict(histogram_scalars(h))
    for k, v in reference(values).items():
        assert got[f"{h.tag}/{k}"] == pytest.approx(v, rel=rel, abs=1e-12), k
    assert h.sum == pytest.approx(finite.sum(), rel=1e-12)
    assert h.sum_squares == pytest.approx(float(np.dot(finite, finite)), rel=1e-12)
    assert len(h.bucket_counts) == len(h.bucket_limits) == BINS
    assert sum(h.bucket_counts) == finite.size
    assert h.bucket_limits[-1] == h.max
    if h.max > h.min:  # equal-width buckets as np.histogram draws them
        counts, _ = np.histogram(finite, bins=BINS, range=(h.min, h.max))
        assert np.abs(np.asarray(h.bucket_counts) - counts).sum() <= 2  # edge rounding


# -- the reduction ---------------------------------------------------------------------------
def test_summarize_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    for values in (rng.normal(size=4096), rng.integers(-5, 5, size=(8, 16)), [3.0, 1.0, 2.0]):
        check_against_numpy(summarize("q", values), values)


def test_nan_and_inf_are_counted_apart() -> None:
    values = [1.0, math.nan, 2.0, math.inf, -math.inf, 3.0]
    h = summarize("td", values)
    assert (h.count, h.nonfinite, h.min, h.max) == (3, 3, 1.0, 3.0)
    check_against_numpy(h, values)
    assert dict(histogram_scalars(h))["td/nonfinite"] == 3.0
    # None in a sequence: NumPy's conversion makes it NaN (documented), counted the same
    assert summarize("td", capture("td", [1.0, None, 2.0])).nonfinite == 1
    # all non-finite: no histogram, only the count
    h = summarize("td", [math.nan, math.inf])
    assert h.count == 0 and histogram_scalars(h) == [("td/nonfinite", 2.0)]


def test_one_value_fills_the_first_bucket() -> None:
    h = summarize("a", np.full(7, 2.5))
    assert (h.min, h.max, h.bucket_counts[0], sum(h.bucket_counts)) == (2.5, 2.5, 7.0, 7.0)
    assert all(v == 2.5 for _, v in h.percentiles)


@pytest.mark.parametrize(
    "dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool]
)
def test_device_reduction_matches_numpy(dtype: torch.dtype) -> None:
    """The torch ops of the CUDA path, run on the CPU: same numbers as the NumPy path."""
    g = torch.Generator().manual_seed(1)
    t = (torch.randn(4096, generator=g, dtype=torch.float64) * 3).to(dtype)
    if dtype.is_floating_point:
        t[5] = math.nan
        t[9] = math.inf
    ref = t.to(torch.float64).numpy() if dtype != torch.bool else t.numpy().astype(np.float64)
    got = from_packed("q", reduce_tensor(t).tolist())
    rel = 1e-12 if dtype in (torch.float64, torch.int64, torch.bool) else 1e-6
    check_against_numpy(got, ref, rel=rel)


def test_device_reduction_edge_cases() -> None:
    assert from_packed("x", reduce_tensor(torch.tensor([math.nan, math.inf])).tolist()) == (
        summarize("x", [math.nan, math.inf])
    )
    one = from_packed("x", reduce_tensor(torch.tensor([4.0])).tolist())
    assert one == summarize("x", [4.0])
    grid = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()
    check_against_numpy(from_packed("x", reduce_tensor(grid).tolist()), np.arange(24.0))


# -- the caller's side -------------------------------------------------------------------------
BAD_INPUTS: list[tuple[object, object, type[Exception], str]] = [
    (1, [1.0], TypeError, "key must be a str"),
    ("", [1.0], ValueError, "key must not be empty"),
    ("q", [], ValueError, "empty"),
    ("q", np.zeros((3, 0)), ValueError, "empty"),
    ("q", torch.zeros(0), ValueError, "empty"),
    ("q", "1,2,3", TypeError, "sequence of numbers"),
    ("q", None, TypeError, "sequence of numbers"),
    ("q", 0.5, TypeError, "sequence of numbers"),
    ("q", {"a": 1.0}, TypeError, "sequence of numbers"),
    ("q", np.array([1 + 2j]), TypeError, "non-numeric dtype"),
    ("q", np.array(["a", "b"]), TypeError, "non-numeric dtype"),
    ("q", torch.tensor([1 + 2j]), TypeError, "non-real dtype"),
    ("q", ["a", "b"], TypeError, "not an array of real numbers"),
    ("q", [[1.0, 2.0], [3.0]], ValueError, "not an array of real numbers"),
    ("q", np.array([object()], dtype=object), TypeError, "not an array of real numbers"),
    ("q", (float(i) for i in range(3)), TypeError, "sequence of numbers"),
]


@pytest.mark.parametrize(("key", "values", "exc", "match"), BAD_INPUTS)
def test_bad_input_raises_at_the_call(
    key: object, values: object, exc: type[Exception], match: str
) -> None:
    backend = MemoryBackend()
    log = make_logger(backend, pump="thread", system_interval=0)
    try:
        with pytest.raises(exc, match=match):
            log.log_histogram(key, values)  # type: ignore[arg-type]
        log.log_step(1)
    finally:
        log.finish()
    assert backend.records[0].histograms == ()


def test_the_call_keeps_a_copy_and_large_inputs_are_reduced_at_once() -> None:
    arr = np.arange(10.0)
    payload = capture("q", arr)
    arr[:] = -1  # the caller reuses its array
    assert summarize("q", payload).min == 0.0
    t = torch.arange(10.0)
    payload = capture("q", t)
    t.add_(100)
    assert summarize("q", payload).max == 9.0
    grad = torch.arange(3.0, requires_grad=True) * 2  # a tensor with a grad_fn
    assert summarize("q", capture("q", grad)).max == 4.0
    big = capture("q", np.ones(DEFER_MAX + 1, dtype=np.float32))
    assert isinstance(big, Histogram) and big.count == DEFER_MAX + 1


def test_timings_still_refuse_multi_element_tensors() -> None:
    log = make_logger(MemoryBackend(), pump="thread", system_interval=0)
    try:
        with pytest.raises(ValueError, match="reduce it first"):
            log.log_step(1, train_time=torch.zeros(3))  # type: ignore[arg-type]
    finally:
        log.finish()


def test_logged_at_the_next_step_last_call_per_key_wins() -> None:
    backend = MemoryBackend()
    log = make_logger(backend, pump="thread", system_interval=0)
    log.log_step(1)
    log.log_histogram("q", [1.0, 2.0])
    log.log_histogram("q", [5.0, 6.0, 7.0])  # same key before the step: this one
    log.log_histogram("a", torch.tensor([0, 1, 1, 2]))
    log.log_step(2)
    log.log_step(3)
    log.finish()
    r1, r2, r3 = backend.records
    assert r1.histograms == () and r3.histograms == ()
    assert [h.tag for h in r2.histograms] == ["q", "a"]
    assert r2.histograms[0].count == 3
    tags = r2.as_dict()
    assert (tags["q/min"], tags["q/p50"], tags["a/mean"]) == (5.0, 6.0, 1.0)
    assert not any(t.startswith("q/") for t in r3.as_dict())


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_logged_after_the_last_step_is_written_at_that_step(tmp_path: Path, pump: PumpMode) -> None:
    """No step follows: the histogram and episodes join a record at the last step (read
    back from TensorBoard and JSONL) and the report counts it."""
    log = OffPolicyLogger(
        log_dir=str(tmp_path),
        backends=("jsonl",),
        pump=pump,
        handle_sigterm=False,
        system_interval=0,
    )
    log.log_step(1, {"loss": 1.0})
    log.log_step(2, {"loss": 2.0})
    log.log_histogram("late", [1.0, 2.0, 3.0])
    log.log_episodes([5.0, 7.0], [10, 20])
    report = log.finish()
    assert report.complete
    assert report.backend_written == {"tensorboard": 3, "jsonl": 3}
    rows = read_jsonl(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 2]
    assert rows[-1]["late/p50"] == 2.0 and rows[-1]["late/max"] == 3.0
    assert (rows[-1]["episode/return"], rows[-1]["episode/count"]) == (6.0, 2)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    (event,) = acc.Histograms("late")
    assert (event.step, event.histogram_value.num) == (2, 3)
    assert [s.step for s in acc.Scalars("episode/return")] == [2]


@pytest.mark.anyio
async def test_async_face_awaits_like_every_call() -> None:
    backend = MemoryBackend()
    async with make_async_logger(backend, pump="thread", system_interval=0) as log:
        await log.log_histogram("q", np.arange(5.0))
        await log.log_step(1)
        with pytest.raises(ValueError, match="empty"):
            log.log_histogram("q", [])
    (rec,) = backend.records
    assert rec.as_dict()["q/p50"] == 2.0


# -- TensorBoard bytes -------------------------------------------------------------------------
def test_tensorboard_bytes_equal_protobuf() -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    hs = (
        summarize("dist/q", np.linspace(-1, 3, 50)),
        summarize("zero", [-0.0, 0.0]),
        summarize("nan", [math.nan]),  # nothing finite: no histogram value
    )
    scalars = (("train/loss", 0.5), *histogram_scalars(hs[0]))
    rec = StepRecord(7, 7, 1.5, scalars, hs)
    summary = summary_pb2.Summary()
    for tag, v in scalars:
        summary.value.add(tag=tag, simple_value=v)
    for h in hs[:2]:
        proto = summary_pb2.HistogramProto(
            min=h.min,
            max=h.max,
            num=h.count,
            sum=h.sum,
            sum_squares=h.sum_squares,
            bucket_limit=h.bucket_limits,
            bucket=h.bucket_counts,
        )
        summary.value.add(tag=h.tag, histo=proto)
        assert encode_histogram(h)[2:].endswith(summary.value[-1].SerializeToString())
    want = event_pb2.Event(wall_time=1.5, step=7, summary=summary).SerializeToString()
    assert EventEncoder().encode(rec) == want


# -- whole runs, read back ------------------------------------------------------------------
def run_and_log(log_dir: Path, pump: PumpMode) -> dict[str, Any]:
    """Three steps; distributions before step 2 and step 3 from each kind of input."""
    rng = np.random.default_rng(2)
    q = torch.randn(4096, generator=torch.Generator().manual_seed(3))
    td = rng.normal(size=(64, 64)).astype(np.float32)
    td[0, 0] = np.nan
    actions = [0, 1, 1, 2, 2, 2, 3]
    big = np.arange(DEFER_MAX + 1, dtype=np.int32)
    log = OffPolicyLogger(
        log_dir=log_dir,
        backends=("jsonl", "csv"),
        pump=pump,
        display=RecordingDisplay() if pump == "thread" else None,
        log_backend="tensorboard",
        handle_sigterm=False,
        system_interval=0,
        refresh_per_second=4,
    )
    log.log_step(1)
    log.log_histogram("dist/q", q)
    log.log_histogram("dist/td", td)
    log.log_histogram("dist/actions", actions)
    log.log_histogram("dist/big", big)  # over DEFER_MAX: reduced at the call
    log.log_step(2)
    log.log_histogram("dist/q", q * 2)
    log.log_step(3)
    log.finish()
    return {"dist/q": q.numpy(), "dist/td": td, "dist/actions": actions, "dist/big": big} | {
        "q3": (q * 2).numpy()
    }


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_run_reads_back_in_tensorboard_jsonl_and_csv(tmp_path: Path, pump: PumpMode) -> None:
    inputs = run_and_log(tmp_path, pump)
    expect = {
        2: {k: reference(inputs[k]) for k in ("dist/q", "dist/td", "dist/actions", "dist/big")},
        3: {"dist/q": reference(inputs["q3"])},
    }
    # TensorBoard, through its own reader
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(
        str(tmp_path), size_guidance={"scalars": 0, "histograms": 0, "compressedHistograms": 0}
    )
    acc.Reload()
    assert set(acc.Tags()["histograms"]) == {"dist/q", "dist/td", "dist/actions", "dist/big"}
    q_events = acc.Histograms("dist/q")
    assert [e.step for e in q_events] == [2, 3]
    for step, tag in ((2, "dist/td"), (2, "dist/actions"), (2, "dist/big"), (3, "dist/q")):
        (event,) = [e for e in acc.Histograms(tag) if e.step == step]
        hv = event.histogram_value
        ref = expect[step][tag]
        assert (hv.min, hv.max) == pytest.approx((ref["min"], ref["max"]))
        assert hv.num == np.isfinite(np.asarray(inputs[tag if step == 2 else "q3"])).sum()
        assert sum(hv.bucket) == hv.num and len(hv.bucket_limit) == BINS
    compressed = acc.CompressedHistograms("dist/actions")
    assert [c.step for c in compressed] == [2]
    # TensorBoard's own percentiles from the buckets: monotone, from min (0) to max (3)
    points = dict(compressed[0].compressed_histogram_values)
    values = [points[bp] for bp in sorted(points)]
    assert values == sorted(values) and (points[0], points[10000]) == (0.0, 3.0)
    for step, tags in expect.items():
        for tag, ref in tags.items():
            for stat, v in ref.items():
                (got,) = [s.value for s in acc.Scalars(f"{tag}/{stat}") if s.step == step]
                assert got == pytest.approx(v, rel=1e-6), (tag, stat)
    assert [s.step for s in acc.Scalars("dist/td/nonfinite")] == [2]
    # JSONL and CSV: the same columns, at the same steps
    rows = {r["step"]: r for r in read_jsonl(tmp_path / "metrics.jsonl")}
    table = pd.read_csv(tmp_path / "progress.csv").set_index("step")
    for step, tags in expect.items():
        for tag, ref in tags.items():
            for stat, v in ref.items():
                assert rows[step][f"{tag}/{stat}"] == pytest.approx(v, rel=1e-12)
                assert table.loc[step, f"{tag}/{stat}"] == pytest.approx(v, rel=1e-12)
    assert "dist/q/p50" not in rows[1] and math.isnan(table.loc[1, "dist/q/p50"])
    assert rows[2]["dist/td/nonfinite"] == 1


@pytest.mark.slow
def test_the_benchmark_runs(tmp_path: Path) -> None:
    """``benchmarks/bench_histogram.py --quick`` end to end (no timing is asserted)."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "bench.json"
    script = str(root / "benchmarks" / "bench_histogram.py")
    proc = subprocess.run(
        [sys.executable, script, "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    res = json.loads(out.read_text())
    assert set(res["hot_path_us"]) >= {"log_step", "hist cpu tensor", "hist numpy"}
    assert len(res["sampling_process"]) == 6
