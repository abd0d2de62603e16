"""``aoff show RUN_DIR`` and ``aoff ls RUNS_DIR``: look at runs without TensorBoard.

After a run, the quickest questions are "how far did it get, and did the reward go up?".
``show`` answers them in the terminal from what the run left (read by :mod:`aoff._cli._runs`:
the run summary, else ``metrics.jsonl``, else the event files): a summary panel and one
row per tag with its first, last, min and max values and a sparkline of the curve, laid
out to fit the width without wrapping a tag. ``ls`` prints one line per run below a
folder. A long read of event files shows a progress bar on a terminal.

Both only read files; ``ls`` also knocks on each run's socket (see :mod:`aoff._channel`):
``live`` when a run answers, ``not live (stale socket)`` when the socket was left by a
run that was killed, ``finished`` (or ``stopped at N of M``) when there is none.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from .._channel._paths import live_status
from .._display._format import fmt_duration, fmt_number
from ._runs import (
    JSONL_NAME,
    SUMMARY_NAME,
    TB_PATTERN,
    RunData,
    TagStats,
    find_runs,
    read_run,
    scan_bytes,
)

__all__ = ["add_ls_arguments", "add_show_arguments", "run_ls", "run_show", "sparkline"]

UNICODE_BARS = "▁▂▃▄▅▆▇█"
ASCII_BARS = "_.-:=+*#"
SPARK_WIDTH = 24
REWARD_TAG = "reward/mean"
#: event files to read before a progress bar is worth showing (~0.1 s of reading)
PROGRESS_MIN_BYTES = 16 << 20


def bars_for(console: Console) -> str:
    """The block characters if the console's encoding can show them, else ASCII ones."""
    try:
        UNICODE_BARS.encode(console.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ASCII_BARS
    return UNICODE_BARS


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH, bars: str = UNICODE_BARS) -> str:
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


def _source(data: RunData) -> str:
    if data.kind == "summary":
        return f"{SUMMARY_NAME} ({data.records:,} records)"
    src = JSONL_NAME if data.kind == "jsonl" else "TensorBoard files"
    return f"{src} ({data.records:,} records)"


def stopped_early(data: RunData) -> str | None:
    """``stopped at N of M`` for a run that ended before its ``max_iterations``."""
    if data.state not in ("finished", "interrupted") or not data.max_iterations:
        return None
    it = data.iterations or 0
    if data.state == "interrupted" or it < data.max_iterations:
        return f"stopped at {it:,} of {data.max_iterations:,}"
    return None


def summary(data: RunData) -> Panel:
    """The run's summary panel: what the files say about it, and any reading problem."""
    iterations = "--" if data.iterations is None else f"{data.iterations:,}"
    if data.max_iterations:
        iterations += f" of {data.max_iterations:,}"
    lines = [
        Text.assemble("  Source: ", (_source(data), "cyan")),
        Text.assemble("  Total env steps: ", (_steps(data), "yellow")),
        Text.assemble("  Iterations: ", (iterations, "yellow")),
        Text.assemble("  Wall time (first to last record): ", (_wall(data), "yellow")),
    ]
    state = stopped_early(data) or data.state
    if state is not None:
        lines.append(Text.assemble("  State: ", (state, "yellow")))
    if REWARD_TAG in data.tags:
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


_COLUMNS = ("first", "last", "min", "max")
_DROP_ORDER = ("first", "min")  # when the width runs short: these go first
MIN_SPARK = 8
MIN_TAG = 16


def _cells(t: TagStats) -> dict[str, str]:
    return {"first": _fmt(t.first), "last": _fmt(t.last), "min": _fmt(t.lo), "max": _fmt(t.hi)}


def table_layout(
    width: int, tag_width: int, number_widths: dict[str, int]
) -> tuple[list[str], int, int]:
    """Which number columns, how wide a sparkline and tag column fit in ``width``.

    The sparkline shrinks first (to ``MIN_SPARK``), then ``first`` and ``min`` go, then the
    sparkline; a tag column that still does not fit is cut in the middle (never wrapped).
    Returns ``(columns, spark_width, tag_width)``; columns are two spaces apart."""
    cols = list(_COLUMNS)
    spark = SPARK_WIDTH

    def total() -> int:
        return tag_width + sum(number_widths[c] + 2 for c in cols) + (spark + 2 if spark else 0)

    while total() > width:
        over = total() - width
        if spark > MIN_SPARK:
            spark = max(MIN_SPARK, spark - over)
        elif any(c in cols for c in _DROP_ORDER):
            cols.remove(next(c for c in _DROP_ORDER if c in cols))
        elif spark:
            spark = 0
        else:
            tag_width = max(MIN_TAG, tag_width - over)
            break
    return cols, spark, tag_width


def _fit_tag(tag: str, width: int, ellipsis: str) -> str:
    if len(tag) <= width:
        return tag
    keep = width - len(ellipsis)
    head = keep // 2
    return tag[:head] + ellipsis + tag[len(tag) - (keep - head) :]


def tag_table(data: RunData, bars: str, width: int = 80) -> Text:
    """One line per tag: first, last, min, max (finite values) and a sparkline, laid out
    to fit ``width`` columns without wrapping (see :func:`table_layout`)."""
    rows = [(tag, _cells(t), t.curve) for tag, t in data.tags.items() if t.count]
    number_widths = {c: max([len(c)] + [len(r[1][c]) for r in rows]) for c in _COLUMNS}
    tag_w = max([3] + [len(r[0]) for r in rows])
    cols, spark, tag_w = table_layout(width, tag_w, number_widths)
    ellipsis = "…" if bars is UNICODE_BARS else "~"
    header = Text("tag".ljust(tag_w), style="bold")
    for c in cols:
        header.append("  " + c.rjust(number_widths[c]), style="bold")
    if spark:
        header.append("  curve", style="bold")
    lines = [header]
    for tag, cells, curve in rows:
        line = Text(_fit_tag(tag, tag_w, ellipsis).ljust(tag_w))
        for c in cols:
            line.append("  " + cells[c].rjust(number_widths[c]))
        if spark:
            line.append("  " + sparkline(curve, spark, bars), style="cyan")
        lines.append(line)
    out = Text("\n").join(lines)
    out.no_wrap = True
    out.overflow = "crop"
    return out


def _no_run(path: str, err: TextIO, cmd: str) -> int:
    print(
        f"aoff {cmd}: no {SUMMARY_NAME}, {JSONL_NAME} or {TB_PATTERN} in {path!r}: "
        "not a run folder",
        file=err,
    )
    return 1


@contextlib.contextmanager
def _progress(err: TextIO, total: int, what: str) -> Iterator[Callable[[int], None] | None]:
    """A Rich progress bar on ``err`` while ``total`` bytes of event files are read, when
    ``err`` is a terminal and the read is long enough to wait for; else nothing."""
    console = Console(file=err)
    if total < PROGRESS_MIN_BYTES or not console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(what, total=total)
        yield lambda n: progress.advance(task, n)


def run_show(path: str, console: Console, err: TextIO, *, width: int | None = None) -> int:
    """Print ``path``'s summary and tag table. Returns the exit status.

    ``width``: columns to fit (default: the terminal's, or ``COLUMNS``/80 when piped)."""
    if not os.path.isdir(path):
        print(f"aoff show: {path!r} is not a folder", file=err)
        return 1
    if width is not None:
        console.width = width
    live = bool(live_status(path) == "live")
    try:
        with _progress(err, scan_bytes(path, live=live), "reading event files") as progress:
            data = read_run(path, live=live, progress=progress)
    except OSError as exc:
        print(f"aoff show: cannot read {path!r}: {exc.strerror or exc}", file=err)
        return 1
    if data is None:
        return _no_run(path, err, "show")
    console.print(summary(data))
    if data.tags:
        console.print(tag_table(data, bars_for(console), console.width), crop=True)
    else:
        console.print(f"No scalar records could be read from {data.source}.")
    for note in data.notes:
        print(f"aoff show: {note}", file=err)
    return 0


def _status(data: RunData, live: str | None) -> str:
    status = live or stopped_early(data) or "finished"
    return status + (" (damaged file: see aoff show)" if data.notes else "")


def run_ls(root: str, out: TextIO, err: TextIO) -> int:
    """Print one line per run folder below ``root``. Returns the exit status.

    A folder that cannot be read is skipped with one line on ``err``."""
    if not os.path.isdir(root):
        print(f"aoff ls: {root!r} is not a folder", file=err)
        return 1
    skipped: list[str] = []
    runs = find_runs(root, skipped)
    for line in skipped:
        print(f"aoff ls: skipped {line}", file=err)
    if not runs:
        print(
            f"aoff ls: no run folders (with {SUMMARY_NAME}, {JSONL_NAME} or {TB_PATTERN}) "
            f"in {root!r}",
            file=err,
        )
        return 1
    lives = {path: live_status(path) for path in runs}
    total = sum(_size(path, lives[path] == "live") for path in runs)
    rows = [("run", "steps", "last reward", "wall time", "status")]
    with _progress(err, total, "reading event files") as progress:
        for path in runs:
            name = os.path.relpath(path, root)
            live = lives[path]
            try:
                data = read_run(path, live=live == "live", progress=progress, ends=True)
            except OSError as exc:
                print(f"aoff ls: skipped {name}: {exc.strerror or exc}", file=err)
                continue
            if data is None:
                if not live:  # removed while we looked
                    continue
                rows.append((name, "--", "--", "--", live))
                continue
            rows.append(
                (name, _steps(data), _fmt(data.last(REWARD_TAG)), _wall(data), _status(data, live))
            )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print(
            f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  "
            f"{r[3]:>{widths[3]}}  {r[4]}".rstrip(),
            file=out,
        )
    return 0


def _size(path: str, live: bool) -> int:
    try:
        return scan_bytes(path, live=live, ends=True)
    except OSError:
        return 0


def add_show_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help=f"a run folder ({SUMMARY_NAME}, {JSONL_NAME} or event files)",
    )
    p.add_argument(
        "--width",
        type=int,
        default=None,
        help="columns to fit the table in (default: the terminal's width; COLUMNS or 80 "
        "when piped)",
    )


def add_ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs_dir", metavar="RUNS_DIR", help="a folder of run folders (e.g. runs)")
