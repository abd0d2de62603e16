"""``aoff show RUN_DIR`` and ``aoff ls RUNS_DIR``: look at runs without TensorBoard.

After a run, the quickest questions are "how far did it get, and did the reward go up?".
``show`` answers them in the terminal from what the run left (read by
:mod:`aoff._runfolder.reading._runs`:
the run summary, else ``metrics.jsonl``, else the event files): a summary panel and one
row per tag with its first, last, min and max values and a sparkline of the curve, laid
out to fit the width without wrapping a tag. ``ls`` prints one line per run below a
folder. A long read of event files shows a progress bar on a terminal.

Both only read files; ``ls`` also knocks on each run's socket (see :mod:`aoff._channel`):
``live`` when a run answers, ``not live (stale socket)`` when the socket was left by a
run that was killed, ``finished`` (or ``stopped at N of M``) when there is none.

This module is the two commands' flow and the summary panel; the tag table and its
sparklines are ``_tagtable``'s, the progress bar ``_progress``'s.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TextIO

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from .._channel._paths import has_live_files, live_status
from .._display._format import fmt_duration
from .._runfolder.reading._axiscols import axes_of
from .._runfolder.reading._formats import formats, labels
from .._runfolder.reading._rundata import REWARD_TAG, RunData
from .._runfolder.reading._runfind import find_runs, runs_in
from .._runfolder.reading._runs import read_run, scan_bytes
from ._folder import not_a_folder
from ._numbers import number
from ._progress import reading_progress
from ._runjson import ls_row, show_json
from ._tagtable import bars_for, fmt_value, tag_table
from ._whereopt import add_where_argument

__all__ = ["MIN_WIDTH", "add_ls_arguments", "add_show_arguments", "run_ls", "run_show"]

#: the widest --width (a wider one only pads lines with spaces)
MAX_WIDTH = 1000
#: the narrowest --width: the summary panel and a tag with one number fit without wrapping
MIN_WIDTH = 20


def _steps(data: RunData) -> str:
    return "--" if data.steps is None else f"{data.steps:,}"


def _steps_label(data: RunData) -> str:
    """``Total env steps`` when the run logged env steps, else ``Last step``: the
    original logger's records step by env steps once ``log_collector`` gave them, by
    the iteration before (both axes are tags; they differ only in the first case), and a
    writer's by its ``global_step``."""
    env, it = data.last("axis/env_steps_total"), data.last("axis/iteration")
    logged = env is not None and it is not None and env != it
    return "  Total env steps: " if logged else "  Last step: "


def _wall(data: RunData) -> str:
    w = data.wall_time
    return "--" if w is None else fmt_duration(w)


def _source(data: RunData) -> str:
    if data.kind == "summary":
        return f"{os.path.basename(data.source)} ({data.records:,} records)"
    src = next((f.label for f in formats() if f.name == data.kind), data.kind)
    if data.writers > 1:  # several sessions or writers: their files, read as one
        src = f"{data.writers} writers' {src}, as one run"
    return f"{src} ({data.records:,} records)"


def stopped_early(data: RunData) -> str | None:
    """``stopped at iteration N by rule R`` for a run a ``stop=True`` rule ended,
    ``stopped at N of M`` for one that ended before its ``max_iterations`` (or
    ``stopped before any step was logged``)."""
    if data.stopped_by is not None:
        return data.stopped_by
    if data.state not in ("finished", "interrupted") or not data.max_iterations:
        return None
    it = data.iterations or 0
    if not it and not data.records:  # "at 0 of M" would claim a step
        return "stopped before any step was logged"
    if data.state == "interrupted" or it < data.max_iterations:
        return f"stopped at {it:,} of {data.max_iterations:,}"
    return None


def media_line(data: RunData) -> tuple[str, str] | None:
    """``("12 written; 3 not written (2 stalled, 1 agent lost)", style)``, or None when
    the run logged none or the count is not known (no run summary)."""
    lost = sum(data.media_lost.values())
    if data.media_written is None or not (data.media_written or lost or data.media_refused):
        return None
    text = f"{data.media_written:,} written"
    if lost:
        why = ", ".join(f"{n:,} {reason}" for reason, n in data.media_lost.items())
        text += f"; {lost:,} not written ({why})"
    if data.media_refused:
        text += f"; {data.media_refused:,} refused at the call (media_budget)"
    return text, "yellow" if lost or data.media_refused else "green"


def summary(data: RunData) -> Panel:
    """The run's summary panel: what the files say about it, and any reading problem."""
    iterations = "--" if data.iterations is None else f"{data.iterations:,}"
    if data.max_iterations:
        iterations += f" of {data.max_iterations:,}"
    lines = [
        Text.assemble("  Source: ", (_source(data), "cyan")),
        Text.assemble(_steps_label(data), (_steps(data), "yellow")),
        Text.assemble("  Iterations: ", (iterations, "yellow")),
        Text.assemble("  Wall time (first to last record): ", (_wall(data), "yellow")),
    ]
    axes = axes_of(data.tags)
    if len(axes) > 4:  # more than the seed's: name them (aoff compare --x takes each)
        lines.append(Text.assemble("  Axes: ", (", ".join(axes), "cyan")))
    state = stopped_early(data) or data.state
    if state is not None:
        lines.append(Text.assemble("  State: ", (state, "yellow")))
    if data.late_records:  # written at their own steps: said, never lost
        late = f"{data.late_records:,} (written at their own steps)"
        lines.append(Text.assemble("  Late points: ", (late, "yellow")))
    media = media_line(data)
    if media is not None:
        lines.append(Text.assemble("  Images/videos: ", media))
    if REWARD_TAG in data.tags:
        lines.append(
            Text.assemble(
                f"  {REWARD_TAG}: last ",
                (fmt_value(data.last(REWARD_TAG)), "yellow"),
                ", best ",
                (fmt_value(data.best(REWARD_TAG)), "yellow"),
            )
        )
    if data.notes:
        lines.append(Text("  Some records could not be read: see the note(s) below", "yellow"))
    body = Text("\n").join(lines)
    body.no_wrap, body.overflow = True, "ellipsis"  # a narrow --width cuts, never wraps
    return Panel(
        body,
        title=Text(f"Run {os.path.basename(os.path.abspath(data.path))}", style="bold"),
        border_style="yellow" if data.notes else "green",
    )


def _no_run(path: str, err: TextIO, cmd: str) -> int:
    print(
        f"aoff {cmd}: no {labels()} in {path!r}: not a run folder",
        file=err,
    )
    return 1


def run_show(
    path: str, console: Console, err: TextIO, *, width: int | None = None, as_json: bool = False
) -> int:
    """Print ``path``'s summary and tag table. Returns the exit status.

    ``width``: columns to fit (default: the terminal's, or ``COLUMNS``/80 when piped);
    ``as_json``: print :func:`~aoff._cli._runjson.show_json` instead."""
    if width is not None and width < MIN_WIDTH:
        print(f"aoff show: --width {width}: must be at least {MIN_WIDTH} columns", file=err)
        return 2
    if not os.path.isdir(path):
        print(f"aoff show: {not_a_folder(path)}", file=err)
        return 1
    if width is not None:
        console.width = width
    live = bool(live_status(path) == "live")
    try:
        with reading_progress(err, scan_bytes(path, live=live), "reading event files") as progress:
            data = read_run(path, live=live, progress=progress)
    except OSError as exc:
        print(f"aoff show: cannot read {path!r}: {exc.strerror or exc}", file=err)
        return 1
    if data is None:
        below = [r for r in runs_in(path) if r != path]
        if below:  # a folder of runs, as ls, compare and export see it
            names = ", ".join(os.path.relpath(r, path) for r in below[:5])
            print(
                f"aoff show: {path!r} is a folder of {len(below)} runs ({names}"
                f"{', ...' if len(below) > 5 else ''}): show takes one run; "
                f"aoff ls {path} lists them",
                file=err,
            )
            return 1
        return _no_run(path, err, "show")
    if as_json:
        state = stopped_early(data) or data.state
        print(json.dumps(show_json(data, state), allow_nan=False), file=console.file)
        for note in data.notes:
            print(f"aoff show: {note}", file=err)
        return 0
    console.print(summary(data))
    if data.tags:
        table = tag_table(data, bars_for(console), console.width)
        console.print(table, crop=True, no_wrap=True, overflow="crop")
    else:
        console.print(f"No scalar records could be read from {data.source}.")
    for note in data.notes:
        print(f"aoff show: {note}", file=err)
    return 0


def _status(data: RunData, live: str | None) -> str:
    # Without a run summary (a folder another tool wrote, or a run whose agent never
    # finished it) nothing says how the run ended: "finished" would be a guess.
    status = live or stopped_early(data) or data.state or "no summary"
    if data.writers > 1:
        status += f" ({data.writers} writers)"
    return status + (" (damaged file: see aoff show)" if data.notes else "")


def run_ls(
    root: str, out: TextIO, err: TextIO, *, as_json: bool = False, where: str | None = None
) -> int:
    """Print one line per run folder below ``root`` (those ``where`` keeps, through the
    folder's run index, when given). Returns the exit status.

    A folder that cannot be read is skipped with one line on ``err``."""
    if not os.path.isdir(root):
        print(f"aoff ls: {not_a_folder(root)}", file=err)
        return 1
    skipped: list[str] = []
    if where is not None:
        from .._runfolder.reading._runindex import select_runs
        from .._runfolder.reading._where import compile_where

        try:
            test = compile_where(where)
        except ValueError as exc:
            print(f"aoff ls: {exc}", file=err)
            return 2
        notes: list[str] = []
        runs = select_runs(root, test, skipped, live=has_live_files, notes=notes)
        for line in [*skipped, *notes]:
            print(f"aoff ls: {'skipped ' if line in skipped else ''}{line}", file=err)
        if not runs:
            print(f"aoff ls: no run in {root!r} matches --where {where!r}", file=err)
            return 1
        skipped = []
    else:
        runs = find_runs(root, skipped, live=has_live_files)
    for line in skipped:
        print(f"aoff ls: skipped {line}", file=err)
    if not runs:
        print(
            f"aoff ls: no run folders (with {labels()}) in {root!r}",
            file=err,
        )
        return 1
    lives = {path: live_status(path) for path in runs}
    total = sum(_size(path, lives[path] == "live") for path in runs)
    rows = [("run", "steps", "last reward", "wall time", "status")]
    records: list[dict[str, object]] = []
    with reading_progress(err, total, "reading event files") as progress:
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
                records.append(ls_row(name, None, live))
                continue
            records.append(ls_row(name, data, _status(data, live)))
            rows.append(
                (
                    name,
                    _steps(data),
                    fmt_value(data.last(REWARD_TAG)),
                    _wall(data),
                    _status(data, live),
                )
            )
    if as_json:
        print(json.dumps(records, allow_nan=False), file=out)
        return 0
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
        help=f"a run folder ({labels()})",
    )
    p.add_argument(
        "--width",
        type=number(int, MIN_WIDTH, MAX_WIDTH),
        default=None,
        help="columns to fit the table in (default: the terminal's width; COLUMNS or 80 "
        f"when piped; from {MIN_WIDTH} to {MAX_WIDTH})",
    )
    p.add_argument("--json", action="store_true", help="print the run as JSON, for scripts")


def add_ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs_dir", metavar="RUNS_DIR", help="a folder of run folders (e.g. runs)")
    p.add_argument("--json", action="store_true", help="print one JSON object per run, in a list")
    add_where_argument(p)
