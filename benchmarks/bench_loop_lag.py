"""Event-loop lag in an async runner under a logging flood: no logger vs aoff, one run.

32 actor tasks each log ``log_step(i, METRICS)`` (12 metrics) in bursts of 20 calls
every 10 ms (64,000 calls/s in all, as asked), while a 1 ms timer task measures how late
each of its wake-ups comes. "none" is the same actors awaiting a no-op instead of aoff
(the loop's own lateness under the same task load); "aoff" is an
``AsyncOffPolicyLogger`` in process mode (its shipper is a task on this loop), JSONL +
TensorBoard, no dashboard. The two alternate (none, aoff, none, aoff, ...) so that a
busy machine hurts both alike; each line is one run, the last line the medians.

    python benchmarks/bench_loop_lag.py [--seconds 4] [--repeat 2] [--backend asyncio]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
from _workload import METRICS

from aoff import AsyncOffPolicyLogger, NullDisplay

TASKS = 32
BURST = 20
BURST_EVERY = 0.010  # s: 32 x 20 / 0.01 = 64,000 calls/s
TIMER = 0.001


class _Done:
    def __await__(self) -> Generator[Any, None, None]:
        return iter(())


class NoLogger:
    """The actors' calls with nothing behind them."""

    _done = _Done()

    def log_step(self, *args: object, **kwargs: object) -> _Done:
        return self._done


async def timer(seconds: float) -> list[float]:
    """Lateness (s) of each 1 ms sleep, for ``seconds``."""
    late: list[float] = []
    end = time.perf_counter() + seconds
    while (t := time.perf_counter()) < end:
        await anyio.sleep(TIMER)
        late.append(time.perf_counter() - t - TIMER)
    return late


async def actor(log: Any, stop: anyio.Event, calls: list[int]) -> None:
    i = 0
    while not stop.is_set():
        for _ in range(BURST):
            i += 1
            await log.log_step(i, METRICS)
        await anyio.sleep(BURST_EVERY)
    calls.append(i)


async def measure(log: Any, seconds: float) -> tuple[list[float], float]:
    stop = anyio.Event()
    calls: list[int] = []
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(TASKS):
            tg.start_soon(actor, log, stop, calls)
        await anyio.sleep(0.2)  # the actors are running
        late = await timer(seconds)
        stop.set()
    return late, sum(calls) / (time.perf_counter() - t0)


async def with_aoff(seconds: float) -> tuple[list[float], float]:
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncOffPolicyLogger(
            log_dir=Path(tmp), backends=("jsonl",), display=NullDisplay(), handle_sigterm=False
        ) as log:
            assert log._side is not None, "the pump is not in the agent"
            await log.log_step(0, METRICS)
            await log.aflush()  # the agent is up and its backends open
            out = await measure(log, seconds)
        report = log._report
        assert report is not None and report.complete, report
        return out


async def without(seconds: float) -> tuple[list[float], float]:
    return await measure(NoLogger(), seconds)


def summary(late: list[float]) -> tuple[float, float]:
    ms = sorted(x * 1e3 for x in late)
    return statistics.fmean(ms), ms[min(len(ms) - 1, int(0.99 * len(ms)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    args = ap.parse_args()
    seconds, repeat = (0.3, 1) if args.quick else (args.seconds, args.repeat)
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    if args.quick:
        backends = backends[:1]
    if "trio" in backends and importlib.util.find_spec("trio") is None:
        backends.remove("trio")
    for backend in backends:
        print(f"{backend}: 1 ms timer lateness (ms), {TASKS} tasks logging, {seconds:g} s a run")
        got: dict[str, list[tuple[float, float]]] = {"none": [], "aoff": []}
        for _ in range(repeat):
            for name, run in (("none", without), ("aoff", with_aoff)):
                late, rate = anyio.run(run, seconds, backend=backend)
                mean, p99 = summary(late)
                got[name].append((mean, p99))
                print(
                    f"  {name:5s} mean {mean:6.3f}  p99 {p99:6.3f}  "
                    f"({rate:,.0f} calls/s, {len(late):,} wake-ups)"
                )
        med = {
            k: (statistics.median(m for m, _ in v), statistics.median(p for _, p in v))
            for k, v in got.items()
        }
        print(
            f"  median: none mean {med['none'][0]:.3f} p99 {med['none'][1]:.3f}; aoff mean "
            f"{med['aoff'][0]:.3f} p99 {med['aoff'][1]:.3f} "
            f"(p99 {100 * (med['aoff'][1] / med['none'][1] - 1):+.0f} %)"
        )


if __name__ == "__main__":
    main()
