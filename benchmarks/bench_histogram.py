"""What ``log_histogram`` and system sampling cost the training process.

Part 1, the hot path (per call, median over ``--rounds``, the default ``pump="process"``
so the reduction runs in the agent):

``log_step``             a plain iteration: ``log_step(i, metrics={5 floats})``
``hist cpu tensor``      ``log_histogram("q", t)``, ``t`` a 4,096-element float32 CPU tensor
``hist numpy``           the same with a float32 NumPy array
``hist list``            the same with a Python list of 4,096 floats
``hist cuda tensor``     a CUDA tensor (only with CUDA): device reduction + async copy
``reduce in caller``     what the caller would pay if it reduced the 4,096 values itself
                         (``summarize``: the NumPy reduction the pump runs instead)

Part 2, system sampling: the same logging loop (``log_step`` plus a busy-work payload),
run with sampling off, at the default 1 s and at 50 ms (20x the default rate), in
interleaved rounds; the training process's own CPU time per iteration
(``time.process_time``, all its threads) for each. In process mode the sampler lives in
the agent, so the three should agree within noise; thread mode (``--thread``) shows the
in-process sampler thread's share.

    python benchmarks/bench_histogram.py [--calls 2000] [--rounds 5] [--iters 20000]
        [--thread] [--quick] [--json out.json]

``--iters`` should make one measured window (iterations x ~15 us) longer than the 1 s
default interval, so that samples are taken while it runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aoff import OffPolicyLogger
from aoff._core._histogram import summarize
from aoff._pump._options import PumpMode

N = 4096


def make_logger(log_dir: str, pump: PumpMode, system_interval: float) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=log_dir,
        log_backend="none",  # JSONL only: the writer is cheap
        backends=("jsonl",),
        pump=pump,
        handle_sigterm=False,
        system_interval=system_interval,
        refresh_per_second=1,
    )


def per_call_us(fn: Callable[[int], object], calls: int) -> float:
    t0 = time.perf_counter_ns()
    for i in range(calls):
        fn(i)
    return (time.perf_counter_ns() - t0) / calls / 1000


def hot_path(calls: int, rounds: int) -> dict[str, float]:
    import torch

    t = torch.randn(N)
    arr = np.random.default_rng(0).normal(size=N).astype(np.float32)
    lst = arr.astype(float).tolist()
    metrics = {"loss": 0.5, "q": 1.0, "alpha": 0.1, "entropy": -3.0, "grad": 2.0}
    cases: dict[str, Callable[[OffPolicyLogger], Callable[[int], object]]] = {
        "log_step": lambda log: lambda i: log.log_step(i, metrics=metrics),
        "hist cpu tensor": lambda log: lambda i: log.log_histogram("q", t),
        "hist numpy": lambda log: lambda i: log.log_histogram("q", arr),
        "hist list": lambda log: lambda i: log.log_histogram("q", lst),
    }
    if torch.cuda.is_available():
        tc = t.cuda()
        cases["hist cuda tensor"] = lambda log: lambda i: log.log_histogram("q", tc)
    results: dict[str, list[float]] = {name: [] for name in cases}
    results["reduce in caller"] = []
    with tempfile.TemporaryDirectory() as d:
        log = make_logger(d, "process", 0)
        try:
            for _ in range(rounds):
                for name, make in cases.items():
                    fn = make(log)
                    fn(0)  # warm
                    results[name].append(per_call_us(fn, calls))
                    log.flush()  # the agent catches up before the next case
                results["reduce in caller"].append(
                    per_call_us(lambda i: summarize("q", arr), max(calls // 10, 10))
                )
        finally:
            log.finish()
    return {name: statistics.median(v) for name, v in results.items()}


def busy(i: int) -> float:
    """A small CPU payload standing in for the training step (pure Python, ~20 us)."""
    s = 0.0
    for k in range(200):
        s += (i ^ k) * 1e-3
    return s


def one_sample_us(samples: int = 200) -> float:
    """CPU time of one sample (psutil's reads of this process), in the sampler's thread."""
    import psutil

    proc = psutil.Process()
    proc.cpu_percent(None)
    t0 = time.process_time()
    for _ in range(samples):
        with proc.oneshot():
            proc.cpu_percent(None)
            proc.memory_info()
    return (time.process_time() - t0) / samples * 1e6


def sampling_cost(iters: int, rounds: int, pump: PumpMode) -> dict[str, tuple[float, float, float]]:
    settings = {"off": 0.0, "1 s (default)": 1.0, "50 ms": 0.05}
    cpu: dict[str, list[float]] = {name: [] for name in settings}
    wall: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(rounds):
        for name, interval in settings.items():
            with tempfile.TemporaryDirectory() as d:
                log = make_logger(d, pump, interval)
                try:
                    for i in range(200):  # warm: agent up, caches filled
                        log.log_step(i, metrics={"x": busy(i)})
                    log.flush()
                    time.sleep(0.2)
                    c0, w0 = time.process_time(), time.perf_counter()
                    for i in range(iters):
                        log.log_step(i, metrics={"x": busy(i)})
                    c1, w1 = time.process_time(), time.perf_counter()
                finally:
                    log.finish()
            cpu[name].append((c1 - c0) / iters * 1e6)
            wall[name].append((w1 - w0) / iters * 1e6)
    out = {f"cpu us/iter, sampling {n}": spread(v) for n, v in cpu.items()}
    out.update({f"wall us/iter, sampling {n}": spread(v) for n, v in wall.items()})
    return out


def spread(values: list[float]) -> tuple[float, float, float]:
    """(median, min, max) over the rounds: the min-max band is the noise to compare with."""
    return statistics.median(values), min(values), max(values)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=100_000)
    p.add_argument("--thread", action="store_true", help="part 2 in pump='thread' too")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    if a.quick:
        a.calls, a.rounds, a.iters = 200, 1, 2_000
    res: dict[str, Any] = {"python": sys.version.split()[0]}
    print(f"Part 1: hot path per call, {N}-element inputs (median of {a.rounds} rounds)")
    hot = hot_path(a.calls, a.rounds)
    for name, us in hot.items():
        print(f"  {name:<20} {us:9.2f} us")
    res["hot_path_us"] = hot
    sample = one_sample_us()
    res["one_sample_cpu_us"] = sample
    print(f"One system sample (CPU %, RSS): {sample:.1f} us of CPU, once per interval")
    modes: list[PumpMode] = ["process", "thread"] if a.thread else ["process"]
    for mode in modes:
        print(f"Part 2: training-process cost per iteration, pump={mode!r} ({a.iters} iters)")
        cost = sampling_cost(a.iters, a.rounds, mode)
        for name, (med, lo, hi) in cost.items():
            print(f"  {name:<34} {med:8.2f} us  (rounds: {lo:.2f} to {hi:.2f})")
        res[f"sampling_{mode}"] = cost
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
