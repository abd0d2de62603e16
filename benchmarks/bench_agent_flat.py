"""The agent's CPU flat out, the two workloads of issue #54 alone: ``bench_agent_cpu.py``'s
"flat out" and "one 32-metric log_step, flat out" lines without its other modes (paced,
group, cold start, threads), so a before/after can alternate more rounds in a sitting
(the same file runs against an older checkout's ``src``, ``PYTHONPATH=<old>/src``)::

    python benchmarks/bench_agent_flat.py [--iterations 5000] [--only log_step_32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench_agent_cpu import standard, wide


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=5000)
    ap.add_argument(
        "--only",
        choices=("standard", "log_step_32"),
        default=None,
        help="one workload (twice the rounds in a sitting's minutes)",
    )
    args = ap.parse_args()
    n = args.iterations * 5  # as bench_agent_cpu.py's flat-out runs
    with tempfile.TemporaryDirectory() as tmp:
        if args.only is not None:
            one = standard(
                Path(tmp) / "flat", n, 0.0, *((wide,) if args.only == "log_step_32" else ())
            )
            what = "32-metric log_step" if args.only == "log_step_32" else "standard iteration"
            print(
                f"load {os.getloadavg()[0]:.1f}; n={n:,}; agent CPU flat out: {what} "
                f"{one['agent_us_per_iteration']:.1f} us; to disk {one['scalars_per_s']:,.0f}"
                f" scalars/s; dropped {one['dropped']:.0f}"
            )
            return
        flat = standard(Path(tmp) / "flat", n, 0.0)
        flat32 = standard(Path(tmp) / "flat32", n, 0.0, wide)
    print(
        f"load {os.getloadavg()[0]:.1f}; n={n:,}; agent CPU flat out: standard "
        f"{flat['agent_us_per_iteration']:.1f} us an iteration, 32-metric log_step "
        f"{flat32['agent_us_per_iteration']:.1f} us a step; to disk {flat['scalars_per_s']:,.0f}"
        f" and {flat32['scalars_per_s']:,.0f} scalars/s; dropped "
        f"{flat['dropped']:.0f}, {flat32['dropped']:.0f}"
    )


if __name__ == "__main__":
    main()
