"""The columnar paths against the per-event ones, stage by stage, side by side.

The agent folds a frame of events and encodes the records; this times each stage both
ways in one sitting, alternated round by round, by this thread's CPU time (best of
``--rounds``), with the agent's garbage collector settings:

* fold: ``Folder.apply`` event by event, against the intake's dispatch (runs of regular
  iterations through ``Folder.apply_run``, ``_core/_fold_columns``), in slices of 512
  events as the pump drains them;
* TensorBoard: ``_per_record`` (one ``Event`` packed a record) against
  ``encode_records`` (column runs framed in bulk, ``_runfolder/tensorboard/_columns``), batches of
  1,024 records as the runner writes them;
* JSONL and the run summary (unchanged; for the total).

Two workloads: the standard iteration (4 calls, 32 scalars) and one ``log_step`` with 32
metrics (the record has the seed's tail too). Ratios are the figure to read: the
machine is shared.

    python benchmarks/bench_columnar.py [--iterations 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import time
from collections.abc import Callable

from _workload import (
    BUFFER_SIZE,
    COMPONENTS,
    METRICS,
    REWARD,
    TERMINATED_RATE,
    TIMEOUT_RATE,
    TIMING,
    TRAIN_TIME,
    WAIT_TIME,
    total_steps,
)

from aoff._agent._serve import GC_THRESHOLD
from aoff._core import _events as ev
from aoff._core._fold import Folder
from aoff._core._records import StepRecord
from aoff._core._state import State
from aoff._runfolder.lines._jsonl import encode_lines
from aoff._runfolder.summary._writer import RunSummary
from aoff._runfolder.tensorboard._encode import _per_record, encode_records
from aoff._runfolder.tensorboard._events import EventEncoder

STEP_TAIL = (TRAIN_TIME, WAIT_TIME, 0.0, 0.0, 4096)
SLICE = 512
BATCH = 1024
RUN_KINDS = frozenset((ev.STEP, ev.COLLECTOR_TIMING, ev.COLLECTOR, ev.DONE_RATES))


def standard(n: int) -> list[ev.Event]:
    out: list[ev.Event] = []
    for i in range(n):
        w = 1.7e9 + i * 0.01
        out += [
            (ev.COLLECTOR_TIMING, w, dict(TIMING)),
            (ev.DONE_RATES, w, TIMEOUT_RATE, TERMINATED_RATE),
            (ev.COLLECTOR, w, total_steps(i), BUFFER_SIZE, REWARD),
            (ev.STEP, w, i, dict(METRICS), REWARD, None, dict(COMPONENTS), *STEP_TAIL),
        ]
    return out


def wide(n: int) -> list[ev.Event]:
    """``log_step(i, {32 metrics})`` alone."""
    metrics = {f"train/metric_{k}": 0.5 + k for k in range(32)}
    return [
        (ev.STEP, 1.7e9 + i * 0.01, i, dict(metrics), None, None, None, 0.0, 0.0, 0.0, 0.0, None)
        for i in range(n)
    ]


def per_event(events: list[ev.Event]) -> list[StepRecord]:
    folder = Folder(State())
    out: list[StepRecord] = []
    for k in range(0, len(events), SLICE):
        out += [r for e in events[k : k + SLICE] if (r := folder.apply(e)) is not None]
    return out


#: a block of plain steps (a group's, or the agent's plain-steps reader's) and the markers
#: of the steps it holds, where this version has them (this file runs against older ones)
_BLOCK, _MARKER = getattr(ev, "STEP_BLOCK", None), getattr(ev, "FOLDED", None)
#: pickles of regular iterations read as columns, where this version has them
_RUN_BLOCK = getattr(ev, "RUN_BLOCK", None)
_MARKERS = (_MARKER,)
#: whether this version's intake passes a block's markers over at once (with run blocks)
_SKIPS = _RUN_BLOCK is not None
try:  # blocks in a row joined into one, where this version's intake does it
    from aoff._core._blockjoin import join_blocks
except ImportError:
    join_blocks = None  # type: ignore[assignment]


def columnar(events: list[ev.Event], size: int = SLICE) -> list[StepRecord]:
    """The intake's loop (``_pump/_intake.Intake.fold``) over slices of ``size`` events:
    runs of regular iterations at once, a block of steps at once (with the blocks in a row
    after it, where this version joins them), its markers passed over."""
    folder = Folder(State())
    out: list[StepRecord] = []
    for k in range(0, len(events), size):
        part = events[k : k + size]
        i = run_at = 0
        while i < len(part):
            kind = part[i][0]
            if kind == _MARKER:
                i += 1
                continue
            if kind in (_BLOCK, _RUN_BLOCK):
                e, last = (part[i], i) if join_blocks is None else join_blocks(part, i)
                fold = folder.apply_block if kind == _BLOCK else folder.apply_runblock
                out += fold(e)
                i = last + 1
                e = part[last]
                if _SKIPS:  # its markers at once, as the intake does
                    end = min(i + (len(e[2]) if kind == _BLOCK else e[2].calls) - 1, len(part))
                    if end > i and part[i:end].count(_MARKERS) == end - i:
                        i = end
                continue
            if i >= run_at and kind in RUN_KINDS:
                got, end, run_at = folder.apply_run(part, i)
                if got:
                    out += got
                    i = end
                    continue
            rec = folder.apply(part[i])
            if rec is not None:
                out.append(rec)
            i += 1
    return out


def batches(records: list[StepRecord], encode: Callable[[list[StepRecord]], object]) -> None:
    for k in range(0, len(records), BATCH):
        encode(records[k : k + BATCH])


def _per_event_tb(enc: EventEncoder, records: list[StepRecord]) -> bytes:
    return _per_record(enc, records, records)


def summary(records: list[StepRecord]) -> None:
    s = RunSummary(os.path.join(os.devnull, "unused"))  # never written here
    for k in range(0, len(records), 64):
        s.add(records[k : k + 64])
    s.fold()


def stages(events: list[ev.Event], n: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Best µs an iteration of each stage, (per event, columnar)."""
    cost: dict[str, list[list[float]]] = {k: [[], []] for k in ("fold", "tb", "jsonl", "summary")}
    for _ in range(rounds):
        got: list[list[StepRecord]] = []
        for side, fold in enumerate((per_event, columnar)):
            t = time.thread_time()
            records = fold(events)
            cost["fold"][side].append(time.thread_time() - t)
            got.append(records)
            tb = functools.partial(_per_event_tb if side == 0 else encode_records, EventEncoder())
            t = time.thread_time()
            batches(records, tb)
            cost["tb"][side].append(time.thread_time() - t)
            t = time.thread_time()
            batches(records, encode_lines)
            cost["jsonl"][side].append(time.thread_time() - t)
            t = time.thread_time()
            summary(records)
            cost["summary"][side].append(time.thread_time() - t)
        assert got[0] == got[1], "the run fold's records differ from the per-event fold's"
    return {k: (min(v[0]) / n * 1e6, min(v[1]) / n * 1e6) for k, v in cost.items()}


def show(title: str, got: dict[str, tuple[float, float]]) -> None:
    print(title)
    print(f"  {'stage':<12} {'per event':>10} {'columnar':>10} {'ratio':>7}")
    total = [0.0, 0.0]
    for stage, (a, b) in got.items():
        total[0] += a
        total[1] += b
        print(f"  {stage:<12} {a:9.2f}  {b:9.2f}  {b / a:6.2f}")
    print(f"  {'total':<12} {total[0]:9.2f}  {total[1]:9.2f}  {total[1] / total[0]:6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    n = args.iterations
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)
    print(f"load {os.getloadavg()[0]:.1f}; µs an iteration, best of {args.rounds}, n={n:,}")
    show("standard iteration (4 calls, 32 scalars):", stages(standard(n), n, args.rounds))
    show("one log_step of 32 metrics:", stages(wide(n), n, args.rounds))


if __name__ == "__main__":
    main()
