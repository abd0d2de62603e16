"""What a broken backend costs the training loop: healthy vs raising vs hung, side by side.

One iteration is the standard off-policy workload (``_workload.py``: 4 calls, ~30
scalars) followed by ``--work-us`` of pure-Python "training" (the pump competes with it
for the GIL, as with a real learner). Only the 4 logging calls are timed, per iteration.
Every scenario logs to an in-memory backend plus:

``healthy``  nothing else
``raising``  a backend whose every write raises ``OSError(ENOSPC)`` (disabled after
             2 retries, reported once)
``hung``     a backend whose first write blocks its worker thread forever; its
             ``stall_timeout`` is lowered to 1 s so the run also covers the stalled
             regime (before: it holds the pump back; after: its outbox is trimmed)
``slow``     a backend that sleeps 2 ms per batch in a worker thread

Scenarios are interleaved (``--rounds`` rounds of each, in turn) so that drift in a
shared machine's load hits all of them alike; samples are pooled per scenario. The
table shows median and p99 per iteration and their ratio to ``healthy`` in the same run,
plus how long ``finish()`` took and what the ``FinishReport`` says.

    python benchmarks/bench_faults.py [--iterations 20000] [--rounds 3] [--work-us 200]
"""

from __future__ import annotations

import argparse
import errno
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import _workload as w
import anyio.to_thread

from aoff import BackendContext, OffPolicyLogger, Record
from aoff._display._api import NullDisplay
from aoff.testing import MemoryBackend


class _Base:
    name = "base"

    async def open(self, ctx: BackendContext) -> None:
        pass

    async def write(self, records: Sequence[Record]) -> None:
        pass

    async def flush(self) -> None:
        pass

    async def close(self) -> None:
        pass


class Raising(_Base):
    name = "raising"

    async def write(self, records: Sequence[Record]) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class Hung(_Base):
    name = "hung"

    def __init__(self) -> None:
        self.gate = threading.Event()

    async def write(self, records: Sequence[Record]) -> None:
        await anyio.to_thread.run_sync(self.gate.wait, abandon_on_cancel=True)


class Slow(_Base):
    name = "slow"

    async def write(self, records: Sequence[Record]) -> None:
        await anyio.to_thread.run_sync(time.sleep, 0.002, abandon_on_cancel=True)


def spin(us: float) -> None:
    end = time.perf_counter_ns() + int(us * 1000)
    while time.perf_counter_ns() < end:
        pass


def run(scenario: str, iterations: int, work_us: float) -> tuple[list[int], dict[str, Any]]:
    extra: list[Any] = []
    hung: Hung | None = None
    if scenario == "raising":
        extra.append(Raising())
    elif scenario == "hung":
        hung = Hung()
        extra.append(hung)
    elif scenario == "slow":
        extra.append(Slow())
    log = OffPolicyLogger(
        log_backend="none",
        backends=[MemoryBackend(), *extra],
        display=NullDisplay(),
        handle_sigterm=False,
        finish_timeout=2.0,
    )
    for r in log._core.pump._runners:
        r.stall_timeout = 1.0
    log.start()
    samples = [0] * iterations
    clock = time.perf_counter_ns
    gc.collect()
    for i in range(iterations):
        t0 = clock()
        log.update_collector_timing(w.TIMING)
        log.update_done_rates(w.TIMEOUT_RATE, w.TERMINATED_RATE)
        log.log_collector(w.total_steps(i), w.BUFFER_SIZE, w.REWARD)
        log.log_step(
            i,
            w.METRICS,
            reward=w.REWARD,
            reward_components=w.COMPONENTS,
            train_time=w.TRAIN_TIME,
            wait_time=w.WAIT_TIME,
            extra_info=w.EXTRA,
        )
        samples[i] = clock() - t0
        if work_us:
            spin(work_us)
    t0 = time.perf_counter()
    report = log.close()
    finish_s = time.perf_counter() - t0
    if hung is not None:
        hung.gate.set()
    info = {
        "finish_s": finish_s,
        "dropped": report.dropped_events,
        "written": report.backend_written,
        "lost": report.backend_lost,
    }
    return samples, info


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work-us", type=float, default=200.0)
    p.add_argument("--scenarios", default="healthy,raising,hung,slow")
    p.add_argument("--json", help="also write the results to this file")
    a = p.parse_args(argv)
    scenarios = a.scenarios.split(",")
    pooled: dict[str, list[int]] = {s: [] for s in scenarios}
    infos: dict[str, list[dict[str, Any]]] = {s: [] for s in scenarios}
    for rnd in range(a.rounds):
        for s in scenarios:
            samples, info = run(s, a.iterations, a.work_us)
            pooled[s] += samples
            infos[s].append(info)
            print(f"round {rnd + 1} {s:<8} finish {info['finish_s']:.2f}s", file=sys.stderr)
    base = w.percentiles_us(pooled["healthy"]) if "healthy" in pooled else None
    print(
        f"\nper iteration (4 calls, ~30 scalars), {a.iterations:,} x {a.rounds} rounds, "
        f"{a.work_us:g} us of work between iterations"
    )
    print(
        f"{'scenario':<9} {'median us':>10} {'p99 us':>9} {'x median':>9} {'x p99':>7} "
        f"{'finish s':>9}  report (last round)"
    )
    results: dict[str, Any] = {}
    for s in scenarios:
        pc = w.percentiles_us(pooled[s])
        rm = pc["median_us"] / base["median_us"] if base else float("nan")
        rp = pc["p99_us"] / base["p99_us"] if base else float("nan")
        fin = max(i["finish_s"] for i in infos[s])
        last = infos[s][-1]
        print(
            f"{s:<9} {pc['median_us']:>10.2f} {pc['p99_us']:>9.2f} {rm:>9.2f} {rp:>7.2f} "
            f"{fin:>9.2f}  dropped={last['dropped']} lost={last['lost']}"
        )
        results[s] = {**pc, "ratio_median": rm, "ratio_p99": rp, "finish_s_max": fin, **last}
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main()
