"""An 8-run group at 1,000 iterations/s, alone: ``bench_agent_cpu.py``'s "8-run group"
line (one ``RunGroup`` of 8 runs, 32 float32 metrics a run, ``log_step`` paced at 1 ms,
TensorBoard + JSONL a run, its agent process) without its other modes, so a
before/after can alternate rounds in a sitting (the same file runs against an older
checkout's ``src``, ``PYTHONPATH=<old>/src``). Issue #54 asks the agent under half a
core here::

    python benchmarks/bench_agent_group.py [--iterations 3000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench_agent_cpu import group


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            got = group(Path(tmp) / "group", args.iterations, 0.001)
        print(
            f"load {os.getloadavg()[0]:.1f}; 8-run group, n={args.iterations:,} at "
            f"{got['iterations_per_s']:,.0f} iterations/s: agent "
            f"{got['agent_us_per_iteration']:.0f} us an iteration "
            f"({got['agent_cpu_share'] * 100:.0f} % of a core); dropped {got['dropped']:.0f}, "
            f"written {got['written']:,.0f}"
        )


if __name__ == "__main__":
    main()
