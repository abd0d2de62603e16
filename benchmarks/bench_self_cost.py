"""The hot path with aoff's own cost on record (one ``log_step`` in 64 timed) against
the same loop without it, side by side (issue target: at most +5 %).

"Without it" is another source tree of aoff (``--base-src``, e.g. a worktree of the
commit before the sampling); the two trees run alternately in fresh processes, each
``--rounds`` times, so that the machine's load falls on both alike. Each run times the
standard workload's 4 calls an iteration (``_workload.py``) on the sync face in process
mode (the default), ``--iterations`` of them, and prints its median and p99 per
iteration; the end compares the medians of the runs' medians.

    git worktree add /tmp/base-40 faad42f
    python benchmarks/bench_self_cost.py --base-src /tmp/base-40/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NEW_SRC = os.path.join(os.path.dirname(HERE), "src")

_CHILD = r"""
import gc, json, sys, time
sys.path.insert(0, {here!r})
from _workload import COMPONENTS, EXTRA, METRICS, TIMING
import aoff
from aoff.testing import MemoryBackend
n = {n}
log = aoff.OffPolicyLogger(log_backend="no_print", backends=[MemoryBackend()],
                           handle_sigterm=False, **{kw})
log.start()
log.flush()
out = [0] * n
clock = time.perf_counter_ns
gc.collect()
for i in range(n):
    t0 = clock()
    log.update_collector_timing(TIMING)
    log.update_done_rates(0.01, 0.002)
    log.log_collector(i * 4096, 1_000_000, -120.5)
    log.log_step(i, METRICS, reward=-120.5, reward_components=COMPONENTS,
                 train_time=0.004, wait_time=0.0002, extra_info=EXTRA)
    out[i] = clock() - t0
log.close()
out.sort()
print(json.dumps({{"file": aoff.__file__, "median_us": out[n // 2] / 1000,
                  "p99_us": out[int(n * 0.99)] / 1000}}))
"""


def run(src: str, iterations: int, kw: str = "{}") -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=src)
    code = _CHILD.format(here=HERE, n=iterations, kw=kw)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    got: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base-src", required=True, help="the src/ of aoff without the sampling")
    ap.add_argument("--iterations", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--no-rules",
        action="store_true",
        help="this tree with rules=[] (the cost of the sampling alone, no rules in the agent)",
    )
    args = ap.parse_args()
    kw = "{'rules': []}" if args.no_rules else "{}"
    runs: dict[str, list[dict[str, float]]] = {"with cost on record": [], "without": []}
    for _ in range(args.rounds):
        for name, src in (("with cost on record", NEW_SRC), ("without", args.base_src)):
            r = run(src, args.iterations, kw if src == NEW_SRC else "{}")
            runs[name].append(r)
            print(f"{name:<20} median {r['median_us']:6.2f} us  p99 {r['p99_us']:7.2f} us")
    med = {k: statistics.median(r["median_us"] for r in v) for k, v in runs.items()}
    p99 = {k: statistics.median(r["p99_us"] for r in v) for k, v in runs.items()}
    ratio = med["with cost on record"] / med["without"]
    print(
        f"medians of {args.rounds} runs: with {med['with cost on record']:.2f} us "
        f"(p99 {p99['with cost on record']:.2f}), without {med['without']:.2f} us "
        f"(p99 {p99['without']:.2f}): {100 * (ratio - 1):+.1f} % (target <= +5 %)"
    )


if __name__ == "__main__":
    main()
