"""The writers after the fold in their steady state: TensorBoard's bulk framing, the run
summary and the rules, on a 32-metric ``log_step``'s rows, for a before/after.

``bench_agent_stages.py`` times the summary over a 3,000-iteration run, most of whose
cost is its curves' first halvings (a run's first few thousand steps), and TensorBoard
on batches of 1,024; this one reads both as the running agent meets them after its
first seconds:

* TensorBoard: ``encode_records`` on batches of 1,024 and of 128 records (a runner's
  batch is what came since its last write);
* summary: ``RunSummary.add`` on slices of 128 records after 4,096 records folded (past
  the curves' first halvings), folds included, then the last fold;
* rules: the default rules (``Watch.see``) on slices of 1,024 records (each slice's walk
  of its rows included).

The rows are made as the agent makes them (``--sender`` of ``bench_agent_stages.py``:
pickles of 32 events, 20 a frame, read by the plain-steps reader, folded with their
blocks). Thread CPU time, best of ``--rounds``. It imports only what the branch point
of #54's writers round has, so it runs against an older ``src`` too
(``PYTHONPATH=<old>/src``)::

    python benchmarks/bench_writers.py [--iterations 12288] [--rounds 7]
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from typing import Any

from bench_columnar import columnar, wide

from aoff._agent._serve import GC_THRESHOLD
from aoff._core._rules import DEFAULT_RULES
from aoff._core._watch import Watch
from aoff._runfolder.summary._writer import RunSummary
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import EventEncoder
from aoff._transport._batches import pack_events
from aoff._transport._plainsteps import PlainSteps

WARM = 4096  # records folded into the summary before it is timed


def rows(n: int) -> list[Any]:
    """``n`` 32-metric steps' records, as the agent reads and folds them."""
    events = wide(n)
    pickles = [pack_events(events[k : k + 32]) for k in range(0, len(events), 32)]
    sent = [b"".join(pickles[k : k + 20]) for k in range(0, len(pickles), 20)]
    read = PlainSteps().unpack
    return columnar([e for frame in sent for e in read(frame)])


def best(job: Callable[[], object], rounds: int) -> float:
    out = float("inf")
    for _ in range(rounds):
        t = time.thread_time()
        job()
        out = min(out, time.thread_time() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=12288)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)
    records = rows(args.iterations)
    n = len(records)
    encoder = EventEncoder()
    got: dict[str, float] = {}
    for size in (1024, 128):
        batches = [records[k : k + size] for k in range(0, n, size)]
        took = best(lambda b=batches: [encode_records(encoder, x) for x in b], args.rounds)
        got[f"tensorboard_{size}"] = took / n * 1e6
    slices = [records[k : k + 128] for k in range(WARM, n, 128)]

    def summary() -> float:
        s = RunSummary(os.path.join("/nonexistent", "aoff-summary.json"))  # never written
        s.add(records[:WARM])
        s.fold()
        t = time.thread_time()
        for part in slices:
            s.add(part)
        s.fold()
        return time.thread_time() - t

    got["summary"] = min(summary() for _ in range(args.rounds)) / (n - WARM) * 1e6

    def rules() -> None:
        watch = Watch(DEFAULT_RULES, clock=time.time, monotonic=time.monotonic)
        for k in range(0, n, 1024):
            watch.see(records[k : k + 1024])

    got["rules"] = best(rules, args.rounds) / n * 1e6
    cells = "  ".join(f"{k} {v:.3f}" for k, v in got.items())
    print(f"load {os.getloadavg()[0]:.1f}; µs a 32-metric step, best of {args.rounds}: {cells}")


if __name__ == "__main__":
    main()
