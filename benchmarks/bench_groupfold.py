"""A run group's split and fold, the steps one event a run against one block a run.

The group's agent turns each drained slice of group ``log_step`` items into each run's
events and folds them (``_pump/_grouppump.py``). This times that stage alone, both ways
in one sitting, alternated round by round, by this process's CPU time a run-step (one
step of one run):

* ``events``: ``split_item`` (one ``STEP`` event a run and call, a dict a step and run),
  then each run's intake dispatch (runs of regular iterations through
  ``Folder.apply_run``, which reads the dicts back as columns);
* ``blocks``: ``split_items`` (plain steps in a row: one ``STEP_BLOCK`` a run, its
  steps as arrays), then ``Folder.apply_block`` (``RunFold.take_block``).

What the records cost after the fold (the backends' encoding and writing, the summary,
the rules) is the same both ways and not here; ``bench_group.py --pace`` measures the
whole agent. Run: ``python benchmarks/bench_groupfold.py --runs 8 --keys 32 --slice 20``
(a 1 kHz loop's slice: the splitter's 20 ms tick).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

from aoff._core import _events as ev
from aoff._core import _groupbatch as gb
from aoff._core._fold import Folder
from aoff._core._state import State


def _fold(folders: list[Folder], per_run: list[list[Any]]) -> None:
    """Each run's events as the pump's intake dispatches them (``Intake.fold``)."""
    for folder, events in zip(folders, per_run, strict=True):
        i, run_at = 0, 0
        while i < len(events):
            e = events[i]
            if e[0] == ev.STEP_BLOCK:
                folder.apply_block(e)
                i += 1
                continue
            if i >= run_at and e[0] == ev.STEP:
                got, end, run_at = folder.apply_run(events, i)
                if got:
                    i = end
                    continue
            folder.apply(e)
            i += 1


def _one(items: list[Any], runs: int, size: int, blocks: bool) -> float:
    folders = [Folder(State()) for _ in range(runs)]
    t = time.process_time()
    for s in range(0, len(items), size):
        chunk = items[s : s + size]
        if blocks:
            per_run = gb.split_items(chunk, runs)
        else:
            per_run = [[] for _ in range(runs)]
            for item in chunk:
                for events, event in zip(per_run, gb.split_item(item, runs), strict=True):
                    events.append(event)
        _fold(folders, per_run)
    return (time.process_time() - t) / len(items) / runs * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=8)
    p.add_argument("--keys", type=int, default=32)
    p.add_argument("--slice", type=int, default=20, help="group steps a drained slice")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    m = {f"m{j}": rng.standard_normal(a.runs).astype(np.float32) for j in range(a.keys)}
    items = [gb.take_batch(a.runs, 1.7e9 + i, i, m, None) for i in range(a.steps)]
    print(f"load (uptime): {os.getloadavg()}; {a.runs} runs, {a.keys} keys, slices of {a.slice}")
    print("round  events us/run-step  blocks us/run-step  ratio")
    for r in range(a.rounds):
        before = _one(items, a.runs, a.slice, False)
        after = _one(items, a.runs, a.slice, True)
        print(f"{r:5d}  {before:18.2f}  {after:18.2f}  {after / before:5.2f}")


if __name__ == "__main__":
    main()
