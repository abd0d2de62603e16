"""The panel's sections (metrics, rewards, timings) as tables, wide or compact.

Kept apart from the panel's layout (:mod:`._panel`, which decides where each section
goes and how much room it gets): this module turns a section's rows into lines of
exactly the width it is given, with Rich ``Table``'s column rules (:mod:`._cells`).
Compact widths can be held steady across frames by a :class:`~._chart.PanelMemory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.style import Style

from ._cells import NULL, Cell, Col, Line, Painter, ratio_distribute
from ._content import Pair
from ._glyphs import Glyphs

if TYPE_CHECKING:
    from ._chart import PanelMemory

__all__ = [
    "METRICS",
    "REWARDS",
    "TIMING",
    "Spec",
    "numbers_fit",
    "section",
    "section_need",
    "share",
    "timing_spec",
]

_WHITE = Style.parse("white")
_YELLOW = Style.parse("yellow")

# (title, ratio, right-justified, column style), and the header style, per section
Spec = tuple[tuple[tuple[str, int, bool, Style], ...], Style]
METRICS: Spec = (
    (("Losses & Metrics", 2, False, _WHITE), ("Value", 1, True, _YELLOW)),
    Style.parse("bold cyan"),
)
REWARDS: Spec = (
    (("Rewards", 1, False, _WHITE), ("Value", 2, True, NULL)),
    Style.parse("bold green"),
)
_TIMING_HEADER = Style.parse("bold blue")


def timing_spec(titles: Sequence[str]) -> Spec:
    """The timing section's columns: a label and a value column per title (the titles
    of the columns that have rows: Learner, Collector, System)."""
    return (
        tuple(
            col
            for title in titles
            for col in ((title, 2, False, _WHITE), ("Value", 1, True, _YELLOW))
        ),
        _TIMING_HEADER,
    )


TIMING: Spec = timing_spec(("Learner", "Collector", "System"))


def _columns(
    spec: Spec, width: int, glyphs: Glyphs, *, no_wrap: bool, widths: Sequence[int] = ()
) -> list[Col]:
    """The columns of a section ``width`` wide (dividers included), pads as ``Table``'s
    with ``pad_edge=False``; by ratio unless ``widths`` gives them. A label column (a
    tag's name, left-aligned) never wraps, whatever ``no_wrap`` says of the values: a
    name too long for it is cut with an ellipsis (a name wrapped at its spaces reads as
    two rows, and pushes the panel past its height)."""
    specs, header_style = spec
    n = len(specs)
    pads = _pads(n, compact=no_wrap and bool(widths))
    if not widths:
        widths = ratio_distribute(
            width - (n - 1), [s[1] for s in specs], [1 + left + right for left, right in pads]
        )
    return [
        Col(
            w,
            left,
            right,
            "right" if right_just else "left",
            no_wrap or not right_just,
            glyphs.overflow,
            style,
            header_style,
        )
        for w, (left, right), (_, _, right_just, style) in zip(widths, pads, specs, strict=True)
    ]


def _pads(n: int, *, compact: bool) -> list[tuple[int, int]]:
    """Left and right pads of ``n`` columns: ``Table``'s ``(0, 1)`` without the outer
    edges; compact drops the pad after a label (its value is right-aligned anyway)."""
    return [
        (0 if i == 0 else 1, 0 if i == n - 1 or (compact and i % 2 == 0) else 1) for i in range(n)
    ]


def share(total: int, needs: Sequence[int]) -> list[int]:
    """``total`` split so that each need is met and the rest spread evenly; when it is
    short, the widest are cut first (to a common cap), so short labels stay whole."""
    if sum(needs) <= total:
        extra = ratio_distribute(total - sum(needs), [1] * len(needs), [0] * len(needs))
        return [n + e for n, e in zip(needs, extra, strict=True)]
    cap = max(needs)
    while cap > 0 and sum(min(n, cap) for n in needs) > total:
        cap -= 1
    out = [min(n, cap) for n in needs]
    rest = total - sum(out)
    for i, n in enumerate(needs):
        if rest > 0 and n > out[i]:
            out[i] += 1
            rest -= 1
    return out


def _needs(spec: Spec, columns: Sequence[Sequence[Pair]]) -> list[int]:
    """Each column's width for its widest cell (title included), pads included."""
    pads = _pads(2 * len(columns), compact=True)
    needs: list[int] = []
    for k, pairs in enumerate(columns):
        for j in (0, 1):
            i = 2 * k + j
            widest = max([Cell(spec[0][i][0]).width, *(pair[j].width for pair in pairs)])
            needs.append(widest + sum(pads[i]))
    return needs


def section_need(spec: Spec, columns: Sequence[Sequence[Pair]]) -> int:
    return sum(_needs(spec, columns)) + 2 * len(columns) - 1


def _fitted(spec: Spec, width: int, columns: Sequence[Sequence[Pair]]) -> list[int]:
    """Compact widths: value columns as wide as their widest value, label columns share
    the rest (each its widest label first)."""
    needs = _needs(spec, columns)
    values = needs[1::2]
    labels = share(width - (len(needs) - 1) - sum(values), needs[0::2])
    return [w for pair in zip(labels, values, strict=True) for w in pair]


def numbers_fit(spec: Spec, width: int, columns: Sequence[Sequence[Pair]], g: Glyphs) -> bool:
    """Whether every ``whole`` value fits its column of the wide layout."""
    cols = _columns(spec, width, g, no_wrap=True)
    for k, pairs in enumerate(columns):
        col = cols[2 * k + 1]
        room = col.width - col.left - col.right
        if any(v.whole and v.width > room for _, v in pairs):
            return False
    return True


def section(
    p: Painter,
    spec: Spec,
    width: int,
    columns: Sequence[Sequence[Pair]],
    glyphs: Glyphs,
    *,
    compact: bool,
    memory: PanelMemory | None = None,
) -> list[Line]:
    widths: Sequence[int] = _fitted(spec, width, columns) if compact else ()
    if widths and memory is not None:  # the last frame's widths, while the values fit
        needs = [w if i % 2 else 0 for i, w in enumerate(widths)]
        widths = memory.steady((spec[0][0][0], width, len(columns)), widths, needs)
    no_wrap = compact or spec[1] is _TIMING_HEADER
    cols = _columns(spec, width, glyphs, no_wrap=no_wrap, widths=widths)
    header = [Cell(title) for title, *_ in spec[0]]
    rows: list[list[Cell]] = []
    for i in range(max(len(c) for c in columns)):
        row: list[Cell] = []
        for pairs in columns:
            row.extend(pairs[i] if i < len(pairs) else (Cell(), Cell()))
        rows.append(row)
    actual = sum(c.width for c in cols) + len(cols) - 1
    return p.exact(p.table(cols, header, rows, glyphs.table_box), width, actual)
