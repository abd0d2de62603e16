"""The reward chart in the live panel, and what a dashboard remembers between frames.

The rewards column of the panel is usually shorter than the metrics column beside it, and
a big terminal has rows to spare under both: the chart fills that room. One spare row
holds a sparkline of the mean reward (``state.reward_history``, the last 200 steps the
fold already keeps); a wide panel with five rows or more gets small block charts instead:
the reward, then the first loss of the metrics table (``state.loss_history``, also one
point per step: both charts' x axis is the step). ASCII consoles get ASCII levels.

:class:`PanelMemory` also keeps the compact layout's column widths from following every
change of a number's length between frames (they change only when a number no longer
fits, or the terminal is resized), so the panel does not jitter. A dashboard (and
``aoff attach``, which draws with one) holds one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style

from .._core._view import RunView
from ._cells import NULL, Line
from ._content import label as _label
from ._glyphs import UNICODE_GLYPHS, Glyphs

__all__ = ["PanelMemory", "chart_lines"]

UNICODE_LEVELS = " ▁▂▃▄▅▆▇█"
ASCII_LEVELS = " _-=+*%#@"
#: a rewards column this wide (and rows to spare) gets block charts, not a sparkline
CHART_MIN_WIDTH = 48
CHART_ROWS = 4  # rows of one block chart, under its caption
_GREEN = Style.parse("green")
_YELLOW = Style.parse("yellow")
_DIM = Style.parse("dim")
_BOLD = Style.parse("bold")


class PanelMemory:
    """What a dashboard keeps between frames: the widest column widths."""

    def __init__(self) -> None:
        self._widths: dict[tuple[object, ...], list[int]] = {}

    @property
    def widths(self) -> dict[tuple[object, ...], list[int]]:
        """The widths kept so far, per section and terminal width (a copy; the dict is
        copied in one step, as the drawing thread may add to it meanwhile)."""
        return {k: list(v) for k, v in dict(self._widths).items()}

    def adopt(self, widths: dict[tuple[object, ...], list[int]]) -> None:
        """Take another dashboard's kept widths (the run's own, for ``aoff attach``): a
        panel drawn from the same state at the same size is then laid out the same."""
        self._widths.update((k, list(v)) for k, v in widths.items())

    def steady(
        self, key: tuple[object, ...], widths: Sequence[int], needs: Sequence[int]
    ) -> list[int]:
        """The widths used last time for ``key`` while they still give each column its
        need (and add up to the same total), else ``widths``: columns move only when a
        number no longer fits, not each time one changes length."""
        before = self._widths.get(key)
        if (
            before is not None
            and len(before) == len(widths)
            and sum(before) == sum(widths)
            and all(b >= n for b, n in zip(before, needs, strict=True))
        ):
            return list(before)
        self._widths[key] = list(widths)
        return list(widths)


def _buckets(values: Sequence[float], n: int) -> list[float | None]:
    if not values or n <= 0:
        return []
    n = min(n, len(values))
    out: list[float | None] = []
    for b in range(n):
        chunk = values[b * len(values) // n : (b + 1) * len(values) // n]
        finite = [v for v in chunk if math.isfinite(v)]
        out.append(sum(finite) / len(finite) if finite else None)
    return out


def _levels(values: list[float | None], steps: int) -> list[int | None]:
    known = [v for v in values if v is not None]
    if not known:
        return [None] * len(values)
    lo, hi = min(known), max(known)
    span = hi - lo
    out: list[int | None] = []
    for v in values:
        if v is None:
            out.append(None)
        elif span <= 0 or not math.isfinite(span):
            out.append(steps // 2)
        else:
            out.append(max(1, min(steps, round((v - lo) / span * steps))))
    return out


def _fit(text: str, width: int) -> str:
    return text[:width].ljust(width)


def _sparkline(
    label: str, values: Sequence[float], width: int, glyphs: Glyphs, style: Style
) -> Line:
    chars = UNICODE_LEVELS if glyphs is UNICODE_GLYPHS else ASCII_LEVELS
    room = width - len(label) - 1
    if room < 4:
        return [Segment(" " * width, NULL)]
    levels = _levels(_buckets(values, room), 8)
    spark = "".join("!" if lv is None else chars[lv] for lv in levels)
    return [
        Segment(label + " ", _BOLD),
        Segment(spark, style),
        Segment(" " * (room - len(spark)), NULL),
    ]


def _block_chart(
    name: str, values: Sequence[float], width: int, rows: int, glyphs: Glyphs, style: Style
) -> list[Line]:
    chars = UNICODE_LEVELS if glyphs is UNICODE_GLYPHS else ASCII_LEVELS
    finite = [v for v in values if math.isfinite(v)]
    rng = f"  {min(finite):.4g} .. {max(finite):.4g}" if finite else ""
    caption = _fit(f"{name}{rng}  (last {len(values)} steps)", width)
    lines: list[Line] = [
        [Segment(caption[: len(name)], _BOLD), Segment(caption[len(name) :], _DIM)]
    ]
    levels = _levels(_buckets(values, width), rows * 8)
    for r in range(rows):
        floor = (rows - 1 - r) * 8
        text = "".join(
            "!"
            if lv is None and r == rows - 1
            else " "
            if lv is None
            else chars[max(0, min(8, lv - floor))]
            for lv in levels
        )
        lines.append([Segment(text, style), Segment(" " * (width - len(text)), NULL)])
    return lines


def chart_lines(
    state: RunView, memory: PanelMemory | None, width: int, rows: int, glyphs: Glyphs
) -> list[Line]:
    """At most ``rows`` lines, each ``width`` cells wide, for the room under the rewards:
    nothing without a reward yet, a sparkline in one row (or a narrow panel), block
    charts of the reward and the chosen loss where there is room for them."""
    history = list(state.reward_history)
    if rows <= 0 or width < 12 or len(history) < 2:
        return []
    if width < CHART_MIN_WIDTH or rows < CHART_ROWS + 1:
        return [_sparkline("  Reward trend", history, width, glyphs, _GREEN)]
    # each caption says "last N steps": both charts have one point per step
    lines = _block_chart("Reward (mean)", history, width, CHART_ROWS, glyphs, _GREEN)
    loss = state.loss_name
    if loss and len(state.loss_history) >= 2 and rows >= 2 * (CHART_ROWS + 1):
        name = _label(loss)  # as the metrics table shows it
        lines += _block_chart(name, list(state.loss_history), width, CHART_ROWS, glyphs, _YELLOW)
    return lines
