"""Where aoff's background CPU goes, per iteration of the shared workload.

aoff moves the logging work off the training loop's call path, but its pump thread still
needs the GIL for most of it; with GIL-bound training code (``slowdown.py``) that CPU is
time the loop loses. This prints each stage's cost, single-threaded, for one iteration
(4 events, 32 scalars) and for one dashboard frame:

* fold: ``Folder.apply`` of the 4 events (state update + the step's record)
* TensorBoard encode: ``encode_records`` (``Event`` wire format + TFRecord framing)
* JSONL encode: ``encode_lines``
* run summary: ``RunSummary.add`` (``aoff-summary.json``'s statistics, for ls/show)
* snapshot: ``State.snapshot()`` (once a frame)
* frame: CPU time (``time.thread_time``) to build ``dashboard_panel`` and render it to a
  terminal-like truecolor console writing to /dev/null: at 120x40 (the wide layout), at
  80x24 (the compact one), and through ``Dashboard.update`` (Rich ``Live``, as the pump
  draws it) at 120x40

Each stage is timed by this thread's CPU time (``time.thread_time``: other jobs on a
shared machine do not inflate it), best of ``--rounds`` rounds, with the agent's garbage
collector settings (start-up objects frozen, its first-generation threshold).

    python benchmarks/bench_pump_cost.py [--iterations 5000] [--frames 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import time

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
from rich.console import Console

from aoff._agent._serve import GC_THRESHOLD
from aoff._core import _events as ev
from aoff._core._fold import Folder
from aoff._core._state import State
from aoff._display._dashboard import Dashboard
from aoff._display._render import dashboard_panel
from aoff._runfolder.lines._jsonl import encode_lines
from aoff._runfolder.summary._writer import RunSummary
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import EventEncoder


def events(n: int) -> list[ev.Event]:
    out: list[ev.Event] = []
    for i in range(n):
        w = 1.7e9 + i * 0.01
        out += [
            (ev.COLLECTOR_TIMING, w, dict(TIMING)),
            (ev.DONE_RATES, w, TIMEOUT_RATE, TERMINATED_RATE),
            (ev.COLLECTOR, w, total_steps(i), BUFFER_SIZE, REWARD),
            (
                ev.STEP,
                w,
                i,
                dict(METRICS),
                REWARD,
                None,
                dict(COMPONENTS),
                TRAIN_TIME,
                WAIT_TIME,
                0.0,
                0.0,
                4096,
            ),
        ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=5000)
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3, help="best of this many rounds")
    args = ap.parse_args()
    n = args.iterations
    evs = events(n)
    gc.freeze()  # as the agent does once its backends opened
    gc.set_threshold(GC_THRESHOLD, 20, 20)
    cost: dict[str, list[float]] = {"fold": [], "tb": [], "jsonl": [], "summary": []}

    def timed(stage: str, t0: float) -> None:
        cost[stage].append((time.thread_time() - t0) / n * 1e6)

    for _ in range(max(args.rounds, 1)):
        state = State()
        folder = Folder(state)
        t = time.thread_time()
        records = [r for e in evs if (r := folder.apply(e)) is not None]
        timed("fold", t)

        t = time.thread_time()
        encode_records(EventEncoder(), records)
        timed("tb", t)

        t = time.thread_time()
        encode_lines(records)
        timed("jsonl", t)

        summary = RunSummary(os.path.join(os.devnull, "unused"))  # never written here
        t = time.thread_time()
        for k in range(0, len(records), 64):  # in batches, as the pump hands them over
            summary.add(records[k : k + 64])
        summary.fold()
        timed("summary", t)
    fold_us, tb_us, jsonl_us, summary_us = (min(cost[k]) for k in cost)

    state.started = True
    state.start_time = 1.7e9
    t = time.perf_counter()
    for _ in range(args.frames):
        state.snapshot()
    snap_us = (time.perf_counter() - t) / args.frames * 1e6

    devnull = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the whole run

    def terminal(width: int, height: int) -> Console:
        return Console(
            file=devnull, force_terminal=True, color_system="truecolor", width=width, height=height
        )

    def print_frames(console: Console) -> float:
        """CPU ms per frame: build the panel and render it to ``console``."""
        console.print(dashboard_panel(state, 1.7e9 + 60))  # warm-up (imports, caches)
        t = time.thread_time()
        for k in range(args.frames):
            console.print(dashboard_panel(state, 1.7e9 + 60 + k))
        return (time.thread_time() - t) / args.frames * 1e3

    def live_frames() -> float:
        """CPU ms per ``Dashboard.update``: build, render, and Live's cursor work."""
        dash = Dashboard(terminal(120, 40), live=True)
        dash.open(state, 1.7e9 + 60)
        dash.update(state, 1.7e9 + 60)  # warm-up
        t = time.thread_time()
        for k in range(args.frames):
            dash.update(state, 1.7e9 + 61 + k)
        cost = (time.thread_time() - t) / args.frames * 1e3
        dash.close(state, 1.7e9 + 61 + args.frames, summary=False)
        return cost

    frame_ms = print_frames(terminal(120, 40))
    small_ms = print_frames(terminal(80, 24))
    live_ms = live_frames()

    per_iter = fold_us + tb_us + jsonl_us + summary_us
    print(f"per iteration (4 events, 32 scalars), n={n:,}, best of {max(args.rounds, 1)}:")
    print(f"  fold                 {fold_us:8.1f} us")
    print(f"  TensorBoard encode   {tb_us:8.1f} us")
    print(f"  JSONL encode         {jsonl_us:8.1f} us")
    print(f"  run summary          {summary_us:8.1f} us")
    print(f"  total                {per_iter:8.1f} us")
    print(f"per dashboard frame (CPU), frames={args.frames}: snapshot {snap_us:.0f} us")
    print(f"  build + render, 120x40   {frame_ms:8.2f} ms")
    print(f"  build + render, 80x24    {small_ms:8.2f} ms")
    print(f"  Dashboard.update, 120x40 {live_ms:8.2f} ms")
    for it_ms in (1.0, 10.0):
        per_s = 1000 / it_ms
        share = (per_iter * per_s / 1e6) + 4 * (live_ms / 1e3 + snap_us / 1e6)
        print(
            f"GIL time per second at {it_ms:g} ms/iteration and 4 frames/s: "
            f"{share * 1000:.0f} ms ({share * 100:.1f} % of the loop's time)"
        )


if __name__ == "__main__":
    main()
