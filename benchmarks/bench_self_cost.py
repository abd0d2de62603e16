"""The hot path with aoff's own cost on record (one ``log_step`` in 64 timed) against
the same loop without it, side by side (issue target: at most +5 %).

"Without it" is, by default, this very tree with the sampling compiled out: ``src/`` is
copied to a temporary folder and ``_core/_recorder.py``'s two lines

    self._cost_left -= 1
    if not self._cost_left:

become ``if False:`` (the script stops if they are not found), so the difference is the
sampling's and nothing else. ``--base-src`` takes another tree's ``src/`` instead (e.g.
a worktree of an older commit, with or without the same edit). The two run alternately
in fresh processes, each ``--rounds`` times, so that the machine's load falls on both
alike. Each run times the standard workload's 4 calls an iteration (``_workload.py``)
on the sync face in process mode (the default), ``--iterations`` of them, and prints
its median and p99 per iteration; the end compares the medians of the runs' medians.

    chrt -f 1 python benchmarks/bench_self_cost.py --iterations 100000 --rounds 8
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

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


#: the sampling in ``Recorder.log_step``, and what the base has instead
SAMPLING = "        self._cost_left -= 1\n        if not self._cost_left:"
COMPILED_OUT = "        if False:"


def base_without_sampling(into: str) -> str:
    """A copy of this tree's ``src/`` under ``into`` with the sampling compiled out."""
    src = os.path.join(into, "src")
    shutil.copytree(NEW_SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
    path = os.path.join(src, "aoff", "_core", "_recorder.py")
    with open(path) as f:
        text = f.read()
    if text.count(SAMPLING) != 1:
        sys.exit(f"{path}: the sampling's two lines are not there once; update SAMPLING")
    with open(path, "w") as f:
        f.write(text.replace(SAMPLING, COMPILED_OUT))
    return src


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--base-src",
        help="the src/ of aoff to compare with (default: this tree, sampling compiled out)",
    )
    ap.add_argument("--iterations", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--no-rules",
        action="store_true",
        help="rules=[] (no rules in the agent) for this tree, and for the base made from it "
        "(a --base-src tree runs with its defaults: an older one may take no rules=)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aoff-self-cost-") as tmp:
        base = args.base_src or base_without_sampling(tmp)
        kw = "{'rules': []}" if args.no_rules else "{}"
        compare(base, args.iterations, args.rounds, kw, kw if args.base_src is None else "{}")


def compare(base_src: str, iterations: int, rounds: int, kw: str, base_kw: str) -> None:
    """Run both trees alternately (``kw``/``base_kw``: the loggers' extra arguments) and
    print each run and the comparison."""
    runs: dict[str, list[dict[str, float]]] = {"with cost on record": [], "without": []}
    for _ in range(rounds):
        for name, src in (("with cost on record", NEW_SRC), ("without", base_src)):
            r = run(src, iterations, kw if src == NEW_SRC else base_kw)
            runs[name].append(r)
            print(f"{name:<20} median {r['median_us']:6.2f} us  p99 {r['p99_us']:7.2f} us")
    med = {k: statistics.median(r["median_us"] for r in v) for k, v in runs.items()}
    p99 = {k: statistics.median(r["p99_us"] for r in v) for k, v in runs.items()}
    ratio = med["with cost on record"] / med["without"]
    print(
        f"medians of {rounds} runs: with {med['with cost on record']:.2f} us "
        f"(p99 {p99['with cost on record']:.2f}), without {med['without']:.2f} us "
        f"(p99 {p99['without']:.2f}): {100 * (ratio - 1):+.1f} % (target <= +5 %)"
    )


if __name__ == "__main__":
    main()
