"""The caller's cost under a burst: process mode next to thread mode, side by side (#26).

A burst is a flat-out loop of ``--calls`` logging calls with nothing in between: the
standard workload's ``log_step`` (12 metrics, a reward, 4 reward components), the call
a loop makes most. Each call is timed with ``perf_counter_ns``; the loop's total is
timed too (what the burst cost the caller, shipping rounds and GIL hand-offs included),
and so is the calling thread's own CPU time (``thread_time``: what it computed, without
the time it waited for the GIL or, on a busy machine, for a CPU: in process mode the
agent needs a core of its own to keep up with a burst, and on a 2-core machine shared
with other jobs the training process then waits for one).

Each run is a fresh ``OffPolicyLogger`` (``display="none"``, TensorBoard into a
temporary folder, default ``capacity`` and ``overflow``), started and warmed (1,000
calls, then ``flush()``) before the timed burst; ``finish()`` is not timed, and its
report must account for every call: written, or dropped by the overflow policy when the
burst outran the pump (shown: a mode that dropped did less work).
Runs alternate between the modes (``--runs`` of each, the order swapped every other
pair) so that the machine's drift hits both alike. The issue's target: process mode's
per-call cost <= 2x thread mode's.

With ``--iterations`` the burst is of the standard iteration's 4 calls instead (figures
per iteration, dropped counts events).

    python benchmarks/bench_burst.py [--calls 50000] [--runs 6] [--torch] [--iterations]
        [--modes process,thread]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _workload as w

from aoff import OffPolicyLogger

MODES = ("process", "thread")


def burst(mode: str, calls: int, root: Path, iterations: bool) -> dict[str, Any]:
    log = OffPolicyLogger(log_dir=root, display="none", pump=mode, handle_sigterm=False)  # type: ignore[arg-type]
    in_agent = type(log._driver).__name__ == "AgentSide"
    assert in_agent == (mode == "process"), "the pump is not where the mode says"
    metrics, components, extra = w.METRICS, w.COMPONENTS, w.EXTRA
    reward, tt, wt = w.REWARD, w.TRAIN_TIME, w.WAIT_TIME
    for i in range(1000):
        log.log_step(i, metrics, reward=reward, reward_components=components)
    log.flush()
    out = [0] * calls
    clock = time.perf_counter_ns
    gc.collect()
    cpu0 = time.thread_time_ns()
    start = clock()
    if iterations:  # the standard iteration's 4 calls, timed together
        samples: list[int] = []
        w.iterate(log, 1000, calls, samples)
        out[:] = samples
    for k in range(0 if iterations else calls):
        t0 = clock()
        log.log_step(
            1000 + k,
            metrics,
            reward=reward,
            reward_components=components,
            train_time=tt,
            wait_time=wt,
            extra_info=extra,
        )
        out[k] = clock() - t0
    total_ns = clock() - start
    cpu_ns = time.thread_time_ns() - cpu0
    report = log.finish()
    # a burst beyond what the pump keeps up with loses its oldest events (drop_oldest):
    # counted, and shown, since a mode that dropped did less work
    if iterations:  # dropped counts events of every kind
        assert report.steps <= 1000 + calls and report.steps + report.dropped_events >= 1000
    else:
        assert report.steps + report.dropped_events == 1000 + calls, report
    out.sort()
    return {
        "median_us": statistics.median(out) / 1000,
        "p99_us": out[int(calls * 0.99)] / 1000,
        "p999_us": out[int(calls * 0.999)] / 1000,
        "max_ms": out[-1] / 1e6,
        "total_us_per_call": total_ns / calls / 1000,
        "cpu_us_per_call": cpu_ns / calls / 1000,
        "dropped": report.dropped_events,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=6, help="runs of each mode")
    ap.add_argument("--torch", action="store_true", help="import torch first")
    ap.add_argument(
        "--iterations",
        action="store_true",
        help="burst standard iterations (_workload: 4 calls, 32 scalars) instead of "
        "log_step calls; --calls then counts iterations, figures are per iteration",
    )
    ap.add_argument(
        "--modes",
        default=",".join(MODES),
        help="comma-separated subset of process,thread (both: the ratios are printed)",
    )
    args = ap.parse_args()
    modes = tuple(m for m in MODES if m in args.modes.split(","))
    if args.torch:
        import torch  # noqa: F401
    got: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.runs):
            for mode in modes if r % 2 == 0 else modes[::-1]:
                got[mode].append(
                    burst(mode, args.calls, Path(tmp) / f"{mode}-{r}", args.iterations)
                )
                print(f"run {r + 1} {mode} done", file=sys.stderr)
    print(
        f"\nburst of {args.calls:,} "
        + ("standard iterations (4 calls each) " if args.iterations else "log_step calls ")
        + "(12 metrics, reward, 4 components), "
        f"{args.runs} runs of each mode, alternated; medians over runs (min-max)\n"
    )
    print(
        "| pump | median a call | p99 | p99.9 | worst call | total / calls "
        "| caller's CPU / calls | dropped (each run) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    def cell(mode: str, key: str, unit: str, fmt: str = ".2f") -> str:
        vals = [g[key] for g in got[mode]]
        return f"{statistics.median(vals):{fmt}} {unit} ({min(vals):{fmt}}-{max(vals):{fmt}})"

    for mode in modes:
        print(
            f"| {mode} | {cell(mode, 'median_us', 'us')} | {cell(mode, 'p99_us', 'us', '.1f')} "
            f"| {cell(mode, 'p999_us', 'us', '.0f')} | {cell(mode, 'max_ms', 'ms', '.1f')} "
            f"| {cell(mode, 'total_us_per_call', 'us')} | {cell(mode, 'cpu_us_per_call', 'us')} "
            f"| {', '.join(str(g['dropped']) for g in got[mode])} |"
        )
    if len(modes) < 2:
        return
    for key, what in (
        ("median_us", "median a call"),
        ("total_us_per_call", "total / calls"),
        ("cpu_us_per_call", "caller's CPU / calls"),
    ):
        ratios = [p[key] / t[key] for p, t in zip(got["process"], got["thread"], strict=True)]
        print(
            f"process / thread, {what}: median of per-pair ratios "
            f"{statistics.median(ratios):.2f}x (range {min(ratios):.2f}-{max(ratios):.2f}x)"
        )
    for key, what in (("total_us_per_call", "total"), ("cpu_us_per_call", "caller's CPU")):
        r = statistics.median(
            p[key] / t[key] for p, t in zip(got["process"], got["thread"], strict=True)
        )
        print(f"target process <= 2x thread ({what} / calls):", "met" if r <= 2 else "NOT met")


if __name__ == "__main__":
    main()
