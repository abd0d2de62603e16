"""Each participant's CPU in ``read_scalars(..., workers=N)`` calls on a folder of runs.

Why a script of its own: on a busy machine the wall time of a ``workers=2`` call is the
share of the cores it got, not its scaling; what the split costs is each participant's
CPU. ``bench_scale.py --scaling`` gives the calls' total CPU; this one gives the caller's
(``getrusage(RUSAGE_SELF)``) and its workers' (the forkserver's reaped children) apart,
and the time Python's cyclic collector ran inside each call (``gc.callbacks``: a
collection there may be freeing an earlier call's objects), the calls in the order given,
in one process, each table checked equal to the first.

    python benchmarks/bench_workers_split.py FOLDER --workers 1,2,1,2

Run it once per tree with ``PYTHONPATH=<tree>/src`` to compare trees side by side (the
forkserver's workers import the same tree). ``FOLDER``: a folder of runs, e.g. one that
``bench_scale.py --dir`` built (its ``runs/``).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from typing import Any

from _participants import participants_cpu

#: the tag read, one of ``bench_scale.py``'s
TAG = "charts/episodic_return"


class CollectorClock:
    """Wall time and objects freed of the cyclic collector's runs since :meth:`reset`."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.freed = 0
        self._began = 0.0
        gc.callbacks.append(self._seen)

    def close(self) -> None:
        gc.callbacks.remove(self._seen)

    def reset(self) -> None:
        self.seconds, self.freed = 0.0, 0

    def _seen(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began
            self.freed += info["collected"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--workers", default="1,2,1,2", help="the calls' worker counts, in turn")
    ns = p.parse_args()
    import aoff

    counts = [int(w) for w in ns.workers.split(",")]
    first = os.path.join(ns.folder, sorted(os.listdir(ns.folder))[0])
    aoff.read_scalars(first, tags=[TAG], workers=2)  # imports, starts the forkserver
    clock = CollectorClock()
    one = None
    print("| workers | wall s | caller CPU s | workers' CPU s | collector in the call | load |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for w in counts:
        clock.reset()
        (mine0, theirs0), t0 = participants_cpu(), time.perf_counter()
        df = aoff.read_scalars(ns.folder, tags=[TAG], workers=w)
        wall = time.perf_counter() - t0
        mine1, theirs1 = participants_cpu()
        if one is None:
            one = df
        elif not df.equals(one):
            raise SystemExit(f"workers={w} gave another table than the first call")
        print(
            f"| {w} | {wall:.2f} | {mine1 - mine0:.2f} | {theirs1 - theirs0:.2f} "
            f"| {clock.seconds:.2f} s, {clock.freed:,} objects | {os.getloadavg()[0]:.2f} |",
            flush=True,
        )
    clock.close()  # not called at the interpreter's teardown, its modules half gone


if __name__ == "__main__":
    main()
