"""``aoff compare``'s terminal chart: each group's IQM curve over steps, with its band.

Why a module of its own: the chart is a grid of characters sized to the terminal (80
columns at most, so it fits a default terminal and a pasted log), drawn with Rich styles
on a colour terminal and plain characters elsewhere. Each group has a mark of its own
(``●■▲◆`` on Unicode, ``*o+x`` on ASCII) for its IQM and a dim dot for its 95 % band;
where groups overlap, the later one drawn wins the cell. The y axis is labelled with the
range's ends and middle, the x axis with the first and last step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def curve_chart(
    curves: Sequence[tuple[str, Curve]],
    width: int,
    *,
    height: int = 12,
    ascii_only: bool = False,
    metric: str = "",
) -> Text:
    """The chart of ``curves`` (name, curve) in ``min(width, MAX_WIDTH)`` columns."""
    width = min(width, MAX_WIDTH)
    cols = max(width - _LABEL - 1, 8)
    finite = [v for _, c in curves for v in (*c.lo, *c.hi, *c.iqm) if math.isfinite(v)]
    xs = [s for _, c in curves for s in c.steps]
    if not finite or not xs:
        return Text("(nothing to draw)")
    lo, hi = min(finite), max(finite)
    if hi == lo:
        lo, hi = lo - 1.0, hi + 1.0
    x0, x1 = min(xs), max(xs)
    span = (x1 - x0) or 1.0
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * cols for _ in range(height)]

    def row(v: float) -> int:
        return height - 1 - round((v - lo) / (hi - lo) * (height - 1))

    dot = "." if ascii_only else "·"
    for i, (_, c) in enumerate(curves):
        m, colour = mark(i, ascii_only)
        cells: dict[int, tuple[float, float, float]] = {}
        for s, a, b, y in zip(c.steps, c.lo, c.hi, c.iqm, strict=True):
            cells[round((s - x0) / span * (cols - 1))] = (a, b, y)
        for x, (a, b, y) in cells.items():
            if not all(math.isfinite(v) for v in (a, b, y)):
                continue
            for r in range(row(b), row(a) + 1):
                if grid[r][x][0] in (" ", dot):
                    grid[r][x] = (dot, f"dim {colour}")
            grid[row(y)][x] = (m, colour)
    out = Text(no_wrap=True, overflow="crop")
    if metric:
        out.append(f"{metric} (IQM over runs; dots: 95 % interval)\n", "bold")
    for r in range(height):
        if r == 0:
            label = _label(hi)
        elif r == height - 1:
            label = _label(lo)
        elif r == height // 2:
            label = _label((hi + lo) / 2)
        else:
            label = " " * (_LABEL - 1)
        out.append(label + " |")
        for ch, style in grid[r]:
            out.append(ch, style or None)
        out.append("\n")
    out.append(" " * (_LABEL - 1) + " +" + "-" * cols + "\n")
    left, right = f"step {x0:,.0f}", f"{x1:,.0f}"
    gap = max(cols - len(left) - len(right), 1)
    out.append(" " * (_LABEL + 1) + left + " " * gap + right + "\n")
    legend = Text(" " * (_LABEL + 1))
    for i, (name, _) in enumerate(curves):
        m, colour = mark(i, ascii_only)
        legend.append(m, colour)
        legend.append(f" {name}  ")
    out.append_text(legend)
    return out
