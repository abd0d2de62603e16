"""``aoff show``'s tag table: one line per tag, its numbers and a sparkline, to fit a width.

Why a module of its own: the layout rule (what shrinks or goes first when the terminal is
narrow: the sparkline, then the ``first`` and ``min`` columns, then a tag is cut in the
middle, never wrapped) and the sparkline itself are rendering, apart from reading the
run and from the command's flow (``_show``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from .._display._format import fmt_number
from .._runfolder.reading._rundata import RunData, TagStats

__all__ = [
    "ASCII_BARS",
    "SPARK_WIDTH",
    "UNICODE_BARS",
    "bars_for",
    "fmt_value",
    "sparkline",
    "table_layout",
    "tag_table",
]

UNICODE_BARS = "▁▂▃▄▅▆▇█"
ASCII_BARS = "_.-:=+*#"
SPARK_WIDTH = 24


def bars_for(console: Console) -> str:
    """The block characters if the console's encoding can show them, else ASCII ones."""
    try:
        UNICODE_BARS.encode(console.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return ASCII_BARS
    return UNICODE_BARS


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH, bars: str = UNICODE_BARS) -> str:
    """``values`` squeezed into ``width`` characters (each the mean of its bucket).

    Non-finite values are left out of the means; a bucket with none left shows ``!``
    (a NaN or infinity in a curve must stay visible). A flat curve sits mid-height.
    """
    if not values:
        return ""
    n = min(width, len(values))
    buckets: list[float | None] = []
    for b in range(n):
        chunk = values[b * len(values) // n : (b + 1) * len(values) // n]
        finite = [v for v in chunk if math.isfinite(v)]
        buckets.append(sum(finite) / len(finite) if finite else None)
    known = [v for v in buckets if v is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    top = len(bars) - 1
    out: list[str] = []
    for v in buckets:
        if v is None:
            out.append("!")
        elif hi - lo <= 0 or not math.isfinite(hi - lo):
            out.append(bars[top // 2])
        else:
            out.append(bars[min(top, int((v - lo) / (hi - lo) * top + 0.5))])
    return "".join(out)


def fmt_value(v: float | None) -> str:
    """A number as the tables print it; ``--`` when there is none."""
    return "--" if v is None else fmt_number(v)


_COLUMNS = ("first", "last", "min", "max")
_DROP_ORDER = ("first", "min")  # when the width runs short: these go first
MIN_SPARK = 8
MIN_TAG = 16


def _cells(t: TagStats) -> dict[str, str]:
    return {
        "first": fmt_value(t.first),
        "last": fmt_value(t.last),
        "min": fmt_value(t.lo),
        "max": fmt_value(t.hi),
    }


def table_layout(
    width: int, tag_width: int, number_widths: dict[str, int]
) -> tuple[list[str], int, int]:
    """Which number columns, how wide a sparkline and tag column fit in ``width``.

    The sparkline shrinks first (to ``MIN_SPARK``), then ``first`` and ``min`` go, then the
    sparkline; a tag column that still does not fit is cut in the middle (never wrapped).
    Returns ``(columns, spark_width, tag_width)``; columns are two spaces apart."""
    cols = list(_COLUMNS)
    spark = SPARK_WIDTH

    def total() -> int:
        return tag_width + sum(number_widths[c] + 2 for c in cols) + (spark + 2 if spark else 0)

    while total() > width:
        over = total() - width
        if spark > MIN_SPARK:
            spark = max(MIN_SPARK, spark - over)
        elif any(c in cols for c in _DROP_ORDER):
            cols.remove(next(c for c in _DROP_ORDER if c in cols))
        elif spark:
            spark = 0
        else:
            tag_width = max(MIN_TAG, tag_width - over)
            break
    return cols, spark, tag_width


def _fit_tag(tag: str, width: int, ellipsis: str) -> str:
    if len(tag) <= width:
        return tag
    keep = width - len(ellipsis)
    head = keep // 2
    return tag[:head] + ellipsis + tag[len(tag) - (keep - head) :]


def tag_table(data: RunData, bars: str, width: int = 80) -> Text:
    """One line per tag: first, last, min, max (finite values) and a sparkline, laid out
    to fit ``width`` columns without wrapping (see :func:`table_layout`)."""
    rows = [(tag, _cells(t), t.curve) for tag, t in data.tags.items() if t.count]
    number_widths = {c: max([len(c)] + [len(r[1][c]) for r in rows]) for c in _COLUMNS}
    tag_w = max([3] + [len(r[0]) for r in rows])
    cols, spark, tag_w = table_layout(width, tag_w, number_widths)
    ellipsis = "…" if bars is UNICODE_BARS else "~"
    header = Text("tag".ljust(tag_w), style="bold")
    for c in cols:
        header.append("  " + c.rjust(number_widths[c]), style="bold")
    if spark:
        header.append("  curve", style="bold")
    lines = [header]
    for tag, cells, curve in rows:
        line = Text(_fit_tag(tag, tag_w, ellipsis).ljust(tag_w))
        for c in cols:
            line.append("  " + cells[c].rjust(number_widths[c]))
        if spark:
            line.append("  " + sparkline(curve, spark, bars), style="cyan")
        lines.append(line)
    out = Text("\n").join(lines)
    out.no_wrap = True
    out.overflow = "crop"
    return out
