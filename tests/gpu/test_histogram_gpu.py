"""Real-CUDA check: ``log_histogram`` of a CUDA tensor never synchronises the caller.

Skipped without CUDA (CI has no GPU). Run on a GPU machine with::

    python -m pytest -q -m gpu tests/gpu/test_histogram_gpu.py

Under ``torch.cuda.set_sync_debug_mode("error")`` every synchronising CUDA call raises
(``.item()``, a blocking copy, ``histc``'s range read, ``bincount``'s size read, a
host-to-device copy of a Python list), so 200 steps logging three CUDA distributions a
step (float32 with NaN/inf inside, bfloat16, int64 actions) passing here means the
device reduction, the pinned copy and the pump's ``Event.query()`` never wait. The
inputs are changed in place right after each call: the records must hold the values at
the call. Values are compared with the NumPy reduction of the same data.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from aoff._core._histogram import summarize
from aoff._core._histogram_data import Histogram, histogram_scalars
from aoff.testing import MemoryBackend

from ..conftest import make_logger

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

STEPS = 200


def close(got: Histogram, want: Histogram) -> None:
    assert (got.tag, got.count, got.nonfinite) == (want.tag, want.count, want.nonfinite)
    g, w = dict(histogram_scalars(got)), dict(histogram_scalars(want))
    assert g.keys() == w.keys()
    for k in w:
        assert g[k] == pytest.approx(w[k], rel=1e-5, abs=1e-6), k
    assert sum(got.bucket_counts) == got.count
    assert np.abs(np.subtract(got.bucket_counts, want.bucket_counts)).sum() <= 4


def test_cuda_histograms_never_sync_and_hold_the_values_at_the_call() -> None:
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(4096, device=dev, generator=gen)
    q[7] = math.nan
    q[8] = math.inf
    td = torch.randn(64, 64, device=dev, generator=gen).to(torch.bfloat16)
    actions = torch.randint(0, 6, (1024,), device=dev, generator=gen)
    expected: list[dict[str, Histogram]] = []
    backend = MemoryBackend()
    log = make_logger(backend, pump="thread", system_interval=0, finish_timeout=30)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for i in range(1, STEPS + 1):
            log.log_histogram("q", q)
            log.log_histogram("td", td)
            log.log_histogram("actions", actions)
            log.log_step(i)
            if i % 50 == 0:  # the reference, read outside the no-sync region
                torch.cuda.set_sync_debug_mode("default")
                expected.append(
                    {
                        "q": summarize("q", q.cpu().numpy()),
                        "td": summarize("td", td.float().cpu().numpy()),
                        "actions": summarize("actions", actions.cpu().numpy()),
                    }
                )
                torch.cuda.set_sync_debug_mode("error")
            q.mul_(1.01)  # in place, after the call
            td.add_(1)
            actions.add_(1)
    finally:
        torch.cuda.set_sync_debug_mode("default")
        report = log.finish()
    assert report.dropped_events == 0 and report.invalid_values == 0
    assert len(backend.records) == STEPS
    for n, want in enumerate(expected, start=1):
        rec = backend.records[50 * n - 1]
        got = {h.tag: h for h in rec.histograms}
        for tag, h in want.items():
            close(got[tag], h)
    first = {h.tag: h for h in backend.records[0].histograms}
    assert first["q"].nonfinite == 2
