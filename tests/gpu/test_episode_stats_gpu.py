"""Real-CUDA check: ``aoff.torch.EpisodeStats`` and per-env vectors never synchronise.

Skipped without CUDA. A training-shaped loop (4,096 environments, ``update`` every env
step, ``log_to`` and a ``log_step`` with a ``(4096,)`` vector every iteration) runs under
``torch.cuda.set_sync_debug_mode("error")`` (every synchronising CUDA call raises), and
the records equal a reference computed on the host afterwards. ``benchmarks/gpu_check.py``
runs the same loop through aoff's agent process.
"""

from __future__ import annotations

import pytest
import torch

from aoff.testing import MemoryBackend
from aoff.torch import EpisodeStats

from ..conftest import make_logger
from .test_cuda_nosync import SyncDebugError

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

N_ENVS, N_STEPS, ITERS = 4096, 24, 20


def test_episode_stats_and_vectors_never_sync() -> None:
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread")
    log.start()
    stats = EpisodeStats(N_ENVS, dev)
    kept: list[tuple[torch.Tensor, torch.Tensor]] = []
    with SyncDebugError():
        for it in range(ITERS):
            for _ in range(N_STEPS):
                r = torch.rand(N_ENVS, device=dev, generator=g)
                term = torch.rand(N_ENVS, device=dev, generator=g) < 0.02
                trunc = torch.rand(N_ENVS, device=dev, generator=g) < 0.01
                stats.update(r, term, trunc)
                kept.append((r.clone(), term | trunc))  # a device copy: no sync
            stats.log_to(log)
            log.log_step(it, {"per_env": r})
            r.add_(100.0)  # in place, after the call: not what was logged
    report = log.finish()
    assert report.complete and report.invalid_values == 0, report
    ret = torch.zeros(N_ENVS)
    length = torch.zeros(N_ENVS, dtype=torch.int64)
    for it, rec in enumerate(mem.records):
        returns: list[float] = []
        for r, done in kept[it * N_STEPS : (it + 1) * N_STEPS]:
            ret += r.cpu()
            length += 1
            d = done.cpu()
            returns += ret[d].tolist()
            ret[d] = 0
            length[d] = 0
        got = rec.as_dict()
        assert got["episode/count"] == len(returns)
        assert got["episode/return"] == pytest.approx(sum(returns) / len(returns), rel=1e-9)
        last = kept[(it + 1) * N_STEPS - 1][0].cpu().double()
        assert got["train/per_env"] == pytest.approx(last.mean().item(), rel=1e-9)
