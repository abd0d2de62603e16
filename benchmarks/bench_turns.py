"""Thread mode's turns for the GIL: how long each piece of aoff's work is between pauses.

With ``pump="thread"`` a pure-Python training loop waits for whatever aoff's threads do
between two releases of the GIL (``src/aoff/_pump/_turns.py``). This measures those
pieces single-threaded, with the pauses on (as while a ``PumpThread`` runs) and each
pause's sleep replaced by a note of the thread's CPU clock (``time.thread_time_ns``):

* a dashboard frame (``Dashboard.update`` through Rich ``Live``, as the pump draws it)
  at 80x24 (compact layout), 120x40 and 200x60 (wide), the workload's state;
* a 1,024-record batch's TensorBoard and JSONL encoding (the runner's largest batch);
* one fold slice: ``TURN_SLICE`` and ``FOLD_SLICE`` events of the workload.

For each: how many pieces, the median and the longest piece, and the whole. Inside a
training loop that shares the core the same pieces take 2-3x longer (``slowdown.py``
is the side-by-side measure of what the loop waits).

    python benchmarks/bench_turns.py [--frames 50]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
import types

from bench_pump_cost import events
from rich.console import Console

from aoff._core._fold import Folder
from aoff._core._state import State
from aoff._display._dashboard import Dashboard
from aoff._pump import _turns
from aoff._pump._intake import FOLD_SLICE, TURN_SLICE
from aoff._runfolder.lines._jsonl import encode_lines
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import EventEncoder

_stamps: list[int] = []


def _pieces(job: types.FunctionType | object) -> list[int]:
    """CPU ns of each piece of ``job()`` between pauses (the first and last included)."""
    _stamps.clear()
    t0 = time.thread_time_ns()
    job()  # type: ignore[operator]
    t1 = time.thread_time_ns()
    marks = [t0, *_stamps, t1]
    return [b - a for a, b in itertools.pairwise(marks)]


def _line(name: str, runs: list[list[int]]) -> None:
    """Pieces a run, and over all pieces of all runs: median, 90th percentile, longest (a
    garbage collection can land in any piece: the longest is often one)."""
    count = statistics.median(len(r) for r in runs)
    every = sorted(p for r in runs for p in r)
    med, p90, longest = (every[int(len(every) * q)] / 1e3 for q in (0.5, 0.9, 0.9999))
    whole = statistics.median(sum(r) for r in runs) / 1e3
    print(
        f"  {name:<34} {count:4.0f} pieces   median {med:6.0f} us   p90 {p90:6.0f} us"
        f"   longest {longest:6.0f} us   whole {whole:7.0f} us"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=50)
    args = ap.parse_args()
    _turns.time = types.SimpleNamespace(sleep=lambda _s: _stamps.append(time.thread_time_ns()))  # type: ignore[assignment]

    evs = events(2000)
    state = State()
    folder = Folder(state)
    records = [r for e in evs if (r := folder.apply(e)) is not None]
    state.started = True
    state.start_time = 1.7e9

    devnull = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the whole run
    with _turns.sharing():
        print(f"pieces between GIL pauses (CPU, single-threaded; {args.frames} frames a size):")
        for width, height in ((80, 24), (120, 40), (200, 60)):
            console = Console(
                file=devnull,
                force_terminal=True,
                color_system="truecolor",
                width=width,
                height=height,
            )
            dash = Dashboard(console, live=True, pacing=_turns.bounded)  # as the pump builds it
            dash.open(state, 1.7e9 + 60)
            for _ in range(3):  # warm-up (imports, caches)
                dash.update(state, 1.7e9 + 60)
            runs = [
                _pieces(lambda d=dash, k=k: d.update(state, 1.7e9 + 61 + k))
                for k in range(args.frames)
            ]
            dash.close(state, 1.7e9 + 99, summary=False)
            _line(f"dashboard frame {width}x{height}", runs)

        batch = records[:1024]
        encoder = EventEncoder()
        pieces = _turns.in_pieces  # the pacing the pump hands the backends
        tb = [_pieces(lambda: encode_records(encoder, batch, pieces)) for _ in range(5)]
        _line("TensorBoard encode, 1,024 records", tb)
        _line(
            "JSONL encode, 1,024 records",
            [_pieces(lambda: encode_lines(batch, pieces)) for _ in range(5)],
        )

        for size in (TURN_SLICE, FOLD_SLICE):
            fold_runs = []
            for k in range(0, len(evs) - size, size):
                chunk = evs[k : k + size]
                fold_runs.append(_pieces(lambda c=chunk: [folder.apply(e) for e in c]))
            _line(f"fold slice of {size} events", fold_runs)


if __name__ == "__main__":
    main()
