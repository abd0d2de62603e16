"""Per-iteration hot-path cost of aoff, both faces (issue: median <= 2 us, p99 <= 20 us).

One off-policy iteration = the 4 calls a SAC/TD3 loop makes (~30 scalars):
``update_collector_timing`` (5 keys), ``update_done_rates``, ``log_collector`` and
``log_step`` with 12 metrics, a reward and 4 reward components. Each iteration is timed
with ``perf_counter_ns`` around the 4 calls; the pump runs concurrently (real backend:
an in-memory one, dashboard off) so its GIL share is part of what is measured.

    python benchmarks/bench_hotpath.py [--iterations 200000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import anyio
import anyio.lowlevel
from _workload import COMPONENTS, EXTRA, METRICS, TIMING  # benchmarks/ is on sys.path

from aoff import AsyncOffPolicyLogger, OffPolicyLogger
from aoff.testing import MemoryBackend


def summarize(name: str, samples_ns: list[int]) -> dict[str, float]:
    samples_ns.sort()
    n = len(samples_ns)
    med = statistics.median(samples_ns) / 1000
    p99 = samples_ns[int(n * 0.99)] / 1000
    p999 = samples_ns[int(n * 0.999)] / 1000
    print(f"{name:<28} median {med:7.2f} us   p99 {p99:7.2f} us   p99.9 {p999:8.2f} us  (n={n:,})")
    return {"median_us": med, "p99_us": p99, "p999_us": p999}


def run_sync(iterations: int) -> list[int]:
    mem = MemoryBackend()
    log = OffPolicyLogger(log_backend="no_print", backends=[mem], handle_sigterm=False)
    log.start()
    out = [0] * iterations
    clock = time.perf_counter_ns
    gc.collect()
    for i in range(iterations):
        t0 = clock()
        log.update_collector_timing(TIMING)
        log.update_done_rates(0.01, 0.002)
        log.log_collector(i * 4096, 1_000_000, -120.5)
        log.log_step(
            i,
            METRICS,
            reward=-120.5,
            reward_components=COMPONENTS,
            train_time=0.004,
            wait_time=0.0002,
            extra_info=EXTRA,
        )
        out[i] = clock() - t0
    rep = log.finish()
    assert rep.steps == iterations - rep.dropped_events or rep.dropped_events, rep
    return out


def run_async(iterations: int) -> list[int]:
    out = [0] * iterations

    async def main() -> None:
        mem = MemoryBackend()
        async with AsyncOffPolicyLogger(log_backend="no_print", backends=[mem]) as log:
            clock = time.perf_counter_ns
            gc.collect()
            for i in range(iterations):
                t0 = clock()
                await log.update_collector_timing(TIMING)
                await log.update_done_rates(0.01, 0.002)
                await log.log_collector(i * 4096, 1_000_000, -120.5)
                await log.log_step(
                    i,
                    METRICS,
                    reward=-120.5,
                    reward_components=COMPONENTS,
                    train_time=0.004,
                    wait_time=0.0002,
                    extra_info=EXTRA,
                )
                out[i] = clock() - t0
                if i % 1000 == 0:
                    await anyio.lowlevel.checkpoint()  # a real runner yields now and then

    anyio.run(main)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--iterations", type=int, default=200_000)
    args = ap.parse_args()
    res = {
        "sync face (OffPolicyLogger)": summarize(
            "sync face (OffPolicyLogger)", run_sync(args.iterations)
        ),
        "async face": summarize("async face (AsyncOffPolicyLogger)", run_async(args.iterations)),
    }
    ok = all(r["median_us"] <= 2.0 and r["p99_us"] <= 20.0 for r in res.values())
    print("target median <= 2 us and p99 <= 20 us per iteration:", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
