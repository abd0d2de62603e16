"""The dashboard's renderables under one name, for the code that imports them from here.

Every renderable is a pure function of ``(state, now, glyphs)`` (the live panel also of
the size it is rendered at): no clock, no I/O. That is what lets the pump render from a
worker thread on a snapshot, lets the plain-line and summary outputs share the exact
formatting of the live panel, and lets the tests pin the seed's layout (labels,
orderings, colours, thresholds) with golden files instead of a terminal.

The pieces live in their own modules: :mod:`._glyphs` (Unicode/ASCII symbols),
:mod:`._content` (what the panel says), :mod:`._cells` (cells to segments),
:mod:`._panel` (the wide and compact layouts) and :mod:`._summary` (the end-of-run panel
and the plain log line).
"""

from __future__ import annotations

from ._content import (
    COLLECTOR_TIMING_LABELS,
    COLLECTOR_TIMING_ORDER,
    collector_rows,
    eta_seconds,
    header,
    reward_trend,
)
from ._glyphs import ASCII_GLYPHS, UNICODE_GLYPHS, Glyphs, glyphs_for, glyphs_for_encoding
from ._panel import DashboardPanel, dashboard_panel, metrics_table, reward_table, timing_table
from ._summary import plain_line, summary_panel

__all__ = [
    "ASCII_GLYPHS",
    "COLLECTOR_TIMING_LABELS",
    "COLLECTOR_TIMING_ORDER",
    "UNICODE_GLYPHS",
    "DashboardPanel",
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
