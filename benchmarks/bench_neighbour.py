"""Does work on the other CPU slow this one down? The agent's cost that is not its own CPU.

    python benchmarks/bench_neighbour.py [--rounds 5]

aoff's agent runs on another core, so its CPU is not the training process's. But on
many VMs (and with SMT on any machine) two logical CPUs share one physical core, and
then whatever runs on one slows the other. This measures it directly: the CPU time of
a fixed pure-Python loop (the ``slowdown.py`` work), pinned to CPU 0, alone and while
another process spins on CPU 1, interleaved ``--rounds`` times (median of each).

Each round measures alone, then shared, back to back: the per-round ratio cancels most
of the machine's own drift (on this project's VM the loop alone drifts by 20-40 % over
seconds). A ratio well above 1 means the agent's own work (``slowdown.py`` reports it per
iteration as the work's slowdown in the aoff rounds) costs the training loop wall time
in proportion to the agent's duty cycle, whatever aoff does in the training process.
Linux only (``os.sched_setaffinity``); needs 2 CPUs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

SPIN = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


def busy(k: int) -> int:
    x = 0
    for j in range(k):
        x += j
    return x


def loop_cpu_us(k: int, n: int) -> float:
    """CPU µs of one ``busy(k)``, this thread's clock, over ``n`` calls."""
    c0 = time.thread_time_ns()
    for _ in range(n):
        busy(k)
    return (time.thread_time_ns() - c0) / n / 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--k", type=int, default=30_000, help="busy-loop additions (~1 ms)")
    ap.add_argument("--n", type=int, default=300, help="busy loops per measurement")
    args = ap.parse_args(argv)
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        print("needs Linux and 2 CPUs")
        return 0
    cpus = sorted(os.sched_getaffinity(0))
    here, there = cpus[0], cpus[1]
    os.sched_setaffinity(0, {here})
    busy(args.k)
    alone: list[float] = []
    shared: list[float] = []
    for _ in range(args.rounds):
        alone.append(loop_cpu_us(args.k, args.n))
        spin = subprocess.Popen([sys.executable, "-c", SPIN, str(there)])
        try:
            time.sleep(0.3)  # let it start spinning
            shared.append(loop_cpu_us(args.k, args.n))
        finally:
            spin.kill()
            spin.wait()
    a, s = statistics.median(alone), statistics.median(shared)
    ratio = statistics.median(y / x for x, y in zip(alone, shared, strict=True))
    drift = (max(alone) - min(alone)) / a
    print(
        f"a busy loop on CPU {here}: {a:.0f} µs alone, {s:.0f} µs while CPU {there} spins "
        f"(medians of {args.rounds}); median per-round ratio {ratio:.2f}x; the loop alone "
        f"drifted by {drift * 100:.0f} % across rounds"
    )
    print(f"  alone: {', '.join(f'{x:.0f}' for x in alone)}")
    print(f"  while the other CPU spins: {', '.join(f'{x:.0f}' for x in shared)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
