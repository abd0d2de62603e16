"""Two trees' warm ``aoff.read_scalars``, each in processes of its own, alternated.

Why a benchmark of its own: ``bench_read_ab.py`` reads with both trees in one process,
the only fair comparison of their CPU work on this drifting VM, but a process's state is
then shared: what one tree does to the allocator (``_runfolder/_heapkept``: glibc's
thresholds moved once a process) the other gets too, and a page fault is CPU time of
the process that takes it. Here each tree reads in fresh processes, as
``bench_read.py --warm`` does, alternated process by process (the order swapped every
round) so that both see the same drift: each process reads every folder once (its first
read, not timed), then ``--reads`` times, timed by CPU time (system time included), and
counts its page faults.

    python benchmarks/bench_read_procs.py OTHER_TREE FOLDER... [--rounds 8] [--reads 10]

prints, per folder, each tree's best and median MB/s of CPU in each process, page faults
a read, and the ratios round by round (this tree over the other).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: a process's reads: ``{folder: [best s, median s, faults a read]}``
CHILD = """
import json, resource, statistics, sys, time
import pandas
from aoff import read_scalars
out = {}
for folder in sys.argv[2:]:
    read_scalars(folder)
    times = []
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(int(sys.argv[1])):
        c0 = time.process_time()
        read_scalars(folder)
        times.append(time.process_time() - c0)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / len(times)
    out[folder] = [min(times), statistics.median(times), faults]
print(json.dumps(out))
"""


def _run(tree: Path, folders: list[str], reads: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    got = subprocess.run(
        [sys.executable, "-c", CHILD, str(reads), *folders],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    out: dict[str, list[float]] = json.loads(got.stdout.strip().splitlines()[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("other", type=Path, help="the other tree (its src/aoff is read)")
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--reads", type=int, default=10)
    args = parser.parse_args()
    trees = {"other": args.other.resolve(), "this": ROOT}
    folders = [str(f.resolve()) for f in args.folders]
    got: dict[str, list[dict[str, list[float]]]] = {"other": [], "this": []}
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for i in range(args.rounds):
        for name in ("this", "other") if i % 2 else ("other", "this"):
            got[name].append(_run(trees[name], folders, args.reads))
    for folder in folders:
        size = sum(f.stat().st_size for f in Path(folder).rglob("*tfevents*")) / 1e6
        print(f"{Path(folder).name} ({size:.2f} MB)")
        for name in ("other", "this"):
            rows = [r[folder] for r in got[name]]
            best = " ".join(f"{size / r[0]:.0f}" for r in rows)
            med = " ".join(f"{size / r[1]:.0f}" for r in rows)
            faults = statistics.median(r[2] for r in rows)
            print(f"  {name}: best MB/s {best}; median {med}; page faults a read {faults:.0f}")
        pairs = list(zip(got["other"], got["this"], strict=True))
        best = [o[folder][0] / t[folder][0] for o, t in pairs]
        med = [o[folder][1] / t[folder][1] for o, t in pairs]
        print(
            f"  this / other, best: {' '.join(f'{r:.2f}' for r in best)} "
            f"(median {statistics.median(best):.2f}); median: "
            f"{' '.join(f'{r:.2f}' for r in med)} (median {statistics.median(med):.2f})"
        )
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
