"""Two trees' ``aoff.read_scalars`` on the same event files, interleaved in one process.

Why a benchmark of its own: on the shared 2-core VM the CPU's speed drifts ~1.7x within a
minute (the same read took 10 ms in one sitting and 17 ms in another, load under 2), so
best-of-N figures from separate processes, one tree after the other, mostly measure the
drift: two runs of the same tree differed more than the change being timed. Here the
other tree's ``src/aoff`` is copied as a package ``aoff_base`` and imported beside this
tree's ``aoff``; each round reads every folder once with each (the order swapped every
round), so both see the same machine. Each is checked equal to the other first (the
whole table); each keeps its own layout caches, warm after that first read.

    python benchmarks/bench_read_ab.py OTHER_TREE FOLDER... [--rounds 30]

prints, per folder, each tree's best and median MB/s of CPU time and their ratios (this
tree over the other). Comparing a tree with a copy of itself reads ~1.00 (0.99-1.02).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("other", type=Path, help="the other tree (its src/aoff is read)")
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(args.other / "src" / "aoff", Path(tmp) / "aoff_base")
        sys.path.insert(0, tmp)
        import pandas  # noqa: F401  # (both trees' reads build a DataFrame)
        from aoff_base import read_scalars as theirs  # type: ignore[import-not-found]

        from aoff import read_scalars as ours

        print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
        print("| folder | MB | other MB/s (best, median) | this MB/s (best, median) "
              "| this / other (best, median) |")  # fmt: skip
        print("| --- | ---: | ---: | ---: | ---: |")
        for folder in args.folders:
            size = sum(f.stat().st_size for f in folder.rglob("*tfevents*")) / 1e6
            assert ours(folder).equals(theirs(folder)), folder
            times: dict[str, list[float]] = {"other": [], "this": []}
            for i in range(args.rounds):
                pair = [("this", ours), ("other", theirs)]
                for name, read in pair if i % 2 else pair[::-1]:
                    c0 = time.process_time()
                    read(folder)
                    times[name].append(time.process_time() - c0)
            best = {k: min(v) for k, v in times.items()}
            med = {k: statistics.median(v) for k, v in times.items()}
            print(
                f"| {folder.name} | {size:.2f} "
                f"| {size / best['other']:.0f}, {size / med['other']:.0f} "
                f"| {size / best['this']:.0f}, {size / med['this']:.0f} "
                f"| {best['other'] / best['this']:.2f}, {med['other'] / med['this']:.2f} |"
            )
        print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
