"""Where the JSONL encoder's µs a row go, part by part, on the agent's own rows.

The JSONL stage (``_runfolder/lines/_jsonl._in_runs``) is the agent's largest; this times
its parts alone, as it does them, on the rows the agent folds from frames as the training
process sends them (the standard iteration; one 32-metric ``log_step``), in batches of
1,024 records and msgspec calls of 256 rows, by this thread's CPU, best of ``--rounds``,
with the agent's allocator thresholds and collector settings:

* spans: the walk of a batch for its tables' rows (``row_spans``);
* finite: the tables' floats checked at once (no search of the lines for ``null``);
* tolist: the columns made Python floats (and the iterations read from the records);
* structs: one msgspec struct a row;
* msgspec: ``encode_lines`` of 256 rows;
* free: the rows and their floats freed;
* join: the batch's pieces joined into one ``bytes``.

The sum is the encoder's work without its dispatch (``bench_agent_split.py
--jsonl-parts`` times the same parts inside the running agent, and the file's ``write``)::

    python benchmarks/bench_jsonl_parts.py [--iterations 3000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from operator import attrgetter
from typing import Any

from bench_agent_stages import SENDER_FRAME, SENDER_SLICE, _reader
from bench_columnar import BATCH, columnar, standard, wide

from aoff._agent._heap import keep_freed_memory
from aoff._agent._serve import GC_THRESHOLD
from aoff._core._columns import row_spans
from aoff._runfolder.lines import _jsonl
from aoff._transport._batches import pack_events

PARTS = ("spans", "finite", "tolist", "structs", "msgspec", "free", "join")
_iteration = attrgetter("iteration")


def rows_of(events: list[Any]) -> list[Any]:
    """The records the agent folds from ``events`` sent as the sync face sends them."""
    size, per = SENDER_SLICE, SENDER_FRAME
    pickles = [pack_events(events[k : k + size]) for k in range(0, len(events), size)]
    frames = [b"".join(pickles[k : k + per]) for k in range(0, len(pickles), per)]
    unpack = _reader()
    for f in frames:  # the templates, made from the first frames
        unpack(f)
    return columnar([e for f in frames for e in unpack(f)], 2048)


def one_pass(batches: list[list[Any]]) -> tuple[dict[str, float], bytes]:
    """Each part's CPU over every batch (``_in_runs``'s steps, timed one by one), and the
    lines made (the encoder's bytes: checked)."""
    import numpy as np

    clock = time.thread_time
    spent = dict.fromkeys(PARTS, 0.0)
    lines: list[bytes] = []
    for records in batches:
        out: list[bytes] = []
        t = clock()
        spans = list(row_spans(records))
        spent["spans"] += clock() - t
        for i, j, table, s in spans:
            row = None if table is None else _jsonl._row_types.get(table.tags)
            if table is None or row is None:
                out.append(_jsonl._per_record(records[i:j], records[i:j]))
                continue
            t = clock()
            finite = bool(np.isfinite(table.values[s : s + j - i]).all())
            finite = finite and bool(np.isfinite(table.wall_times[s : s + j - i]).all())
            spent["finite"] += clock() - t
            for a in range(i, j, _jsonl._ROWS_AT_ONCE):
                b = min(a + _jsonl._ROWS_AT_ONCE, j)
                t0 = clock()
                lo, hi = s + a - i, s + b - i
                steps, walls = table.steps[lo:hi].tolist(), table.wall_times[lo:hi].tolist()
                values = table.values[lo:hi].tolist()
                its = list(map(_iteration, records[a:b]))
                t1 = clock()
                rows = [
                    row(step, it, wall, *v)
                    for step, it, wall, v in zip(steps, its, walls, values, strict=True)
                ]
                t2 = clock()
                blob = _jsonl._encode_rows(rows)
                t3 = clock()
                del rows, values, steps, walls, its
                t4 = clock()
                out.append(blob if finite else b"")  # the workloads' floats are finite
                spent["tolist"] += t1 - t0
                spent["structs"] += t2 - t1
                spent["msgspec"] += t3 - t2
                spent["free"] += t4 - t3
        t = clock()
        lines.append(b"".join(out))
        spent["join"] += clock() - t
    return spent, b"".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    keep_freed_memory()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)
    print(f"load {os.getloadavg()[0]:.1f}; µs a row, best of {args.rounds}, n={args.iterations:,}")
    workloads = (("standard", standard), ("log_step_32", wide))
    for name, make in workloads:
        events = make(args.iterations)
        records = rows_of(events)
        batches = [records[k : k + BATCH] for k in range(0, len(records), BATCH)]
        want = b"".join(_jsonl.encode_lines(b) for b in batches)
        best = dict.fromkeys(PARTS, float("inf"))
        for _ in range(args.rounds):
            spent, got = one_pass(batches)
            assert got == want, "the parts do not make the encoder's lines"
            for k, v in spent.items():
                best[k] = min(best[k], v)
        cells = "  ".join(f"{k} {v / len(records) * 1e6:.2f}" for k, v in best.items())
        total = sum(best.values()) / len(records) * 1e6
        print(f"  {name:<12} {cells}  sum {total:.2f}")


if __name__ == "__main__":
    main()
