"""The alert banner: a red block above the live panel once a rule of the run fired.

Why a renderable of its own: the panel's rows are laid out from what was logged, and an
alert is not a row of it; drawn above the panel (the dashboard, and ``aoff attach``,
which draws the same dashboard), it is seen first and changes nothing below it.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from .._core._state import State

__all__ = ["SHOWN", "alert_banner", "with_banner"]

#: the newest alerts the banner lists (the rest are counted)
SHOWN = 3


def alert_banner(state: State) -> Text | None:
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


def with_banner(state: State, panel: RenderableType) -> RenderableType:
    """``panel`` with the banner above it, when there is one."""
    banner = alert_banner(state)
    return panel if banner is None else Group(banner, panel)
