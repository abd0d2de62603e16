"""A small table engine: pre-formatted cells in, Rich segments out.

Rich's ``Table`` measures every cell and lays each one out through ``Padding`` and
``Text`` wrapping; for the dashboard that was 90 % of a frame's 10-13 ms of CPU, paid four
times a second on the pump's thread while the training loop waits for the GIL. The
dashboard's tables have fixed shapes, so this module computes column widths once per
frame (with Rich's own ratio rule, so the columns land where ``Table`` put them) and emits
a cell that fits its column as ready-made segments. Only a cell that does not fit (it has
to wrap or be cut) goes through Rich's text layout (``Console.render_lines`` with the
options a ``Table`` would pass), so the output matches ``Table`` character for character
and style for style, and the layout code can tell when a number did not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from math import ceil

from rich.box import Box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

__all__ = [
    "EMPTY",
    "NULL",
    "Cell",
    "Col",
    "Line",
    "Painter",
    "blank",
    "merge",
    "ratio_distribute",
    "side_by_side",
]

NULL = Style.null()
#: table rows drawn between two pauses (``Painter.pause``)
ROWS_A_PIECE = 4
Line = list[Segment]
Span = tuple[str, Style]


class Cell:
    """One cell's content: styled spans (or a Rich ``Text`` for markup), and its width.

    ``whole`` marks a number: the layout that cuts or wraps one is not good enough.
    """

    __slots__ = ("spans", "text", "whole", "width")

    def __init__(self, *parts: str | Span, whole: bool = False) -> None:
        self.spans: tuple[Span, ...] = tuple(
            (p, NULL) if isinstance(p, str) else p
            for p in parts
            if (p if isinstance(p, str) else p[0])
        )
        self.text: Text | None = None
        self.whole = whole
        self.width = sum(len(t) if t.isascii() else cell_len(t) for t, _ in self.spans)

    @classmethod
    def of_text(cls, text: Text, *, whole: bool = False) -> Cell:
        """A cell holding a Rich ``Text`` (user markup: its styles resolve at render)."""
        cell = cls(whole=whole)
        cell.text = text
        cell.width = text.cell_len
        return cell

    @property
    def plain(self) -> str:
        if self.text is not None:
            return self.text.plain
        return "".join(t for t, _ in self.spans)

    def to_text(self) -> Text:
        if self.text is not None:
            return self.text.copy()
        return Text.assemble(*self.spans)

    def simple(self) -> bool:
        """Whether the fast path draws it as Rich would: one printable line."""
        return self.plain.isprintable()

    def segments(self, console: Console, base: Style) -> Iterable[Segment]:
        text = self.text
        if text is None:
            return [Segment(t, base + s if s else base) for t, s in self.spans]
        if not text.spans:  # Text.render drops the base style of a span-less text
            return [Segment(text.plain, base + console.get_style(text.style))]
        return [Segment(s.text, base + s.style if s.style else base) for s in text.render(console)]

    def __add__(self, other: Cell) -> Cell:
        if self.text is None and other.text is None:
            return Cell(*self.spans, *other.spans, whole=self.whole or other.whole)
        text = self.to_text()
        text.append_text(other.to_text())
        return Cell.of_text(text, whole=self.whole or other.whole)


EMPTY = Cell()


@dataclass(slots=True)
class Col:
    """A column: total width (pads included), pads, alignment, wrapping, styles."""

    width: int
    left: int = 0
    right: int = 0
    justify: JustifyMethod = "left"
    no_wrap: bool = False
    overflow: OverflowMethod = "ellipsis"
    style: Style = NULL
    header_style: Style = NULL


def ratio_distribute(total: int, ratios: Sequence[int], minimums: Sequence[int]) -> list[int]:
    """``rich._ratio.ratio_distribute``: integer shares of ``total``, as ``Table`` does."""
    total_ratio = sum(ratios)
    remaining = total
    out: list[int] = []
    for ratio, minimum in zip(ratios, minimums, strict=True):
        share = max(minimum, ceil(ratio * remaining / total_ratio)) if total_ratio > 0 else 0
        out.append(share)
        total_ratio -= ratio
        remaining -= share
    return out


_BLANK_SAFE: dict[Style | None, bool] = {}


def _blank_safe(style: Style | None) -> bool:
    """Whether blanks look the same in ``style`` as in none (no background, no lines)."""
    safe = _BLANK_SAFE.get(style)
    if safe is None:
        lines = style is not None and (
            style.underline or style.underline2 or style.strike or style.overline
        )
        safe = style is None or not (style.bgcolor or style.reverse or style.link or lines)
        _BLANK_SAFE[style] = safe
    return safe


def merge(line: Line) -> Line:
    """Neighbouring segments joined where that looks the same: same style, or blanks
    taken into a neighbour whose style shows nothing on blanks. Fewer segments for the
    console (and ``Live``, which splits them twice) to split, measure and style."""
    out: Line = []
    for seg in line:
        if out:
            last = out[-1]
            if last.style is seg.style or (
                not seg.text.strip(" ") and last.style is not None and _blank_safe(last.style)
            ):
                out[-1] = Segment(last.text + seg.text, last.style)
                continue
            if not last.text.strip(" ") and _blank_safe(seg.style) and last.style is NULL:
                out[-1] = Segment(last.text + seg.text, seg.style)
                continue
        out.append(seg)
    return out


def blank(width: int, style: Style = NULL) -> Line:
    return [Segment(" " * max(width, 0), style)]


def no_pause() -> None:
    """No pacing: the default of every renderer that takes a ``pause``."""


#: pacing for a long drawing: called between two pieces of it, so a training loop that
#: shares the GIL waits for a piece, not for a frame (the pump passes it in; a no-op by
#: default)
Pause = Callable[[], None]


class Painter:
    """Lays cells out for one frame. ``cut`` turns true when a ``whole`` cell did not fit,
    ``cropped`` when any single-line cell had to be cut; ``pause`` paces a long table."""

    def __init__(self, console: Console, options: ConsoleOptions, pause: Pause = no_pause) -> None:
        self.console = console
        self.options = options
        self.pause = pause
        self.cut = False
        self.cropped = False

    def cell(self, cell: Cell, col: Col, base: Style) -> list[Line]:
        """The cell's lines, exactly ``col.width`` wide. The fast path leaves the padding
        unstyled (the column's colour on blanks shows nothing) so it merges with its
        neighbours into fewer segments."""
        inner = col.width - col.left - col.right
        if (
            cell.width <= inner
            and cell.simple()
            and (col.justify != "right" or not cell.plain.endswith(" "))  # Rich strips it
        ):
            body = list(cell.segments(self.console, base))
            pad = inner - cell.width
            if col.justify == "right":
                before, after = col.left + pad, col.right
            else:
                before, after = col.left, pad + col.right
            if before:
                body.insert(0, Segment(" " * before, NULL))
            if after:
                body.append(Segment(" " * after, NULL))
            return [body]
        left = [Segment(" " * col.left, base)] if col.left > 0 else []
        right = [Segment(" " * col.right, base)] if col.right > 0 else []
        if cell.width > inner:
            self.cut = self.cut or cell.whole
            self.cropped = self.cropped or col.no_wrap
        options = self.options.update(
            width=max(inner, 1),
            justify=col.justify,
            no_wrap=col.no_wrap,
            overflow=col.overflow,
            height=None,
            highlight=False,
        )
        lines = self.console.render_lines(cell.to_text(), options, style=base, pad=True)
        return [left + line + right for line in lines]

    def row(
        self, cells: Sequence[Cell], cols: Sequence[Col], divider: str, *, header: bool = False
    ) -> list[Line]:
        """One table row; short cells are filled with blank lines (headers at the top)."""
        rendered = [
            self.cell(c, col, col.header_style if header else col.style)
            for c, col in zip(cells, cols, strict=True)
        ]
        height = max(len(r) for r in rendered)
        sep = Segment(divider, NULL) if divider else None
        lines: list[Line] = []
        for i in range(height):
            line: Line = []
            for k, (r, col) in enumerate(zip(rendered, cols, strict=True)):
                if k and sep is not None:
                    line.append(sep)
                at = i - (height - len(r)) if header else i
                if 0 <= at < len(r):
                    line.extend(r[at])
                else:
                    line.extend(blank(col.width))
            lines.append(merge(line))
        return lines

    def table(
        self,
        cols: Sequence[Col],
        header: Sequence[Cell],
        rows: Sequence[Sequence[Cell]],
        table_box: Box,
    ) -> list[Line]:
        """A ``SIMPLE_HEAVY``-style table without edges: header, rule, rows."""
        box = table_box.substitute(self.options, safe=self.console.safe_box)
        lines = self.row(header, cols, box.head_vertical, header=True)
        widths = [c.width for c in cols]
        lines.append([Segment(box.get_row(widths, "head", edge=False), NULL)])
        for i, row in enumerate(rows):
            if i % ROWS_A_PIECE == ROWS_A_PIECE - 1:
                self.pause()  # a long table in pieces where the GIL is shared
            divider = box.foot_vertical if i == len(rows) - 1 else box.mid_vertical
            lines.extend(self.row(row, cols, divider))
        return lines

    def exact(self, lines: list[Line], width: int, actual: int) -> list[Line]:
        """``lines`` (``actual`` wide) cut or padded to ``width``: only when the columns'
        minimums did not fit, on a terminal too small for any layout."""
        if actual == width:
            return lines
        return [Segment.adjust_line_length(line, max(width, 0)) for line in lines]


def side_by_side(left: list[Line], gap: int, right: list[Line], lw: int, rw: int) -> list[Line]:
    """Two blocks of lines next to each other, the shorter filled with blank lines."""
    out: list[Line] = []
    spacer = Segment(" " * gap, NULL)
    for i in range(max(len(left), len(right))):
        line = list(left[i]) if i < len(left) else blank(lw)
        line.append(spacer)
        line.extend(right[i] if i < len(right) else blank(rw))
        out.append(line)
    return out
