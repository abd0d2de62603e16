"""Event-loop lag in an async runner under a logging flood: no logger vs aoff, one run.

32 actor tasks each log ``log_step(i, METRICS)`` (12 metrics) in bursts of 20 calls
every 10 ms (64,000 calls/s in all, as asked), while a 1 ms timer task measures how late
each of its wake-ups comes. "none" is the same actors awaiting a no-op instead of aoff
(the loop's own lateness under the same task load); "aoff" is an
``AsyncOffPolicyLogger`` in process mode (its shipper is a task on this loop), JSONL +
TensorBoard, no dashboard. The two alternate (none, aoff, none, aoff, ...) so that a
busy machine hurts both alike; each line is one run, the last line the medians.

Each run also says where the lateness comes from:

* ``cpu`` — the share of a core the loop's thread used (actors, timer, and aoff's hot
  path, shipping rounds and garbage collections when it runs);
* ``tail ran`` — of the worst 1 % wake-ups, how much of the time from the sleep to the
  late wake-up the loop's thread was running (its CPU time): the rest it was waiting for
  a CPU (another process had it: on a 2-core machine the agent, which spends about a
  core on this flood, and whatever else runs);
* ``gc`` — the garbage collections during the run, the longest (wall), and their share
  of the run's time;
* ``rounds`` (aoff) — the shipper's rounds on the loop: how many (their CPU time, as a
  share of a core), the p99 and the longest hold of the loop by one (its CPU time; wall
  in brackets).

``--nice-agent N`` passes ``agent_nice=N`` (the default is the logger's: 0, the
agent at the loop's priority), ``--pin`` runs the loop on CPU 0 and the agent
on CPU 1: both to tell what aoff's own code costs the loop from what sharing the CPUs
with the agent costs it.

    python benchmarks/bench_loop_lag.py [--seconds 4] [--repeat 2] [--backend asyncio]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import statistics
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass, field
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


@dataclass
class Run:
    """One run's measurements."""

    late: list[float] = field(default_factory=list)  # s, each wake-up
    ran: list[float] = field(default_factory=list)  # s of the loop thread's CPU meanwhile
    rate: float = 0.0
    cpu: float = 0.0  # the loop thread's CPU / wall
    wall: float = 0.0  # s measured
    on: bool = False  # measuring now
    gcs: list[tuple[int, float]] = field(default_factory=list)  # (generation, wall s)
    rounds: list[tuple[float, float]] = field(default_factory=list)  # (cpu s, wall s)


class _GcWatch:
    """The collections while it is on (``gc.callbacks``)."""

    def __init__(self, into: list[tuple[int, float]]) -> None:
        self.into = into
        self.t0 = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.t0 = time.perf_counter()
        else:
            self.into.append((info["generation"], time.perf_counter() - self.t0))


async def timer(seconds: float, run: Run) -> None:
    """Lateness of each 1 ms sleep for ``seconds``, and the loop's CPU time during each."""
    end = time.perf_counter() + seconds
    cpu = time.thread_time
    while (t := time.perf_counter()) < end:
        c = cpu()
        await anyio.sleep(TIMER)
        run.late.append(time.perf_counter() - t - TIMER)
        run.ran.append(cpu() - c)


async def actor(log: Any, stop: anyio.Event, calls: list[int]) -> None:
    i = 0
    while not stop.is_set():
        for _ in range(BURST):
            i += 1
            await log.log_step(i, METRICS)
        await anyio.sleep(BURST_EVERY)
    calls.append(i)


async def measure(log: Any, seconds: float, run: Run) -> Run:
    stop = anyio.Event()
    calls: list[int] = []
    watch = _GcWatch(run.gcs)
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(TASKS):
            tg.start_soon(actor, log, stop, calls)
        await anyio.sleep(0.2)  # the actors are running
        gc.callbacks.append(watch)
        w0, c0 = time.perf_counter(), time.thread_time()
        run.on = True
        try:
            await timer(seconds, run)
        finally:
            run.on = False
            run.wall = time.perf_counter() - w0
            run.cpu = (time.thread_time() - c0) / run.wall
            gc.callbacks.remove(watch)
        stop.set()
    run.rate = sum(calls) / (time.perf_counter() - t0)
    return run


def _timed_rounds(side: Any, run: Run) -> None:
    """Time each of the shipper's rounds on the loop (``AgentSide._round``)."""
    inner = side._round

    def timed() -> float | None:
        w, c = time.perf_counter(), time.thread_time()
        try:
            return inner()  # type: ignore[no-any-return]
        finally:
            if run.on:
                run.rounds.append((time.thread_time() - c, time.perf_counter() - w))

    side._round = timed


async def with_aoff(seconds: float, nice: int | None, pin: bool) -> Run:
    run = Run()
    kw: dict[str, Any] = {} if nice is None else {"agent_nice": nice}
    with tempfile.TemporaryDirectory() as tmp:
        async with AsyncOffPolicyLogger(
            log_dir=Path(tmp),
            backends=("jsonl",),
            display=NullDisplay(),
            handle_sigterm=False,
            **kw,
        ) as log:
            side: Any = log._driver
            assert type(side).__name__ == "AgentSide", "the pump is not in the agent"
            if pin:
                os.sched_setaffinity(side.proc.pid, {1})
            await log.log_step(0, METRICS)
            await log.aflush()  # the agent is up and its backends open
            _timed_rounds(side, run)
            await measure(log, seconds, run)
        report = log._report
        assert report is not None and report.complete, report
        return run


async def without(seconds: float, nice: int | None, pin: bool) -> Run:
    return await measure(NoLogger(), seconds, Run())


def summary(late: list[float]) -> tuple[float, float]:
    ms = sorted(x * 1e3 for x in late)
    return statistics.fmean(ms), ms[min(len(ms) - 1, int(0.99 * len(ms)))]


def explain(run: Run) -> str:
    """Where the lateness came from: see the module's docstring."""
    worst = sorted(zip(run.late, run.ran, strict=True), reverse=True)[: len(run.late) // 100 + 1]
    spent = sum(late + TIMER for late, _ in worst)
    ran = sum(r for _, r in worst)
    gcs = f"gc {len(run.gcs)}"
    if run.gcs:
        full = sum(g == 2 for g, _ in run.gcs)
        gcs += (
            f" (gen2 {full}, longest {max(w for _, w in run.gcs) * 1e3:.1f} ms, "
            f"{sum(w for _, w in run.gcs) / run.wall:.1%})"
        )
    out = f"cpu {run.cpu:4.0%}  tail ran {ran / spent:4.0%}  {gcs}"
    if run.rounds:
        cpu = sorted(c for c, _ in run.rounds)
        longest = max(run.rounds)
        out += (
            f"  rounds {len(cpu):,} ({sum(cpu) / run.wall:.0%}) p99 "
            f"{cpu[int(0.99 * (len(cpu) - 1))] * 1e3:.2f} ms, "
            f"longest {longest[0] * 1e3:.2f} ms ({longest[1] * 1e3:.2f})"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    ap.add_argument(
        "--nice-agent", type=int, default=None, help="agent_nice= (default: the logger's)"
    )
    ap.add_argument("--pin", action="store_true", help="this loop on CPU 0, the agent on 1")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    args = ap.parse_args()
    seconds, repeat = (0.3, 1) if args.quick else (args.seconds, args.repeat)
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    if args.quick:
        backends = backends[:1]
    if "trio" in backends and importlib.util.find_spec("trio") is None:
        backends.remove("trio")
    if args.pin:
        os.sched_setaffinity(0, {0})
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for backend in backends:
        print(f"{backend}: 1 ms timer lateness (ms), {TASKS} tasks logging, {seconds:g} s a run")
        got: dict[str, list[tuple[float, float]]] = {"none": [], "aoff": []}
        for _ in range(repeat):
            for name, fn in (("none", without), ("aoff", with_aoff)):
                run = anyio.run(fn, seconds, args.nice_agent, args.pin, backend=backend)
                mean, p99 = summary(run.late)
                got[name].append((mean, p99))
                print(
                    f"  {name:5s} mean {mean:6.3f}  p99 {p99:6.3f}  "
                    f"({run.rate:,.0f} calls/s, {len(run.late):,} wake-ups)  {explain(run)}"
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
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
