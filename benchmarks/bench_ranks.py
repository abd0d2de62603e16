"""What a torchrun rank that does not log pays: the 4 calls of one iteration, rank 1.

Under ``torchrun`` only global rank 0 logs by default (``ranks="zero"``); on every
other rank the logger is inert and each call is a no-op bound on the instance. This
times the standard iteration (``_workload.py``: 4 calls, ~30 scalars) on rank 1 (``RANK``
set as torchrun sets it) next to rank 0's real hot path (process pump, JSONL), in one
run. The issue's bound: a rank-1 iteration costs <= 1 us.

    python benchmarks/bench_ranks.py [--iterations 200000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

from _workload import (  # benchmarks/ is on sys.path
    iterate,
)

from aoff import OffPolicyLogger


def per_iteration_us(log: Any, n: int, rounds: int = 5) -> float:
    """Median over rounds of the mean cost of one iteration's 4 calls, in us."""
    results = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        iterate(log, 0, n)
        results.append((time.perf_counter_ns() - t0) / n / 1000)
    return statistics.median(results)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=200_000)
    args = ap.parse_args()
    n = args.iterations
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for rank in ("1", "0"):
            os.environ["RANK"], os.environ["WORLD_SIZE"] = rank, "2"
            log = OffPolicyLogger(
                log_dir=os.path.join(d, f"r{rank}"),
                log_backend="none",
                backends=("jsonl",),
                capacity=10 * n,  # rank 0: nothing dropped while the loop runs flat out
                handle_sigterm=False,
            )
            us = per_iteration_us(log, n // 5 if rank == "0" else n)
            log.finish()
            rows.append((rank, us))
    print("| rank | one iteration (4 calls, ~30 scalars) |")
    print("| --- | ---: |")
    for rank, us in rows:
        what = "inert (does not log)" if rank == "1" else "logs (process pump, JSONL)"
        print(f"| {rank}: {what} | {us:.2f} us |")
    rank1 = rows[0][1]
    verdict = "met" if rank1 <= 1 else "NOT met"
    print(f"rank 1: {rank1:.2f} us an iteration (bound <= 1 us: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
