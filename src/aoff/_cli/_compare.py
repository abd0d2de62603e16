"""``aoff compare RUN_OR_GLOB... --metric TAG``: seeds of each configuration, with intervals.

RL results are judged across seeds. ``compare`` finds the runs (folders, globs, or folders
of runs), groups them into configurations (``_groups``: the grouping is printed), reads
each run's series of one tag (``_series``), and prints per group the final performance
(mean, median, IQM and the IQM's 95 % bootstrap interval over runs, ``_stats``), the
probability of improvement between groups, and a chart of each group's IQM curve with its
band and its min-to-max envelope (``_comparechart``); ``--out`` saves the same curves as a
figure (``_comparefig``), ``--json`` prints the numbers for scripts, ``--follow`` redraws
as running seeds append.

A run without the tag, or whose files cannot be read, is left out with one line on
stderr; the command fails (exit 1) only when no group is left to show.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._channel._paths import has_live_files
from .._runfolder.reading._formats import bytes_to_read
from .._runfolder.reading._runfind import runs_in
from .._runfolder.reading._runindex import select_runs
from .._runfolder.reading._where import Where, compile_where
from ._comparechart import curve_chart
from ._groups import Group, compile_group, group_runs
from ._numbers import number
from ._pipes import output_closed
from ._progress import reading_progress
from ._series import RunSeries
from ._stats import (
    Curve,
    Final,
    RunScore,
    final_stats,
    iqm_curve,
    probability_of_improvement,
    score_run,
)
from ._whereopt import add_where_argument

__all__ = ["add_compare_arguments", "run_compare"]

_GLOB_CHARS = frozenset("*?[")
#: the most bootstrap resamples and curve points (memory: resamples x runs, points x runs)
MAX_REPS = 1_000_000
MAX_POINTS = 10_000


@dataclass
class Compared:
    """One group's runs and numbers."""

    group: Group
    final: Final
    curve: Curve | None
    runs: list[str] = field(default_factory=list)  # the runs that had the metric
    scored: list[RunScore] = field(default_factory=list)  # each run's, in ``runs``' order

    def diverged(self) -> list[tuple[str, RunScore]]:
        return [(r, s) for r, s in zip(self.runs, self.scored, strict=True) if s.nonfinite]

    def stopped_early(self) -> list[tuple[str, float]]:
        """The runs whose curve ends before the group's last step, and where."""
        ends = [s.last_step for s in self.scored if s.last_step is not None]
        if not ends:
            return []
        last = max(ends)
        return [
            (r, s.last_step)
            for r, s in zip(self.runs, self.scored, strict=True)
            if s.last_step is not None and s.last_step < last
        ]

    def notes(self) -> list[tuple[str, str]]:
        """What a reader of the numbers must know, each line with a key that names its run
        and kind (said once each, as ``--follow`` redraws): the diverged runs, and the
        runs whose curve stops before the group's."""
        out = [
            (
                f"diverged {r}",
                f"{r} diverged: {s.nonfinite} from step {s.diverged_from:g}, in its final "
                f"window; scored -inf (group {self.group.name!r})",
            )
            for r, s in self.diverged()
        ]
        n = len(self.runs)
        for r, step in self.stopped_early():
            later = sum(1 for s in self.scored if s.last_step is not None and s.last_step > step)
            out.append(
                (
                    f"stops {r}",
                    f"{r}'s curve stops at step {step:g}: after it, group "
                    f"{self.group.name!r} is drawn over {later} of {n} runs",
                )
            )
        return out


def find_compare_runs(args: list[str], notes: list[str], where: Where | None = None) -> list[str]:
    """The run folders ``args`` name: each a run, a glob of runs, or a folder of runs;
    only those ``where`` keeps when given (a folder of runs through its run index)."""
    runs: list[str] = []
    for arg in args:
        paths = sorted(glob.glob(arg)) if _GLOB_CHARS & set(arg) else [arg]
        if not paths:
            notes.append(f"{arg!r} matches nothing")
        for p in paths:
            if not os.path.isdir(p):
                notes.append(f"{p!r} is not a folder")
                continue
            if where is not None:
                below = select_runs(p, where, notes, live=has_live_files, notes=notes)
                if not below:
                    notes.append(f"{p!r}: no run matches --where {where.text!r}")
                runs.extend(below)
                continue
            below = runs_in(p, notes, live=has_live_files)  # as ls, export, read_scalars
            if not below:
                notes.append(f"{p!r} holds no run")
            runs.extend(below)
    unique: dict[str, str] = {}  # one run named twice (a glob and a folder): once
    for r in runs:
        unique.setdefault(os.path.realpath(r), r)
    return list(unique.values())


class Reading:
    """Every run's series of the metric, read as the files grow (``--follow``); a run
    that cannot be read, or lacks the metric, is named on ``err`` once."""

    def __init__(self, runs: list[str], metric: str, err: TextIO, x: str = "step") -> None:
        self.metric = metric
        self.err = err
        self.series = {run: RunSeries(run, metric, x) for run in runs}
        self.skipped: set[str] = set()
        self.lacking: set[str] = set()

    def update(self) -> bool:
        """Read what was appended; True when a series changed."""
        live = [r for r in self.series if r not in self.skipped]
        todo = sum(bytes_to_read(r) for r in live) - sum(self.series[r].bytes_read for r in live)
        changed = False
        with reading_progress(self.err, todo, "reading runs") as progress:
            for run in live:
                s = self.series[run]
                before = s.bytes_read
                notes: list[str] = []
                try:
                    changed |= s.update(notes)
                except (OSError, ValueError) as exc:
                    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                    print(f"aoff compare: skipped {run}: {why}", file=self.err)
                    self.skipped.add(run)
                    continue
                finally:
                    if progress is not None:
                        progress(s.bytes_read - before)
                for note in notes:
                    print(f"aoff compare: {note}", file=self.err)
        for run in live:
            if run in self.skipped or run in self.lacking or len(self.series[run].values):
                continue
            self.lacking.add(run)
            tags = self.series[run].other_tags()
            shown = ", ".join(tags[:8]) + (", …" if len(tags) > 8 else "")
            print(
                f"aoff compare: {run} has no {self.metric!r} (its tags: {shown or 'none'}); "
                "left out",
                file=self.err,
            )
        return changed

    def with_metric(self) -> dict[str, RunSeries]:
        return {r: s for r, s in self.series.items() if r not in self.skipped and len(s.values)}


def compute(
    groups: list[Group],
    series: dict[str, RunSeries],
    *,
    final: float,
    reps: int,
    seed: int,
    points: int,
) -> list[Compared]:
    out: list[Compared] = []
    for g in groups:
        runs = [r for r in g.runs if r in series]
        data = {r: (series[r].steps, series[r].values) for r in runs}
        scored = [score_run(*data[r], final) for r in runs]
        if not runs:
            continue
        stats = final_stats([s.score for s in scored], reps=reps, seed=seed)
        curve = iqm_curve([data[r] for r in runs], points=points, reps=reps, seed=seed)
        out.append(Compared(g, stats, curve, runs, scored))
    return out


def _num(v: float) -> float | None:
    return v if math.isfinite(v) else None


def as_json(metric: str, final: float, done: list[Compared], x: str = "step") -> dict[str, Any]:
    groups = []
    for c in done:
        f = c.final
        entry: dict[str, Any] = {
            "name": c.group.name,
            "runs": f.runs,
            "run_dirs": c.runs,
            "final": {
                "mean": _num(f.mean),
                "median": _num(f.median),
                "iqm": _num(f.iqm),
                "iqm_ci": [_num(v) for v in f.iqm_ci],
                "scores": [_num(v) for v in f.scores],
            },
            "diverged": [
                {"run": r, "from_step": s.diverged_from, "value": s.nonfinite}
                for r, s in c.diverged()
            ],
            "curve_ends": [{"run": r, "step": step} for r, step in c.stopped_early()],
            "curve": None,
        }
        if c.curve is not None:
            entry["curve"] = {
                "steps": c.curve.steps,
                "iqm": [_num(v) for v in c.curve.iqm],
                "iqm_ci_lo": [_num(v) for v in c.curve.lo],
                "iqm_ci_hi": [_num(v) for v in c.curve.hi],
                "runs": c.curve.runs,
                "min": [_num(v) for v in c.curve.env_lo],
                "max": [_num(v) for v in c.curve.env_hi],
            }
        groups.append(entry)
    return {
        "metric": metric,
        "x": x,  # the curves' steps are on this axis (--x)
        "final_fraction": final,
        "groups": groups,
        "probability_of_improvement": [
            {"x": a.group.name, "y": b.group.name, "p": p} for a, b, p in _improvements(done)
        ],
    }


def _improvements(done: list[Compared]) -> list[tuple[Compared, Compared, float]]:
    return [
        (a, b, probability_of_improvement(a.final.scores, b.final.scores))
        for i, a in enumerate(done)
        for b in done[i + 1 :]
    ]


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def render(
    console: Console, metric: str, final: float, done: list[Compared], *, x: str = "step"
) -> None:
    """The grouping, the final-performance table, the improvements and the chart."""
    for c in done:
        diverged = len(c.diverged())
        console.print(
            Text.assemble(
                ("group ", "dim"),
                (c.group.name, "bold"),
                f": {len(c.runs)} runs",
                (f", {diverged} diverged (scored -inf)", "bold red") if diverged else "",
            )
        )
        for r in c.runs:
            console.print(Text(f"  {r}", "dim", no_wrap=True, overflow="ellipsis"))
    table = Table(
        title=f"{metric}, final score: mean of each run's last {final:.0%} of steps"
        + (" (a diverged run: -inf)" if any(c.diverged() for c in done) else ""),
        title_justify="left",
    )
    for col in ("group", "runs", "mean", "median", "IQM", "IQM 95% CI"):
        table.add_column(col, justify="left" if col == "group" else "right")
    for c in done:
        f = c.final
        ci = f"[{_fmt(f.iqm_ci[0])}, {_fmt(f.iqm_ci[1])}]"
        table.add_row(c.group.name, str(f.runs), _fmt(f.mean), _fmt(f.median), _fmt(f.iqm), ci)
    console.print(table)
    pairs = _improvements(done)
    if pairs:
        console.print("probability of improvement (a run of A beats a run of B):")
    for a, b, p in pairs:
        line = Text(f"  P({a.group.name} > {b.group.name}) = {p:.2f}")
        line.no_wrap, line.overflow = True, "ellipsis"
        console.print(line)
    curves = [(c.group.name, c.curve) for c in done if c.curve is not None]
    if curves:
        ascii_only = console.encoding.lower().replace("-", "") != "utf8"
        console.print(
            curve_chart(curves, console.width, ascii_only=ascii_only, metric=metric, x=x),
            crop=True,
        )


def run_compare(ns: argparse.Namespace, console: Console, out: TextIO, err: TextIO) -> int:
    """``aoff compare``: returns the exit status."""
    try:
        pattern = compile_group(ns.group) if ns.group else None
        where = None if ns.where is None else compile_where(ns.where)
        if not 0.0 < ns.final <= 1.0:
            raise ValueError(f"--final {ns.final:g} must be in (0, 1]")
        if ns.reps < 2000:
            raise ValueError(f"--reps {ns.reps} must be at least 2000")
        if ns.out:
            from ._comparefig import FIGURE_SUFFIXES

            if not ns.out.lower().endswith(FIGURE_SUFFIXES):
                raise ValueError(f"--out {ns.out!r} must end in .png, .svg or .pdf")
    except ValueError as exc:
        print(f"aoff compare: {exc}", file=err)
        return 2
    notes: list[str] = []
    runs = find_compare_runs(ns.runs, notes, where)
    for note in notes:
        print(f"aoff compare: {note}", file=err)
    unmatched: list[str] = []
    groups = group_runs(runs, pattern, unmatched)
    for run in unmatched:
        print(f"aoff compare: {run} does not match --group {ns.group!r}; left out", file=err)
    reading = Reading(runs, ns.metric, err, ns.x)
    reading.update()
    said: set[str] = set()
    while True:
        done = compute(
            groups,
            reading.with_metric(),
            final=ns.final,
            reps=ns.reps,
            seed=ns.seed,
            points=ns.points,
        )
        if not done:
            print(f"aoff compare: no run with {ns.metric!r} to compare", file=err)
            return 1
        for key, note in (n for c in done for n in c.notes()):
            if key not in said:  # once, however often --follow redraws
                said.add(key)
                print(f"aoff compare: {note}", file=err)
        if ns.json:
            got = as_json(ns.metric, ns.final, done, ns.x)
            print(json.dumps(got, allow_nan=False), file=out)
        else:
            if ns.follow and console.is_terminal:
                console.clear()
            render(console, ns.metric, ns.final, done, x=ns.x)
        if ns.out:
            from ._comparefig import save_figure

            curves = [(c.group.name, c.final.runs, c.curve) for c in done if c.curve]
            try:
                save_figure(ns.out, ns.metric, curves, x=ns.x)
            except (OSError, ImportError) as exc:
                print(f"aoff compare: cannot write {ns.out!r}: {exc}", file=err)
                return 1
        if not ns.follow:
            return 0
        _follow_pause(ns.interval, out)
        while not reading.update():  # appended bytes only, each look
            _follow_pause(ns.interval, out)


def _follow_pause(seconds: float, out: TextIO) -> None:
    """Wait for the next look, a tenth of a second at a time: a reader that closed the
    pipe (``--follow | head``) ends the command at once, not at its next redraw."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if output_closed(out):
            raise BrokenPipeError
        time.sleep(min(left, 0.1))


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_OR_GLOB",
        help="run folders, globs of them (quote them: 'runs/HalfCheetah*'), or folders of runs",
    )
    p.add_argument("--metric", required=True, help="the scalar tag to compare")
    p.add_argument(
        "--x",
        default="step",
        metavar="AXIS",
        help="the curves' x axis: step (default), env_steps, iteration, wall_time (seconds "
        "since each run's first point) or an axes= name such as grad_steps",
    )
    p.add_argument(
        "--group",
        metavar="REGEX",
        help="a regular expression searched in each run's path; its first capture group "
        "names the run's group (default: CleanRL's {env}__{exp}__{seed}__{time} names group "
        "by {env}__{exp}, names ending in -seedN/_sN by what comes before)",
    )
    p.add_argument(
        "--final",
        type=number(float, 0, 1, above=True),
        default=0.1,
        help="a run's score is the mean of the metric over this last fraction of its steps",
    )
    p.add_argument(
        "--reps",
        type=number(int, 2000, MAX_REPS),
        default=2000,
        help=f"bootstrap resamples (from 2000 to {MAX_REPS:,})",
    )
    p.add_argument(
        "--seed", type=number(int, 0, 2**32 - 1), default=0, help="the bootstrap's random seed"
    )
    p.add_argument(
        "--points",
        type=number(int, 2, MAX_POINTS),
        default=100,
        help=f"steps on the curves' common grid (from 2 to {MAX_POINTS:,})",
    )
    p.add_argument("--out", metavar="FILE", help="also save the curves as a .png, .svg or .pdf")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    add_where_argument(p)
    p.add_argument(
        "--follow", action="store_true", help="redraw as the runs' files grow (Ctrl+C stops)"
    )
    p.add_argument(
        "--interval",
        type=number(float, 0, 3600, above=True),
        default=2.0,
        help="seconds between looks with --follow",
    )
