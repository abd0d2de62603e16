"""Real-CUDA check: logging CUDA tensors never synchronises the training thread.

Skipped without CUDA (CI has no GPU). Run on a GPU machine with::

    python -m pytest -q -m gpu tests/gpu/test_cuda_nosync.py

``torch.cuda.set_sync_debug_mode("error")`` makes every synchronising CUDA call raise
(``.item()``, ``float()``, ``.cpu()``, a blocking copy, ``torch.cuda.synchronize()``), so
a loop of 1,000 steps logging 30 CUDA tensors a step passing here means aoff's hot path
(stack, pinned-memory ``copy_(non_blocking=True)``, ``Event.record``) and its pump
(``Event.query()``, ``tolist()`` of pinned host memory) never wait for the device. The
mode is process-wide, so the pump thread runs under it too; a sync there would drop
the step, which the record checks below would catch.

The values are views into one tensor that the loop changes in place right after each
``log_step`` (``vals.add_(1000)``): the records must hold the values at the call.

Step-time overhead (vs logging nothing, vs ``.item()`` on each value) is measured by
``benchmarks/bench_cuda_tensors.py``, not asserted here.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from aoff.testing import MemoryBackend

from ..conftest import make_async_logger, make_logger

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

STEPS = 1000
N_METRICS = 20  # + reward, 4 components, 4 timings, iteration = 30 CUDA tensors a step


class SyncDebugError:
    """``set_sync_debug_mode("error")`` inside, always restored."""

    def __enter__(self) -> None:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")

    def __exit__(self, *exc: object) -> None:
        torch.cuda.set_sync_debug_mode("default")


def step_values(i: int, vals: torch.Tensor, w: torch.Tensor) -> tuple[Any, dict[str, Any]]:
    """30 CUDA tensors of mixed dtypes and shapes (views, casts, one with a grad_fn)."""
    dev = vals.device
    metrics: dict[str, Any] = {f"m{j}": vals[j] for j in range(N_METRICS - 1)}
    metrics["loss"] = (w * vals[N_METRICS - 1]).sum()  # requires_grad, a grad_fn
    metrics["cpu_side"] = torch.tensor(0.5)  # a CPU tensor in the same call
    kwargs: dict[str, Any] = {
        "metrics": metrics,
        "reward": vals[20].to(torch.bfloat16),
        "reward_components": {
            "forward": vals[21].to(torch.float16).reshape(1),
            "ctrl": vals[22].to(torch.float64).reshape(1, 1),
            "alive": vals[23],
            "contact": vals[24],
        },
        "train_time": vals[25],
        "wait_time": vals[26],
        "learner_incremental_h2d_time": vals[27],
        "weight_sync_time": vals[28],
    }
    iteration = torch.full((), i, dtype=torch.int64, device=dev)
    return iteration, kwargs


def expected_record(i: int) -> dict[str, float]:
    """What the records must hold for step ``i`` (computed on the CPU, same dtypes)."""

    def f32(x: float) -> float:
        return torch.tensor(x, dtype=torch.float32).item()

    base = [f32(j + i * 0.5) for j in range(30)]
    d = {f"train/m{j}": base[j] for j in range(N_METRICS - 1)}
    d["train/loss"] = f32(base[N_METRICS - 1] * 2.0)
    d["train/cpu_side"] = 0.5
    d["reward/mean"] = torch.tensor(base[20]).to(torch.bfloat16).item()
    d["reward/forward"] = torch.tensor(base[21]).to(torch.float16).item()
    d["reward/ctrl"] = base[22]
    d["reward/alive"] = base[23]
    d["reward/contact"] = base[24]
    d["timing/learner_train_ms"] = base[25] * 1000
    d["timing/learner_wait_ms"] = base[26] * 1000
    d["timing/learner_incremental_h2d_ms"] = base[27] * 1000
    d["timing/learner_weight_sync_ms"] = base[28] * 1000
    d["axis/iteration"] = float(i)
    return d


def check_records(mem: MemoryBackend, steps: int) -> None:
    assert [r.iteration for r in mem.records] == list(range(steps))
    for r in mem.records:
        got = r.as_dict()
        for tag, value in expected_record(r.iteration).items():
            assert got[tag] == value, (r.iteration, tag, got[tag], value)


def test_debug_mode_catches_a_sync() -> None:
    """Guard: under the mode a plain ``.item()`` does raise (so the loop below means it)."""
    t = torch.ones((), device="cuda")
    with SyncDebugError(), pytest.raises(RuntimeError):
        t.item()


def test_sync_face_1000_steps_of_30_cuda_tensors_never_sync() -> None:
    dev = torch.device("cuda")
    mem = MemoryBackend()
    log = make_logger(mem)
    log.start()
    w = torch.full((), 2.0, device=dev, requires_grad=True)
    ramp = torch.arange(30, dtype=torch.float32, device=dev)
    with SyncDebugError():
        for i in range(STEPS):
            vals = ramp + i * 0.5  # this step's values (a kernel, no sync)
            iteration, kwargs = step_values(i, vals, w)
            log.log_step(iteration, **kwargs)
            vals.add_(1000)  # in place, after the call: must not reach the records
            iteration.add_(1000)
            # more calls, other kinds (tensors where floats are declared: captured)
            log.update_done_rates(vals[0] * 0, vals[1] * 0)  # type: ignore[arg-type]
    report = log.finish()
    assert report.complete and report.invalid_values == 0, report
    check_records(mem, STEPS)


@pytest.mark.anyio  # asyncio and trio (tests/conftest.py)
async def test_async_face_cuda_tensors_never_sync() -> None:
    dev = torch.device("cuda")
    mem = MemoryBackend()
    w = torch.full((), 2.0, device=dev, requires_grad=True)
    ramp = torch.arange(30, dtype=torch.float32, device=dev)
    steps = 200
    async with make_async_logger(mem) as log:
        with SyncDebugError():
            for i in range(steps):
                vals = ramp + i * 0.5
                iteration, kwargs = step_values(i, vals, w)
                await log.log_step(iteration, **kwargs)
                vals.add_(1000)
    check_records(mem, steps)
