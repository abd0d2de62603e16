"""aoff's hot path next to the floor a buffered logger cannot beat, side by side (issue #26).

One iteration is the standard workload's 4 calls (``_workload.py``: 5 collector timings,
done rates, ``log_collector``, ``log_step`` with 12 metrics, a reward, 4 reward
components). Four contenders run it in one process, in interleaved blocks (``--blocks``
rounds; each round runs every contender once, in a rotated order, so that the machine's
drift hits them alike):

``aoff process``
    ``OffPolicyLogger`` with the defaults (``pump="process"``: the agent process does the
    work; ``display="none"``, TensorBoard into a temporary folder)
``aoff thread``
    the same with ``pump="thread"`` (the pump is a thread of this process)
``floor: event + append``
    each call replaced by what it must do at the least: build the same event tuple the
    recorder builds (kind, ``time.time()``, the arguments in the event's order, each dict
    argument copied with ``dict.copy``, ``extra_info``'s ``throughput_steps`` read out) and
    ``deque.append`` it, inline in the loop (no call, no attribute look-up beyond
    ``time.time``/``dict.copy``/``dq.append`` bound to locals)::

        append((COLLECTOR_TIMING, now(), timing.copy()))
        append((DONE_RATES, now(), TIMEOUT_RATE, TERMINATED_RATE))
        append((COLLECTOR, now(), total_steps(i), BUFFER_SIZE, REWARD))
        append((STEP, now(), i, metrics.copy(), REWARD, None, components.copy(),
                TRAIN_TIME, WAIT_TIME, 0.0, 0.0, extra.get("throughput_steps", 0)))

``floor: bare append``
    4 x ``dq.append(x)`` of one prebuilt tuple (the cost of the hand-off alone)

Each iteration is timed with ``perf_counter_ns`` around its 4 calls, flat out (hot
caches); the timer's own cost (an empty timed iteration, measured in the same blocks) is
printed, and the ratios are given both raw and with it taken out. Between blocks each
aoff logger is flushed (untimed), so no block inherits another's backlog; the floors'
deque is cleared between blocks. The issue's target: aoff's median <= 3x the
``event + append`` floor.

    python benchmarks/bench_hotpath_floor.py [--iterations 20000] [--blocks 10] [--torch]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _workload as w

from aoff import OffPolicyLogger
from aoff._core import _events as ev


def timed_aoff(log: OffPolicyLogger) -> Callable[[int, int, list[int]], None]:
    def run(start: int, n: int, out: list[int]) -> None:
        w.iterate(log, start, n, out)
        log.flush()  # untimed: the next block starts with nothing waiting

    return run


def timed_event_floor() -> Callable[[int, int, list[int]], None]:
    dq: deque[Any] = deque()
    STEP, COLLECTOR, DONE_RATES, TIMING_KIND = (
        ev.STEP,
        ev.COLLECTOR,
        ev.DONE_RATES,
        ev.COLLECTOR_TIMING,
    )
    timing, metrics, components, extra = w.TIMING, w.METRICS, w.COMPONENTS, w.EXTRA
    tr, te, bs, rw = w.TIMEOUT_RATE, w.TERMINATED_RATE, w.BUFFER_SIZE, w.REWARD
    tt, wt = w.TRAIN_TIME, w.WAIT_TIME
    total_steps = w.total_steps

    def run(start: int, n: int, out: list[int]) -> None:
        append = dq.append
        now = time.time
        clock = time.perf_counter_ns
        for i in range(start, start + n):
            t0 = clock()
            append((TIMING_KIND, now(), timing.copy()))
            append((DONE_RATES, now(), tr, te))
            append((COLLECTOR, now(), total_steps(i), bs, rw))
            append(
                (
                    STEP,
                    now(),
                    i,
                    metrics.copy(),
                    rw,
                    None,
                    components.copy(),
                    tt,
                    wt,
                    0.0,
                    0.0,
                    extra.get("throughput_steps", 0),
                )
            )
            out.append(clock() - t0)
        dq.clear()

    return run


def timed_bare_floor() -> Callable[[int, int, list[int]], None]:
    dq: deque[Any] = deque()
    x = (ev.STEP, 0.0, 1, w.METRICS, w.REWARD)

    def run(start: int, n: int, out: list[int]) -> None:
        append = dq.append
        clock = time.perf_counter_ns
        for _ in range(start, start + n):
            t0 = clock()
            append(x)
            append(x)
            append(x)
            append(x)
            out.append(clock() - t0)
        dq.clear()

    return run


def timed_nothing() -> Callable[[int, int, list[int]], None]:
    def run(start: int, n: int, out: list[int]) -> None:
        clock = time.perf_counter_ns
        for _ in range(start, start + n):
            t0 = clock()
            out.append(clock() - t0)

    return run


def median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1000


def p99_us(samples: list[int]) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * 0.99))] / 1000


def measure(iterations: int, blocks: int, root: Path) -> dict[str, Any]:
    proc = OffPolicyLogger(log_dir=root / "process", display="none", handle_sigterm=False)
    assert type(proc._driver).__name__ == "AgentSide", "the pump is not in the agent"
    thread = OffPolicyLogger(
        log_dir=root / "thread", display="none", pump="thread", handle_sigterm=False
    )
    contenders: dict[str, Callable[[int, int, list[int]], None]] = {
        "aoff process": timed_aoff(proc),
        "aoff thread": timed_aoff(thread),
        "floor: event + append": timed_event_floor(),
        "floor: bare append": timed_bare_floor(),
        "timer alone": timed_nothing(),
    }
    names = list(contenders)
    samples: dict[str, list[int]] = {n: [] for n in names}
    block_medians: dict[str, list[float]] = {n: [] for n in names}
    # warm-up: the agent started, every code path run once
    for name in names:
        contenders[name](0, 1000, [])
    start = 1000
    gc.collect()
    for b in range(blocks):
        order = names[b % len(names) :] + names[: b % len(names)]
        for name in order:
            out: list[int] = []
            contenders[name](start, iterations, out)
            start += iterations
            samples[name] += out
            block_medians[name].append(median_us(out))
        print(f"block {b + 1}/{blocks} done", file=sys.stderr)
    reports = {"aoff process": proc.finish(), "aoff thread": thread.finish()}
    return {"samples": samples, "block_medians": block_medians, "reports": reports}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=20_000, help="iterations a block")
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument(
        "--torch",
        action="store_true",
        help="import torch first, as a training script does (aoff's calls then check "
        "their values for tensors)",
    )
    args = ap.parse_args()
    if args.torch:
        import torch  # noqa: F401
    with tempfile.TemporaryDirectory() as tmp:
        got = measure(args.iterations, args.blocks, Path(tmp))
    samples, blocks = got["samples"], got["block_medians"]
    timer = median_us(samples["timer alone"])
    floor = median_us(samples["floor: event + append"])
    bare = median_us(samples["floor: bare append"])
    print(
        f"\none iteration (4 calls, ~30 scalars), {args.iterations:,} iterations x "
        f"{args.blocks} interleaved blocks; timer alone {timer:.3f} us (median)\n"
    )
    print(
        "| contender | median | p99 | block medians (min-max) | x event floor "
        "(raw / timer out) | x bare append (raw / timer out) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in list(samples)[:-1]:
        s = samples[name]
        med = median_us(s)
        lo, hi = min(blocks[name]), max(blocks[name])
        r_raw = med / floor
        r_net = (med - timer) / max(floor - timer, 1e-9)
        b_raw = med / bare
        b_net = (med - timer) / max(bare - timer, 1e-9)
        print(
            f"| {name} | {med:.3f} us | {p99_us(s):.2f} us | {lo:.2f}-{hi:.2f} us | "
            f"{r_raw:.2f}x / {r_net:.2f}x | {b_raw:.1f}x / {b_net:.1f}x |"
        )
    # the ratio per block (each block's aoff median over the same round's floor median)
    for name in ("aoff process", "aoff thread"):
        per = [a / f for a, f in zip(blocks[name], blocks["floor: event + append"], strict=True)]
        print(
            f"{name}: per-block ratio to the event floor, median {statistics.median(per):.2f}x "
            f"(range {min(per):.2f}-{max(per):.2f}x)"
        )
    for name, rep in got["reports"].items():
        print(f"{name}: {rep.steps:,} steps written, {rep.dropped_events} dropped")
    ok = all(median_us(samples[n]) <= 3 * floor for n in ("aoff process", "aoff thread"))
    print("target median <= 3x the event + append floor:", "met" if ok else "NOT met")


if __name__ == "__main__":
    main()
