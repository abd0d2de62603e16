"""The agent's work on the standard workload, stage by stage, for a before/after.

``bench_agent_cpu.py`` reads the whole agent process's CPU in 10 ms ticks, and on a
loaded machine its figure moves by ±30 % from run to run; ``bench_columnar.py`` compares
the per-event and the columnar paths of one version. This one times what the agent does
with a slice of events, as it does it (the intake's runs of regular iterations), by this
thread's CPU time, best of ``--rounds``, with the agent's garbage collector settings:

* unpickle: frames of 128 iterations' events (``pack_events``) read back;
* read (``--sender``): frames as the training process sends them, slices of 32 events
  pickled one by one and joined 20 to a frame, read as the agent's backlog reads them
  (``_transport/_plainsteps``: a pickle of plain ``log_step`` events as one block of
  columns, where this version has it; its templates made in the first round);
* fold: the intake's loop, slices of 512 events (``--slice``: the running agent drains
  2,048 a slice while behind) (``Folder.apply_run``, else ``apply``; with ``--sender``,
  what "read" gave: blocks through ``Folder.apply_block``, the blocks of frames in a row
  within a slice joined where this version joins them);
* rules: the default rules (``Watch``) on each slice's records;
* summary: the run summary (``RunSummary.add``) on each slice's records, and its folds;
* TensorBoard, JSONL, CSV: each backend's encoder on batches of 1,024 records
  (``--batch``: the running agent's runners hand its backends smaller ones, as many
  records as came since their last write).

It imports only what every version since the run fold has, so the same file runs against
an older checkout's ``src`` for the before figure (``PYTHONPATH=<old>/src``)::

    python benchmarks/bench_agent_stages.py [--iterations 5000] [--rounds 5] [--batch 1024]
        [--sender] [--slice 512] [--out f.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_columnar import BATCH, SLICE, columnar, standard, wide

from aoff._agent._serve import GC_THRESHOLD
from aoff._core._rules import DEFAULT_RULES
from aoff._core._watch import Watch
from aoff._runfolder.lines import _csv
from aoff._runfolder.lines._jsonl import encode_lines
from aoff._runfolder.summary._writer import RunSummary
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import EventEncoder
from aoff._transport._batches import pack_events, unpack_events

FRAME = 128  # iterations a frame
SENDER_SLICE = 32  # events a pickle (the sync face's slice)
SENDER_FRAME = 20  # pickles a frame

try:  # the agent's reader of plain steps as columns, where this version has it
    from aoff._transport._plainsteps import PlainSteps
except ImportError:  # older versions: unpickled
    PlainSteps = None  # type: ignore[assignment,misc]


def _reader() -> Callable[[bytes], list[Any]]:
    return unpack_events if PlainSteps is None else PlainSteps().unpack


def _csv_text(records: list[Any]) -> str:
    cells = getattr(_csv, "batch_cells", None)  # older versions: a dict a record
    rows = cells(records) if cells else [_csv.record_cells(r) for r in records]
    columns = _csv.new_columns([], rows)
    return _csv.encode_rows(rows, columns)


def stages(
    events: list[Any],
    n: int,
    rounds: int,
    batch: int = BATCH,
    sender: bool = False,
    size: int = SLICE,
) -> dict[str, float]:
    """Best µs an iteration of each stage."""
    per = len(events) // n
    frames = [pack_events(events[k : k + FRAME * per]) for k in range(0, len(events), FRAME * per)]
    records = columnar(events)
    work: dict[str, Callable[[], object]] = {}
    if sender:
        pickles = [
            pack_events(events[k : k + SENDER_SLICE]) for k in range(0, len(events), SENDER_SLICE)
        ]
        sent = [
            b"".join(pickles[k : k + SENDER_FRAME]) for k in range(0, len(pickles), SENDER_FRAME)
        ]
        unpack = _reader()
        read = [e for f in sent for e in unpack(f)]
        records = columnar(read, size)
        work["read"] = lambda: [unpack(f) for f in sent]
        work["fold"] = lambda: columnar(read, size)
    slices = [records[k : k + size // per] for k in range(0, len(records), size // per)]
    batches = [records[k : k + batch] for k in range(0, len(records), batch)]

    def rules() -> None:
        watch = Watch(DEFAULT_RULES, clock=time.time, monotonic=time.monotonic)
        for s in slices:
            watch.see(s)

    def summary() -> None:
        s = RunSummary(os.path.join("/nonexistent", "aoff-summary.json"))  # never written
        for part in slices:
            s.add(part)
        s.fold()

    if not sender:
        work["unpickle"] = lambda: [unpack_events(f) for f in frames]
        work["fold"] = lambda: columnar(events, size)
    work |= {
        "rules": rules,
        "summary": summary,
        "tensorboard": lambda: [encode_records(EventEncoder(), b) for b in batches],
        "jsonl": lambda: [encode_lines(b) for b in batches],
        "csv": lambda: [_csv_text(b) for b in batches],
    }
    best = dict.fromkeys(work, float("inf"))
    for _ in range(rounds):
        for name, job in work.items():
            t = time.thread_time()
            job()
            best[name] = min(best[name], time.thread_time() - t)
    return {k: v / n * 1e6 for k, v in best.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=BATCH, help="records a backend's batch")
    ap.add_argument(
        "--slice",
        type=int,
        default=SLICE,
        help="events a fold's slice (the agent's intake: 2,048 while behind, flat out)",
    )
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument(
        "--sender", action="store_true", help="frames as sent, read as the agent's backlog does"
    )
    args = ap.parse_args()
    n = args.iterations
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)
    got = {
        "load": os.getloadavg()[0],
        "standard": stages(standard(n), n, args.rounds, args.batch, args.sender, args.slice),
        "log_step_32": stages(wide(n), n, args.rounds, args.batch, args.sender, args.slice),
    }
    print(
        f"load {got['load']:.1f}; µs an iteration, best of {args.rounds}, n={n:,},"
        f" batches of {args.batch:,}, slices of {args.slice:,} events"
    )
    for work in ("standard", "log_step_32"):
        row: dict[str, float] = got[work]  # type: ignore[assignment]
        cells = "  ".join(f"{k} {v:.2f}" for k, v in row.items())
        print(f"  {work:<12} {cells}  total {sum(row.values()):.2f}")
    if args.out is not None:
        args.out.write_text(json.dumps(got))


if __name__ == "__main__":
    main()
