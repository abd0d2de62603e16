"""A run group's live table: one line per run, or the IQM and spread when runs are many.

Why not N dashboards: a group of seeds is read side by side, and N panels of one run each
would not fit a terminal; one table of the runs' latest values does. Rendered from a
snapshot (:class:`GroupRow`, taken on the group's pump loop), never from live state.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

__all__ = ["MANY_RUNS", "GroupRow", "GroupScreen", "group_table", "iqm"]

#: above this many runs the table shows the IQM and the spread across runs, not each run
MANY_RUNS = 12
#: metrics shown as columns at most (the first ones logged)
MAX_COLUMNS = 5


@dataclass(frozen=True)
class GroupRow:
    """One run's latest values, copied on the pump's loop."""

    run: str
    iteration: int
    reward: float | None
    metrics: dict[str, float] = field(default_factory=dict)


def iqm(values: Sequence[float]) -> float:
    """The interquartile mean: the mean of the middle half (25 % trimmed each side, as
    rliable's ``aggregate_iqm`` with scipy's ``trim_mean``)."""
    xs = sorted(v for v in values if not math.isnan(v))
    if not xs:
        return math.nan
    cut = int(0.25 * len(xs))
    mid = xs[cut : len(xs) - cut]
    return sum(mid) / len(mid)


def _fmt(v: float | None) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def _columns(rows: Iterable[GroupRow]) -> list[str]:
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r.metrics))
    return list(keys)[:MAX_COLUMNS]


def group_table(title: str, rows: Sequence[GroupRow]) -> Table:
    """The table for ``rows``: a line per run, or IQM/min/max lines when they are many."""
    keys = _columns(rows)
    table = Table(title=title, title_justify="left", expand=False)
    for name in ("run", "step", "reward", *keys):
        table.add_column(name, justify="left" if name == "run" else "right")
    if len(rows) <= MANY_RUNS:
        for r in rows:
            cells = [_fmt(r.metrics.get(k)) for k in keys]
            table.add_row(r.run, str(r.iteration), _fmt(r.reward), *cells)
        return table

    def col(get: Any) -> list[float]:
        return [v for v in (get(r) for r in rows) if v is not None]

    steps = [float(r.iteration) for r in rows]
    cols = [col(lambda r: r.reward)] + [col(lambda r, k=k: r.metrics.get(k)) for k in keys]
    for label, agg in (("IQM", iqm), ("min", min), ("max", max)):
        cells = [_fmt(agg(c)) if c else "-" for c in cols]
        table.add_row(f"{label} of {len(rows)}", _fmt(agg(steps)), *cells)
    return table


class GroupScreen:
    """Shows the group's table: live on a terminal (``live``), else only at the end."""

    def __init__(self, title: str, *, live: bool, console: Console | None = None) -> None:
        self.title = title
        self.console = console or Console(stderr=True)
        self._live: Live | None = None
        self._want_live = live and self.console.is_terminal
        self._last: Sequence[GroupRow] = ()

    def show(self, rows: Sequence[GroupRow]) -> None:
        """A new snapshot (the pump's loop, at most ``refresh_per_second`` a second)."""
        self._last = rows
        if not self._want_live:
            return
        table = group_table(self.title, rows)
        if self._live is None:
            self._live = Live(table, console=self.console, auto_refresh=False)
            self._live.start()
        self._live.update(table, refresh=True)

    def close(self) -> None:
        """The final snapshot's table, once (the live one stops where it is)."""
        if self._live is not None:
            self._live.update(group_table(self.title, self._last), refresh=True)
            self._live.stop()
            self._live = None
            return
        if self._last:
            self.console.print(group_table(self.title, self._last))
