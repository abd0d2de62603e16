"""Pure Rich renderables for the dashboard, built from a :class:`~aoff._state.State` snapshot.

Every function here is a function of ``(state, now, glyphs)`` and nothing else: no clock,
no console, no I/O. That is what lets the pump render from a worker thread on a snapshot,
lets the plain-line and summary outputs share the exact formatting of the live panel, and
lets the tests pin the seed's layout (labels, orderings, colours, thresholds) with golden
files instead of a terminal.

The layout reproduces the seed logger's panel. Where the seed was silent or plainly
wrong, the choice made is documented on the function concerned (notably the reward trend
for negative rewards, nested collector timings, and the ASCII glyphs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.console import Console, Group
from rich.errors import MarkupError
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._core._state import State
from ._format import fmt_duration, fmt_ms, fmt_number

__all__ = [
    "ASCII_GLYPHS",
    "COLLECTOR_TIMING_LABELS",
    "COLLECTOR_TIMING_ORDER",
    "UNICODE_GLYPHS",
    "Glyphs",
    "collector_rows",
    "dashboard_panel",
    "eta_seconds",
    "glyphs_for",
    "glyphs_for_encoding",
    "header",
    "metrics_table",
    "plain_line",
    "reward_table",
    "reward_trend",
    "summary_panel",
    "timing_table",
]

Trend = Literal["up", "down", "flat"]

#: Known collector timings, in the order the seed showed them, with their labels.
COLLECTOR_TIMING_ORDER: tuple[str, ...] = (
    "weight_sync_ms",
    "action_select_ms",
    "env_step_ms",
    "replay_ms",
    "sync_coordination_ms",
)
COLLECTOR_TIMING_LABELS: Mapping[str, str] = {
    "weight_sync_ms": "Weight Sync",
    "action_select_ms": "Action Select",
    "env_step_ms": "Env Step",
    "replay_ms": "Replay",
    "sync_coordination_ms": "Sync Coordination",
}
_ORDER_INDEX = {key: i for i, key in enumerate(COLLECTOR_TIMING_ORDER)}

TREND_WINDOW = 10
REWARD_MEAN_WINDOW = 50
TREND_THRESHOLD = 0.05
LOSS_ALERT = 10.0
WAIT_ALERT_MS = 1.0


# -- glyphs ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Glyphs:
    """The non-ASCII symbols the dashboard uses, and their stand-ins for ASCII consoles.

    ``overflow`` is how over-long single-line fields are cut: an ellipsis (``…``) needs
    Unicode too, so the ASCII set crops instead. ``table_box`` is the tables' box: the
    seed's ``SIMPLE_HEAVY``, or the same shape drawn with ``-`` (left to itself, Rich
    would swap in a fully ruled ASCII grid).
    """

    timer: str
    up: str
    down: str
    flat: str
    yes: str
    no: str
    rocket: str
    overflow: Literal["ellipsis", "crop"]
    table_box: box.Box


_ASCII_SIMPLE_HEAVY = box.Box(
    "    \n    \n -- \n    \n    \n -- \n    \n    \n",
    ascii=True,
)
UNICODE_GLYPHS = Glyphs(
    timer="⏱",
    up="▲",
    down="▼",
    flat="━",
    yes="✓",
    no="✗",
    rocket="🚀",
    overflow="ellipsis",
    table_box=box.SIMPLE_HEAVY,
)
ASCII_GLYPHS = Glyphs(
    timer="time",
    up="^",
    down="v",
    flat="-",
    yes="yes",
    no="no",
    rocket="",
    overflow="crop",
    table_box=_ASCII_SIMPLE_HEAVY,
)
_PROBE = "".join(
    (
        UNICODE_GLYPHS.timer,
        UNICODE_GLYPHS.up,
        UNICODE_GLYPHS.down,
        UNICODE_GLYPHS.flat,
        UNICODE_GLYPHS.yes,
        UNICODE_GLYPHS.no,
        UNICODE_GLYPHS.rocket,
        "…",
    )
)


def glyphs_for_encoding(encoding: str | None) -> Glyphs:
    """The Unicode set if ``encoding`` can encode every glyph, else the ASCII set."""
    try:
        _PROBE.encode(encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ASCII_GLYPHS
    return UNICODE_GLYPHS


def glyphs_for(console: Console) -> Glyphs:
    """The glyph set ``console``'s output encoding can show."""
    return glyphs_for_encoding(console.encoding)


# -- small helpers -----------------------------------------------------------------------
def _markup(text: str, style: str = "") -> Text:
    """User text that may carry Rich markup (status, extra summary); literal if invalid."""
    try:
        return Text.from_markup(text, style=style)
    except MarkupError:
        return Text(text, style=style)


def _label(key: str) -> str:
    return key.replace("_", " ").title()


def _mean(values: Sequence[float]) -> float:
    return sum(values) / max(len(values), 1)


def eta_seconds(state: State, now: float) -> float | None:
    """Seconds left: remaining iterations × seconds per iteration so far.

    Time is measured from ``training_start_time`` when the training timer was started
    (so buffer warm-up does not inflate the estimate), else from ``start_time``.
    ``None`` before the first iteration or before the run started.
    """
    if state.iteration <= 0:
        return None
    origin = state.training_start_time
    if origin is None:
        origin = state.start_time
    if origin is None:
        return None
    elapsed = max(now - origin, 0.0)
    remaining = max(state.config.max_iterations - state.iteration, 0)
    return remaining * elapsed / state.iteration


def _elapsed(state: State, now: float) -> float:
    return max(now - state.start_time, 0.0) if state.start_time is not None else 0.0


# -- header ------------------------------------------------------------------------------
def header(state: State, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> Text:
    """The one-line header: algo, env, iteration, elapsed, ETA, episode length, throughput,
    status; fields joined by a dim `` | ``, never wrapped.

    An empty env name is left out rather than shown as an empty field between two
    separators. The status is rendered as Rich markup (``log_status("[red]...")`` is
    meant to be red), falling back to literal text when it is not valid markup.
    """
    cfg = state.config
    fields: list[Text] = [Text(f" {cfg.algo_name}", style="bold cyan")]
    if cfg.env_name:
        fields.append(Text(cfg.env_name, style="bold white"))
    fields.append(Text(f"iter {state.iteration}/{cfg.max_iterations}", style="yellow"))
    fields.append(Text(f"{glyphs.timer} {fmt_duration(_elapsed(state, now))}", style="green"))
    eta = eta_seconds(state, now)
    if eta is not None:
        fields.append(Text(f"ETA {fmt_duration(eta)}", style="bold magenta"))
    if state.ep_length > 0:
        fields.append(Text(f"Ep Len {state.ep_length:.1f}", style="yellow"))
    sps = state.steps_per_sec()
    if sps is not None:
        fields.append(Text(f"Steps/s {sps:,.0f}", style="bold green"))
    if state.status:
        fields.append(_markup(state.status, style="dim italic"))
    line = Text(no_wrap=True, overflow=glyphs.overflow)
    for i, field in enumerate(fields):
        if i:
            line.append(" | ", style="dim")
        line.append_text(field)
    return line


# -- tables ------------------------------------------------------------------------------
def _table(header_style: str, glyphs: Glyphs) -> Table:
    return Table(
        box=glyphs.table_box,
        show_header=True,
        show_edge=False,
        header_style=header_style,
        expand=True,
        pad_edge=False,
    )


def metrics_table(state: State, glyphs: Glyphs = UNICODE_GLYPHS) -> Table:
    """ "Losses & Metrics" | "Value": loss keys first (sorted; red above 10, or when not
    finite), then the other keys sorted and indented; ``_`` → space, title case."""
    table = _table("bold cyan", glyphs)
    table.add_column("Losses & Metrics", style="white", ratio=2, overflow=glyphs.overflow)
    table.add_column("Value", style="yellow", justify="right", ratio=1, overflow=glyphs.overflow)
    metrics = state.latest_metrics
    if not metrics:
        table.add_row(Text("Waiting for data...", style="dim"), "")
        return table
    loss_keys = sorted(k for k in metrics if "loss" in k.lower())
    other_keys = sorted(k for k in metrics if "loss" not in k.lower())
    for key in loss_keys:
        value = metrics[key]
        alert = value > LOSS_ALERT or not math.isfinite(value)
        table.add_row(_label(key), Text(fmt_number(value), style="red" if alert else "yellow"))
    for key in other_keys:
        table.add_row(f"  {_label(key)}", fmt_number(metrics[key]))
    return table


def reward_trend(history: Iterable[float]) -> Trend | None:
    """Compare the mean of the last 10 rewards with the mean of the (up to) 10 before.

    ``None`` below 10 values. The seed compared ``new > old * 1.05``, which inverts for
    negative rewards (−95 after −100 would read as falling). Here the ±5 % band is taken
    relative to ``abs(old)``: ``up`` when ``new > old + 0.05·|old|``, ``down`` when
    ``new < old − 0.05·|old|``, else ``flat`` — so an improvement is ``up`` whatever the
    sign. With exactly 10 values there is nothing to compare against: ``flat`` (the seed
    divided an empty sum by 10 and so always showed ``up`` for positive rewards).
    """
    values = list(history)
    if len(values) < TREND_WINDOW:
        return None
    previous = values[-2 * TREND_WINDOW : -TREND_WINDOW]
    if not previous:
        return "flat"
    new = _mean(values[-TREND_WINDOW:])
    old = _mean(previous)
    band = TREND_THRESHOLD * abs(old)
    if new > old + band:
        return "up"
    if new < old - band:
        return "down"
    return "flat"


def _trend_text(trend: Trend, glyphs: Glyphs) -> Text:
    if trend == "up":
        return Text(glyphs.up, style="green")
    if trend == "down":
        return Text(glyphs.down, style="red")
    return Text(glyphs.flat, style="yellow")


def reward_table(state: State, glyphs: Glyphs = UNICODE_GLYPHS) -> Table:
    """ "Rewards" | "Value": trend, mean of the last 50 and peak of the kept history, then
    each reward component (sorted, ``reward/`` removed, ``_`` → space, signed, coloured
    by sign). Like the seed, the label column is the narrow one (ratio 1:2)."""
    table = _table("bold green", glyphs)
    table.add_column("Rewards", style="white", ratio=1, overflow=glyphs.overflow)
    table.add_column("Value", justify="right", ratio=2, overflow=glyphs.overflow)
    history = list(state.reward_history)
    if history:
        label = Text.assemble(("Reward", "bold"))
        trend = reward_trend(history)
        if trend is not None:
            label.append(" ")
            label.append_text(_trend_text(trend, glyphs))
        mean = _mean(history[-REWARD_MEAN_WINDOW:])
        peak = max(history)
        value = Text.assemble(
            "Mean ", (f"{mean:.3f}", "bold green"), " / Peak ", (f"{peak:.3f}", "dim")
        )
        table.add_row(label, value)
    else:
        table.add_row(Text("Waiting for data...", style="dim"), "")
    for name, val in sorted(state.reward_components.items()):
        shown = name.replace("reward/", "").replace("_", " ")
        color = "green" if val > 0 else "red" if val < 0 else "dim"
        table.add_row(f"  {shown}", Text(f"{val:+.4f}", style=color))
    return table


def _collector_parents(keys: Iterable[str]) -> dict[str, str | None]:
    """Map each collector key to the key it nests under (``None`` for top level).

    A key ``<stem>_ms`` nests under another present key ``<parent>_ms`` when ``stem``
    starts with ``parent + "_"`` (``env_step_backend_ms`` under ``env_step_ms``); the
    longest such parent wins, so nesting can go several levels deep. The seed's five
    known keys always stay at the top level, in their fixed order.
    """
    present = list(keys)
    stems = {k: k[: -len("_ms")] for k in present if k.endswith("_ms")}
    parents: dict[str, str | None] = {}
    for key in present:
        best: str | None = None
        stem = stems.get(key)
        if stem is not None and key not in _ORDER_INDEX:
            for other, other_stem in stems.items():
                if (
                    other != key
                    and stem.startswith(other_stem + "_")
                    and (best is None or len(other_stem) > len(stems[best]))
                ):
                    best = other
        parents[key] = best
    return parents


def collector_rows(timing: Mapping[str, float]) -> list[tuple[str, str]]:
    """Collector timings as ``(label, "12.3ms")`` rows in display order.

    Top level: the seed's known keys in their fixed order with their labels, then
    unknown keys sorted by name and shown as given. Each nested key (see
    :func:`_collector_parents`) follows its parent directly, indented two spaces per
    level, children sorted by name, and is shown by what its key adds to its parent's
    (``env_step_backend_ms`` under ``env_step_ms`` reads ``backend_ms``), so that deep
    keys still fit the narrow column.
    """
    parents = _collector_parents(timing)
    children: dict[str | None, list[str]] = {}
    for key, parent in parents.items():
        children.setdefault(parent, []).append(key)

    def top_order(key: str) -> tuple[int, str]:
        return (_ORDER_INDEX.get(key, len(COLLECTOR_TIMING_ORDER)), key)

    rows: list[tuple[str, str]] = []

    def walk(key: str, depth: int) -> None:
        parent = parents[key]
        if parent is not None:
            label = key[len(parent) - len("ms") :]
        else:
            label = COLLECTOR_TIMING_LABELS.get(key, key)
        rows.append(("  " * depth + label, fmt_ms(timing[key], already_ms=True)))
        for child in sorted(children.get(key, ())):
            walk(child, depth + 1)

    for key in sorted(children.get(None, ()), key=top_order):
        walk(key, 0)
    return rows


Cell = str | Text


def timing_table(state: State, glyphs: Glyphs = UNICODE_GLYPHS) -> Table:
    """The bottom table: Learner, Collector and System column pairs, filled row by row.

    System adds two aoff rows to the seed's: ``Dropped`` (red) when the hot-path buffer
    had to drop events, and one red row per failing backend.
    """
    table = _table("bold blue", glyphs)
    for title in ("Learner", "Collector", "System"):
        table.add_column(title, style="white", ratio=2, no_wrap=True, overflow=glyphs.overflow)
        table.add_column(
            "Value",
            style="yellow",
            justify="right",
            ratio=1,
            no_wrap=True,
            overflow=glyphs.overflow,
        )

    wait_ms = state.wait_time * 1000
    learner: list[tuple[Cell, Cell]] = [
        (
            "Wait",
            Text(fmt_ms(wait_ms, already_ms=True), style="red" if wait_ms > 1.0 else "yellow"),
        ),
        ("H2D", fmt_ms(state.h2d_time)),
        ("Train", fmt_ms(state.train_time)),
        ("Weight Sync", fmt_ms(state.weight_sync_time)),
    ]
    collector: list[tuple[Cell, Cell]] = list(collector_rows(state.collector_timing))
    sync = f"{glyphs.yes} ({state.env_steps_per_sync})" if state.sync_collection else glyphs.no
    system: list[tuple[Cell, Cell]] = [
        ("Buffer", f"{state.buffer_size:,}"),
        ("Timeout Rate", f"{state.timeout_rate * 100:.1f}%"),
        ("Terminated Rate", f"{state.terminated_rate * 100:.1f}%"),
        ("Envs", f"{state.config.num_envs:,}"),
        ("Sync Collect", sync),
    ]
    if state.staging_max > 0:
        full = state.staging_len >= state.staging_max
        system.append(
            (
                "Staging Pool",
                Text(
                    f"{state.staging_len}/{state.staging_max}", style="yellow" if full else "green"
                ),
            )
        )
    if state.dropped_events > 0:
        system.append(
            (Text("Dropped", style="red"), Text(f"{state.dropped_events:,}", style="red"))
        )
    for name, problem in sorted(state.backend_problems.items()):
        system.append((Text(name, style="red"), Text(problem, style="red")))

    columns = (learner, collector, system)
    for i in range(max(len(c) for c in columns)):
        row: list[Cell] = []
        for items in columns:
            row.extend(items[i] if i < len(items) else ("", ""))
        table.add_row(*row)
    return table


# -- whole panels ------------------------------------------------------------------------
def dashboard_panel(state: State, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> Panel:
    """The live panel: header, blank, metrics | rewards side by side, blank, timings."""
    grid = Table.grid(expand=True)
    grid.add_column(ratio=1)
    grid.add_column(width=2)
    grid.add_column(ratio=1)
    grid.add_row(metrics_table(state, glyphs), "", reward_table(state, glyphs))
    rocket = f"{glyphs.rocket} " if glyphs.rocket else ""
    return Panel(
        Group(header(state, now, glyphs), Text(""), grid, Text(""), timing_table(state, glyphs)),
        title=Text(f" {rocket}aoff Off-Policy Training ", style="bold"),
        border_style="bright_blue",
        padding=(0, 1),
    )


def summary_panel(state: State, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> Panel:
    """The panel printed once at the end (green; yellow when the run was interrupted).

    Total time is ``last_wall_time - start_time`` (the time of the last event, so it does
    not depend on when the pump got round to printing); ``now`` stands in for a state
    that never saw an event after start.
    """
    cfg = state.config
    lines: list[Text] = []
    if state.interrupted:
        lines.append(Text("Training interrupted", style="bold yellow"))
    else:
        lines.append(Text("Training complete", style="bold green"))
    lines.append(
        Text.assemble("  Algo: ", (cfg.algo_name, "cyan"), " | Env: ", (cfg.env_name, "cyan"))
    )
    lines.append(
        Text.assemble("  Iterations: ", (str(state.iteration), "yellow"), f"/{cfg.max_iterations}")
    )
    end = state.last_wall_time if state.last_wall_time is not None else now
    total = max(end - state.start_time, 0.0) if state.start_time is not None else 0.0
    lines.append(Text.assemble("  Total time: ", (fmt_duration(total), "yellow")))
    lines.append(Text.assemble("  Total env steps: ", (f"{state.total_steps:,}", "yellow")))
    if state.extra_summary:
        lines.extend(_markup(state.extra_summary.rstrip("\n")).split("\n"))
    if state.last_save:
        lines.append(Text.assemble("  Last checkpoint: ", (state.last_save, "dim")))
    if state.dropped_events > 0:
        lines.append(Text(f"  Dropped events: {state.dropped_events:,}", style="red"))
    for name, problem in sorted(state.backend_problems.items()):
        lines.append(Text(f"  {name}: {problem}", style="red"))
    return Panel(
        Text("\n").join(lines),
        title=Text(state.finish_title, style="bold"),
        border_style="yellow" if state.interrupted else "green",
    )


def plain_line(state: State, now: float) -> str:
    """One line for logs that are not a terminal (CI, nohup, redirected stdout).

    ``iter 120/1500 | 3,456 steps/s | reward -123.456 | Training`` — throughput and
    reward (mean of the last 50, as on the panel) only when known, then dropped events
    and backend problems if any, then the status with any markup removed.
    """
    parts = [f"iter {state.iteration}/{state.config.max_iterations}"]
    sps = state.steps_per_sec()
    if sps is not None:
        parts.append(f"{sps:,.0f} steps/s")
    if state.reward_history:
        parts.append(f"reward {_mean(list(state.reward_history)[-REWARD_MEAN_WINDOW:]):.3f}")
    if state.dropped_events > 0:
        parts.append(f"dropped {state.dropped_events:,}")
    for name, problem in sorted(state.backend_problems.items()):
        parts.append(f"{name}: {problem}")
    status = _markup(state.status).plain if state.status else ""
    if status:
        parts.append(status)
    return " | ".join(parts)
