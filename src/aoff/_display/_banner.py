"""What is drawn around the live panel: the alert banner above it, the logger's own
cost below it.

Why renderables of their own: the panel's rows are laid out from what was logged, and
neither an alert nor aoff's cost is a row of it; drawn above and below the panel (the
dashboard, and ``aoff attach``, which draws the same dashboard), they change nothing in
it. The banner is red and first, so it is seen; the footer is one dim line.

The three share the terminal's height: the panel is laid out in what the banner's and
the footer's lines leave (:class:`Framed`), so a frame never runs past the bottom of
the screen, where Rich's ``Live`` would replace the panel's bottom border with ``...``.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

from .._core._view import RunView

__all__ = ["SHOWN", "Framed", "alert_banner", "cost_line", "with_banner"]

#: the newest alerts the banner lists (the rest are counted)
SHOWN = 3


def alert_banner(state: RunView) -> Text | None:
    """The banner for ``state``'s alerts (None while there are none)."""
    alerts = state.alerts
    if not alerts:
        return None
    stop = any(a.stop for a in alerts)
    head = f" {len(alerts)} alert{'s' if len(alerts) > 1 else ''}"
    head += " - the loop was asked to stop " if stop else " "
    text = Text(head, style="bold white on red")
    for a in alerts[-SHOWN:]:
        text.append(f"\n {a.message} [{a.rule}]", style="bold red")
    if len(alerts) > SHOWN:
        text.append(f"\n ... and {len(alerts) - SHOWN} earlier (alerts.jsonl)", style="red")
    return text


def cost_line(cost: Mapping[str, float]) -> str:
    """``logging cost the loop 0.2 %, p99 call 6 us; agent lag 0.1 s, CPU 4 %`` from the
    ``aoff/...`` tags (``""`` before the first)."""
    parts = []
    share = cost.get("aoff/hot_path_share_percent")
    p99 = cost.get("aoff/hot_path_p99_us")
    if share is not None and p99 is not None:
        parts.append(f"logging cost the loop {share:.1f} %, p99 call {p99:.0f} \u00b5s")
    lag = cost.get("aoff/agent_lag_s")
    cpu = cost.get("aoff/agent_cpu_percent")
    if lag is not None:
        agent = f"agent lag {lag:.2f} s"
        parts.append(agent + (f", CPU {cpu:.0f} %" if cpu is not None else ""))
    return "; ".join(parts)


class Framed:
    """The panel with the banner above it and the footer below, the panel given the
    height they leave (the options' height, else the console's)."""

    def __init__(self, banner: Text | None, panel: RenderableType, footer: Text | None) -> None:
        self.banner = banner
        self.panel = panel
        self.footer = footer

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        height = options.height or options.size.height
        lines: list[list[Segment]] = []
        if self.banner is not None:
            lines += console.render_lines(self.banner, options.update(height=None), pad=False)
        below: list[list[Segment]] = []
        if self.footer is not None:  # one line: cut with an ellipsis, never wrapped
            below = console.render_lines(self.footer, options.update(height=None), pad=False)
        room = max(height - len(lines) - len(below), 1)
        new_line = Segment.line()
        for line in lines:
            yield from line
            yield new_line
        yield from console.render(self.panel, options.update(height=room))
        for line in below:
            yield from line
            yield new_line


def with_banner(state: RunView, panel: RenderableType) -> RenderableType:
    """``panel`` with the banner above it and the cost line below, when they exist."""
    banner = alert_banner(state)
    line = cost_line(state.cost)
    if banner is None and not line:
        return panel
    footer = Text(" " + line, style="dim", no_wrap=True, overflow="ellipsis") if line else None
    return Framed(banner, panel, footer)
