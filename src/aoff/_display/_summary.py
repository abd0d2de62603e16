"""The two outputs that are not the live panel: the end-of-run summary and the plain line.

Both are printed rarely (once at the end; once every few seconds in logs that are not a
terminal), so they stay plain Rich renderables and strings; they live apart from the
panel because they share its content rules (reward mean window, status markup, problem
rows) but none of its layout.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .._core._rules import stopped_by
from .._core._view import RunView
from ._banner import cost_line
from ._content import REWARD_MEAN_WINDOW, iteration_of, markup, mean
from ._format import fmt_duration
from ._glyphs import UNICODE_GLYPHS, Glyphs

__all__ = ["plain_line", "summary_panel"]


def summary_panel(state: RunView, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> Panel:
    """The panel printed once at the end (green; yellow when the run was interrupted).

    Its first line says how the run ended: ``Training complete`` (all ``max_iterations``
    done, or none given), ``Training stopped at iteration N by rule R: ...`` (a rule made
    with ``stop=True`` fired and the loop ended before its last iteration), ``Training
    stopped at N of M`` (``finish()`` before that) or ``Training interrupted: stopped at
    N of M``; ``stopped before any step was logged`` when no
    ``log_step`` came. Empty fields (no ``env_name``) are left out, and so is what no
    call logged (``Total env steps`` before any ``log_collector``).

    Total time is ``last_wall_time - start_time`` (the time of the last event, so it does
    not depend on when the pump got round to printing); ``now`` stands in for a state
    that never saw an event after start.
    """
    lines = [_how_it_ended(state), *_the_run(state, now), *_what_went_wrong(state)]
    return Panel(
        Group(*lines),
        title=Text(state.finish_title, style="bold"),
        border_style="yellow" if state.interrupted else "green",
    )


def _how_it_ended(state: RunView) -> Text:
    """The summary's first line: complete, stopped early, or interrupted."""
    cfg = state.config
    stopped = f"stopped at {state.iteration:,} of {cfg.max_iterations:,}"
    if not state.steps_logged and not state.iteration:  # "at 0 of M" would claim a step
        stopped = "stopped before any step was logged"
    if state.interrupted:
        return Text(f"Training interrupted: {stopped}", style="bold yellow")
    rule = stopped_by(state.alerts, state.iteration, cfg.max_iterations)
    if rule is not None:
        # a rule made with stop=True fired and the loop ended before its last iteration
        # (or none was given): the loop stopped for it, the run is not complete
        said = f"Training stopped at iteration {state.iteration:,} by rule {rule.rule}"
        return Text(f"{said}: {rule.message}", style="bold yellow")
    if state.iteration < cfg.max_iterations:  # finish() before the last iteration
        return Text(f"Training {stopped}", style="bold yellow")
    return Text("Training complete", style="bold green")


def _the_run(state: RunView, now: float) -> list[RenderableType]:
    """What ran and how far: algorithm and env, iterations, time, env steps, the user's
    own lines, the last checkpoint and media."""
    cfg = state.config
    lines: list[RenderableType] = []
    run = [(name, value) for name, value in (("Algo", cfg.algo_name), ("Env", cfg.env_name))]
    run = [(name, value) for name, value in run if value]  # no bare "Env: "
    if run:
        parts: list[str | tuple[str, str]] = ["  "]
        for k, (name, value) in enumerate(run):
            parts += [" | " if k else "", f"{name}: ", (value, "cyan")]
        lines.append(Text.assemble(*parts))
    lines.append(
        Text.assemble(
            "  Iterations: ",
            (str(state.iteration), "yellow"),
            f"/{cfg.max_iterations}" if cfg.max_iterations > 0 else "",
        )
    )
    end = state.last_wall_time if state.last_wall_time is not None else now
    total = max(end - state.start_time, 0.0) if state.start_time is not None else 0.0
    lines.append(Text.assemble("  Total time: ", (fmt_duration(total), "yellow")))
    if "collector" in state.logged or state.total_steps > 0:  # never a "Total env steps: 0"
        steps = f"{state.total_steps:,}"
        lines.append(Text.assemble("  Total env steps: ", (steps, "yellow")))
    if state.extra_summary:
        lines.extend(markup(state.extra_summary.rstrip("\n")).split("\n"))
    if state.last_save:  # a long path wraps under itself, not under the label
        lines.append(_field("  Last checkpoint: ", state.last_save, "dim"))
    if state.last_media is not None:
        key, step = state.last_media
        lines.append(_field("  Last media: ", f"{key} (step {step:,})", "dim"))
    return lines


def _what_went_wrong(state: RunView) -> list[Text]:
    """What was lost or failed, the producers' late points (written, counted), aoff's own
    cost, and the alerts (the first five)."""
    lines: list[Text] = []
    if state.media_refused:
        lines.append(Text(f"  Media refused (budget): {state.media_refused:,}", style="red"))
    if state.dropped_events > 0:
        lines.append(Text(f"  Dropped events: {state.dropped_events:,}", style="red"))
    for name, problem in sorted(state.backend_problems.items()):
        lines.append(Text(f"  {name}: {problem}", style="red"))
    if state.late_records:  # written at their own steps: said, not lost
        lines.append(Text(f"  Late points (written): {state.late_records:,}", style="yellow"))
    if state.late_points:  # written at their own steps: said, not lost
        each = ", ".join(f"{name} {n:,}" for name, n in state.late_points.items())
        lines.append(Text(f"  Late producer points (written): {each}", style="yellow"))
    cost = cost_line(state.cost)
    if cost:
        lines.append(Text(f"  aoff: {cost}", style="dim"))
    if state.alerts:
        lines.append(Text(f"  Alerts: {len(state.alerts):,}", style="bold red"))
        lines.extend(Text(f"    {a.message} [{a.rule}]", style="red") for a in state.alerts[:5])
    return lines


def _field(label: str, value: str, style: str) -> Table:
    """``label`` then ``value``; a value too long for the line folds under itself."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(Text(label), Text(value, style=style))
    return grid


def plain_line(state: RunView, now: float) -> str:
    """One line for logs that are not a terminal (CI, nohup, redirected stdout).

    ``iter 120/1500 | 3,456 steps/s | reward -123.456 | Training`` — throughput and
    reward (mean of the last 50, as on the panel) only when known, then dropped events
    and backend problems if any, then the status with any markup removed.
    """
    parts = [f"iter {iteration_of(state)}"]
    sps = state.steps_per_sec()
    if sps is not None:
        parts.append(f"{sps:,.0f} steps/s")
    if state.reward_history:
        parts.append(f"reward {mean(list(state.reward_history)[-REWARD_MEAN_WINDOW:]):.3f}")
    if state.dropped_events > 0:
        parts.append(f"dropped {state.dropped_events:,}")
    for name, problem in sorted(state.backend_problems.items()):
        parts.append(f"{name}: {problem}")
    if state.alerts:
        parts.append(f"ALERT {state.alerts[-1].message}")
    status = markup(state.status).plain if state.status else ""
    if status:
        parts.append(status)
    return " | ".join(parts)
