"""``aoff compare``'s terminal chart: each group's IQM curve over steps, with its band.

Why a module of its own: the chart is a grid of characters sized to the terminal (80
columns at most, so it fits a default terminal and a pasted log), drawn with Rich styles
on a colour terminal and plain characters elsewhere. Each group has a mark of its own
(``●■▲◆`` on Unicode, ``*o+x`` on ASCII) for its IQM, a dim dot for its 95 % band, and
a dim ``┊`` (``:``) for its envelope: the min to the max of every run's points in the
column, so a one-point spike is drawn even where the IQM and its interval smooth it
away (a column takes the min and max of all the grid steps it stands for). Where groups
overlap, the later one drawn wins the cell. The y axis is labelled with the
range's ends and middle, the x axis with the first and last step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from ._stats import Curve

__all__ = ["MAX_WIDTH", "curve_chart"]

MAX_WIDTH = 80
_MARKS = ("●", "■", "▲", "◆", "★", "✚")
_ASCII_MARKS = ("*", "o", "+", "x", "#", "%")
_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "red")
_LABEL = 9  # the y labels' width, and a space


def _label(v: float) -> str:
    return f"{v:.4g}"[: _LABEL - 1].rjust(_LABEL - 1)


def mark(i: int, ascii_only: bool) -> tuple[str, str]:
    """Group ``i``'s mark and colour."""
    marks = _ASCII_MARKS if ascii_only else _MARKS
    return marks[i % len(marks)], _COLOURS[i % len(_COLOURS)]


@dataclass(frozen=True)
class _Scale:
    """Where a value falls on the chart: rows from the top, columns from the first step."""

    lo: float
    hi: float
    x0: float
    x1: float
    cols: int
    height: int

    def row(self, v: float) -> int:
        return self.height - 1 - round((v - self.lo) / (self.hi - self.lo) * (self.height - 1))

    def col(self, step: float) -> int:
        return round((step - self.x0) / ((self.x1 - self.x0) or 1.0) * (self.cols - 1))


def curve_chart(
    curves: Sequence[tuple[str, Curve]],
    width: int,
    *,
    height: int = 12,
    ascii_only: bool = False,
    metric: str = "",
    x: str = "step",
) -> Text:
    """The chart of ``curves`` (name, curve) in ``min(width, MAX_WIDTH)`` columns."""
    width = min(width, MAX_WIDTH)
    cols = max(width - _LABEL - 1, 8)
    drawn = [(*c.lo, *c.hi, *c.iqm, *c.env_lo, *c.env_hi) for _, c in curves]
    finite = [v for values in drawn for v in values if math.isfinite(v)]
    xs = [s for _, c in curves for s in c.steps]
    if not finite or not xs:
        return Text("(nothing to draw)")
    lo, hi = min(finite), max(finite)
    if hi == lo:
        lo, hi = lo - 1.0, hi + 1.0
    scale = _Scale(lo, hi, min(xs), max(xs), cols, height)
    out = Text(no_wrap=True, overflow="crop")
    if metric:
        edge = ":" if ascii_only else "┊"
        out.append(
            f"{metric} (IQM over runs; dots: 95 % interval; {edge} min to max of the runs)\n",
            "bold",
        )
    _axes(out, _plot(curves, scale, ascii_only), scale, x)
    legend = Text(" " * (_LABEL + 1))
    for i, (name, _) in enumerate(curves):
        m, colour = mark(i, ascii_only)
        legend.append(m, colour)
        legend.append(f" {name}  ")
    out.append_text(legend)
    return out


def _plot(
    curves: Sequence[tuple[str, Curve]], scale: _Scale, ascii_only: bool
) -> list[list[tuple[str, str]]]:
    """The grid of (character, style) cells: every group's envelope, then each group's
    interval band and its IQM mark."""
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * scale.cols for _ in range(scale.height)]
    dot = "." if ascii_only else "·"
    edge = ":" if ascii_only else "┊"
    for i, (_, c) in enumerate(curves):
        _, colour = mark(i, ascii_only)
        band: dict[int, tuple[float, float]] = {}  # a column: every grid step's min, max
        for s, a, b in zip(c.steps, c.env_lo, c.env_hi, strict=True):
            if math.isfinite(a) and math.isfinite(b):
                x = scale.col(s)
                was = band.get(x, (a, b))
                band[x] = (min(was[0], a), max(was[1], b))
        for x, (a, b) in band.items():
            for r in range(scale.row(b), scale.row(a) + 1):
                if grid[r][x][0] == " ":
                    grid[r][x] = (edge, f"dim {colour}")
    for i, (_, c) in enumerate(curves):
        m, colour = mark(i, ascii_only)
        cells: dict[int, tuple[float, float, float]] = {}
        for s, a, b, y in zip(c.steps, c.lo, c.hi, c.iqm, strict=True):
            cells[scale.col(s)] = (a, b, y)
        for x, (a, b, y) in cells.items():
            if not all(math.isfinite(v) for v in (a, b, y)):
                continue
            for r in range(scale.row(b), scale.row(a) + 1):
                if grid[r][x][0] in (" ", dot, edge):
                    grid[r][x] = (dot, f"dim {colour}")
            grid[scale.row(y)][x] = (m, colour)
    return grid


def _axes(out: Text, grid: list[list[tuple[str, str]]], scale: _Scale, x: str = "step") -> None:
    """``grid`` onto ``out`` with the y labels (ends and middle) and the x axis."""
    height = scale.height
    for r in range(height):
        if r == 0:
            label = _label(scale.hi)
        elif r == height - 1:
            label = _label(scale.lo)
        elif r == height // 2:
            label = _label((scale.hi + scale.lo) / 2)
        else:
            label = " " * (_LABEL - 1)
        out.append(label + " |")
        for ch, style in grid[r]:
            out.append(ch, style or None)
        out.append("\n")
    out.append(" " * (_LABEL - 1) + " +" + "-" * scale.cols + "\n")
    left, right = f"{x} {scale.x0:,.0f}", f"{scale.x1:,.0f}"
    gap = max(scale.cols - len(left) - len(right), 1)
    out.append(" " * (_LABEL + 1) + left + " " * gap + right + "\n")
