"""``aoff show RUN_DIR`` and ``aoff ls RUNS_DIR``: look at finished runs without TensorBoard.

After a run, the quickest questions are "how far did it get, and did the reward go up?".
``show`` answers them in the terminal from the files the run left (read by
:mod:`aoff._cli._runs`): a summary panel and one row per tag with its first, last, min and max
values and a sparkline of the curve. ``ls`` prints one line per run below a folder.

Both only read files; ``ls`` also knocks on each run's socket (see :mod:`aoff._channel`):
``live`` when a run answers, ``not live (stale socket)`` when the socket was left by a
run that was killed, ``finished`` when there is none.
"""

from __future__ import annotations

import argparse
import math
import os
from typing import TextIO

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._channel._paths import live_status
from .._display._format import fmt_duration, fmt_number
from ._runs import JSONL_NAME, TB_PATTERN, RunData, find_runs, read_run

__all__ = ["add_ls_arguments", "add_show_arguments", "run_ls", "run_show", "sparkline"]

UNICODE_BARS = "▁▂▃▄▅▆▇█"
ASCII_BARS = "_.-:=+*#"
SPARK_WIDTH = 24
REWARD_TAG = "reward/mean"


def bars_for(console: Console) -> str:
    """The block characters if the console's encoding can show them, else ASCII ones."""
    try:
        UNICODE_BARS.encode(console.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ASCII_BARS
    return UNICODE_BARS


def sparkline(values: list[float], width: int = SPARK_WIDTH, bars: str = UNICODE_BARS) -> str:
    """``values`` squeezed into ``width`` characters (each the mean of its bucket).

    Non-finite values are left out of the means; a bucket with none left shows ``!``
    (a NaN or infinity in a curve must stay visible). A flat curve sits mid-height.
    """
    if not values:
        return ""
    n = min(width, len(values))
    buckets: list[float | None] = []
    for b in range(n):
        chunk = values[b * len(values) // n : (b + 1) * len(values) // n]
        finite = [v for v in chunk if math.isfinite(v)]
        buckets.append(sum(finite) / len(finite) if finite else None)
    known = [v for v in buckets if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    top = len(bars) - 1
    out: list[str] = []
    for v in buckets:
        if v is None:
            out.append("!")
        elif hi - lo <= 0 or not math.isfinite(hi - lo):
            out.append(bars[top // 2])
        else:
            out.append(bars[min(top, int((v - lo) / (hi - lo) * top + 0.5))])
    return "".join(out)


def _fmt(v: float | None) -> str:
    return "--" if v is None else fmt_number(v)


def _steps(data: RunData) -> str:
    return "--" if data.steps is None else f"{data.steps:,}"


def _wall(data: RunData) -> str:
    w = data.wall_time
    return "--" if w is None else fmt_duration(w)


def summary(data: RunData) -> Panel:
    """The run's summary panel: what the files say about it, and any reading problem."""
    src = JSONL_NAME if data.kind == "jsonl" else "TensorBoard files"
    lines = [
        Text.assemble("  Source: ", (f"{src} ({data.records:,} records)", "cyan")),
        Text.assemble("  Total env steps: ", (_steps(data), "yellow")),
        Text.assemble(
            "  Iterations: ",
            ("--" if data.iterations is None else str(data.iterations), "yellow"),
        ),
        Text.assemble("  Wall time (first to last record): ", (_wall(data), "yellow")),
    ]
    if REWARD_TAG in data.curves:
        lines.append(
            Text.assemble(
                f"  {REWARD_TAG}: last ",
                (_fmt(data.last(REWARD_TAG)), "yellow"),
                ", best ",
                (_fmt(data.best(REWARD_TAG)), "yellow"),
            )
        )
    if data.notes:
        lines.append(Text("  Some records could not be read: see the note(s) below", "yellow"))
    return Panel(
        Text("\n").join(lines),
        title=Text(f"Run {os.path.basename(os.path.abspath(data.path))}", style="bold"),
        border_style="yellow" if data.notes else "green",
    )


def tag_table(data: RunData, bars: str) -> Table:
    """One row per tag: first, last, min, max (finite values) and a sparkline."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("tag", overflow="fold")
    for name in ("first", "last", "min", "max"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("curve", no_wrap=True, min_width=SPARK_WIDTH)
    for tag, values in data.curves.items():
        if not values:
            continue
        finite = [v for v in values if math.isfinite(v)]
        table.add_row(
            tag,
            _fmt(values[0]),
            _fmt(values[-1]),
            _fmt(min(finite) if finite else None),
            _fmt(max(finite) if finite else None),
            sparkline(values, bars=bars),
        )
    return table


def _no_run(path: str, err: TextIO, cmd: str) -> int:
    print(f"aoff {cmd}: no {JSONL_NAME} or {TB_PATTERN} in {path!r}: not a run folder", file=err)
    return 1


def run_show(path: str, console: Console, err: TextIO) -> int:
    """Print ``path``'s summary and tag table. Returns the exit status."""
    if not os.path.isdir(path):
        print(f"aoff show: {path!r} is not a folder", file=err)
        return 1
    data = read_run(path)
    if data is None:
        return _no_run(path, err, "show")
    console.print(summary(data))
    if data.curves:
        table = tag_table(data, bars_for(console))
        if not console.is_terminal:  # a pipe or file has no width: never fold a tag name
            tag_width = max(len(tag) for tag in data.curves)
            console.width = max(console.width, tag_width + 4 * 9 + SPARK_WIDTH + 10)
        console.print(table)
    else:
        console.print(f"No scalar records could be read from {data.source}.")
    for note in data.notes:
        print(f"aoff show: {note}", file=err)
    return 0


def run_ls(root: str, out: TextIO, err: TextIO) -> int:
    """Print one line per run folder below ``root``. Returns the exit status."""
    if not os.path.isdir(root):
        print(f"aoff ls: {root!r} is not a folder", file=err)
        return 1
    runs = find_runs(root)
    if not runs:
        print(f"aoff ls: no run folders (with {JSONL_NAME} or {TB_PATTERN}) in {root!r}", file=err)
        return 1
    rows = [("run", "steps", "last reward", "wall time", "status")]
    for path in runs:
        name = os.path.relpath(path, root)
        live = live_status(path)
        data = read_run(path)
        if data is None:
            if not live:  # removed while we looked
                continue
            rows.append((name, "--", "--", "--", live))
            continue
        status = (live or "finished") + (" (damaged file: see aoff show)" if data.notes else "")
        rows.append((name, _steps(data), _fmt(data.last(REWARD_TAG)), _wall(data), status))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print(
            f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  "
            f"{r[3]:>{widths[3]}}  {r[4]}".rstrip(),
            file=out,
        )
    return 0


def add_show_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help=f"a run folder ({JSONL_NAME} or event files)")


def add_ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs_dir", metavar="RUNS_DIR", help="a folder of run folders (e.g. runs)")
