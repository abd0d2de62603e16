"""The live panel, laid out for the terminal it is drawn on.

A big terminal gets the seed logger's layout (header line, metrics | rewards, a
Learner/Collector/System table), drawn to the character as the seed's Rich tables drew
it. On a small one (80x24 is common: laptops, split panes, ssh) that layout cut numbers
(``317,4…``), lost the header's tail and grew taller than the screen, so ``Live`` cropped
it. The panel is therefore a renderable that picks its layout when Rich renders it, from
the width and height it is given: the wide layout when every number fits whole and the
panel fits the height, else a compact one (header wrapped by fields, value columns sized
to their numbers, labels cut instead of wrapped, spacer lines only when there is room).

Both layouts are built from :mod:`._content` and drawn by :mod:`._cells` straight to
segments: a frame costs well under Rich ``Table``'s 10+ ms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from rich import box as rich_box
from rich.cells import set_cell_size
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style

from .._core._state import State
from ._cells import NULL, Cell, Col, Line, Painter, blank, merge, ratio_distribute, side_by_side
from ._content import Pair, header_fields, join_fields, metric_rows, reward_rows, timing_columns
from ._glyphs import UNICODE_GLYPHS, Glyphs

__all__ = ["DashboardPanel", "dashboard_panel", "metrics_table", "reward_table", "timing_table"]

TITLE = "aoff Off-Policy Training"
_BORDER = Style.parse("bright_blue")
_BOLD = Style.parse("bold")
_WHITE = Style.parse("white")
_YELLOW = Style.parse("yellow")

# (title, ratio, right-justified, column style), and the header style, per section
_Spec = tuple[tuple[tuple[str, int, bool, Style], ...], Style]
_METRICS: _Spec = (
    (("Losses & Metrics", 2, False, _WHITE), ("Value", 1, True, _YELLOW)),
    Style.parse("bold cyan"),
)
_REWARDS: _Spec = (
    (("Rewards", 1, False, _WHITE), ("Value", 2, True, NULL)),
    Style.parse("bold green"),
)
_TIMING: _Spec = (
    tuple(
        col
        for title in ("Learner", "Collector", "System")
        for col in ((title, 2, False, _WHITE), ("Value", 1, True, _YELLOW))
    ),
    Style.parse("bold blue"),
)


def _columns(
    spec: _Spec, width: int, glyphs: Glyphs, *, no_wrap: bool, widths: Sequence[int] = ()
) -> list[Col]:
    """The columns of a section ``width`` wide (dividers included), pads as ``Table``'s
    with ``pad_edge=False``; by ratio unless ``widths`` gives them."""
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
            no_wrap,
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


def _share(total: int, needs: Sequence[int]) -> list[int]:
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


def _needs(spec: _Spec, columns: Sequence[Sequence[Pair]]) -> list[int]:
    """Each column's width for its widest cell (title included), pads included."""
    pads = _pads(2 * len(columns), compact=True)
    needs: list[int] = []
    for k, pairs in enumerate(columns):
        for j in (0, 1):
            i = 2 * k + j
            widest = max([Cell(spec[0][i][0]).width, *(pair[j].width for pair in pairs)])
            needs.append(widest + sum(pads[i]))
    return needs


def _section_need(spec: _Spec, columns: Sequence[Sequence[Pair]]) -> int:
    return sum(_needs(spec, columns)) + 2 * len(columns) - 1


def _fitted(spec: _Spec, width: int, columns: Sequence[Sequence[Pair]]) -> list[int]:
    """Compact widths: value columns as wide as their widest value, label columns share
    the rest (each its widest label first)."""
    needs = _needs(spec, columns)
    values = needs[1::2]
    labels = _share(width - (len(needs) - 1) - sum(values), needs[0::2])
    return [w for pair in zip(labels, values, strict=True) for w in pair]


def _numbers_fit(spec: _Spec, width: int, columns: Sequence[Sequence[Pair]], g: Glyphs) -> bool:
    """Whether every ``whole`` value fits its column of the wide layout."""
    cols = _columns(spec, width, g, no_wrap=True)
    for k, pairs in enumerate(columns):
        col = cols[2 * k + 1]
        room = col.width - col.left - col.right
        if any(v.whole and v.width > room for _, v in pairs):
            return False
    return True


def _section(
    p: Painter,
    spec: _Spec,
    width: int,
    columns: Sequence[Sequence[Pair]],
    glyphs: Glyphs,
    *,
    compact: bool,
) -> list[Line]:
    widths = _fitted(spec, width, columns) if compact else ()
    cols = _columns(spec, width, glyphs, no_wrap=compact or spec is _TIMING, widths=widths)
    header = [Cell(title) for title, *_ in spec[0]]
    rows: list[list[Cell]] = []
    for i in range(max(len(c) for c in columns)):
        row: list[Cell] = []
        for pairs in columns:
            row.extend(pairs[i] if i < len(pairs) else (Cell(), Cell()))
        rows.append(row)
    actual = sum(c.width for c in cols) + len(cols) - 1
    return p.exact(p.table(cols, header, rows, glyphs.table_box), width, actual)


class DashboardPanel:
    """The live panel for one ``(state, now, glyphs)``; its layout is chosen at render
    time from the width and height Rich renders it into."""

    def __init__(self, state: State, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> None:
        self.glyphs = glyphs
        # the content is built here, so that a state it cannot show fails the caller
        self.fields = header_fields(state, now, glyphs)
        self.metrics = metric_rows(state)
        self.rewards = reward_rows(state, glyphs)
        self.rewards_split = reward_rows(state, glyphs, split=True)
        self.timing = timing_columns(state, glyphs)

    @property
    def title(self) -> str:
        rocket = f"{self.glyphs.rocket} " if self.glyphs.rocket else ""
        return f" {rocket}{TITLE} "

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        _, body = self.layout(console, options)
        yield from self._frame(console, options, body, options.max_width)

    def layout(
        self, console: Console, options: ConsoleOptions
    ) -> tuple[Literal["wide", "compact"], list[Line]]:
        """The layout for the space in ``options`` and the panel's inner lines.

        Wide unless it cuts a number or a header field, is taller than the height (the
        console's when ``options`` has none), or cuts a label the compact one shows whole.
        """
        height = options.height or options.size.height
        inner = max(options.max_width - 4, 1)
        p = Painter(console, options)
        body = self.wide(p, inner, height - 2)
        misfit = p.cut or len(body) + 2 > height
        if misfit or p.cropped:
            q = Painter(console, options)
            compact = self.compact(q, inner, height - 2)
            if misfit or not q.cropped:
                return "compact", compact
        return "wide", body

    # -- layouts -------------------------------------------------------------------------
    def wide(self, p: Painter, width: int, height: int) -> list[Line]:
        """The seed's layout; ``p.cut`` when a number or a header field does not fit
        (found before drawing anything when the widths or the row count tell)."""
        g, fields = self.glyphs, self.fields
        lw, rw = ratio_distribute(width - 2, [1, 1], [1, 1])
        rows = 7 + max(len(self.metrics), len(self.rewards)) + max(map(len, self.timing))
        if (
            rows > height
            or sum(f.width + 3 for f in fields if f.whole) - 3 > width
            or not _numbers_fit(_METRICS, lw, [self.metrics], g)
            or not _numbers_fit(_REWARDS, rw, [self.rewards], g)
            or not _numbers_fit(_TIMING, width, self.timing, g)
        ):
            p.cut = True
            return []
        lines = p.cell(join_fields(fields), Col(width, no_wrap=True, overflow=g.overflow), NULL)
        lines.append(blank(width))
        metrics = _section(p, _METRICS, lw, [self.metrics], g, compact=False)
        rewards = _section(p, _REWARDS, rw, [self.rewards], g, compact=False)
        lines += side_by_side(metrics, 2, rewards, lw, rw)
        lines.append(blank(width))
        lines += _section(p, _TIMING, width, self.timing, g, compact=False)
        return lines

    def compact(self, p: Painter, width: int, height: int) -> list[Line]:
        """Every number whole in as few rows as possible (see the module docstring)."""
        g = self.glyphs
        head: list[Line] = []
        for k, fields in enumerate(_pack(self.fields, width)):
            cell = join_fields(fields, lead=" " if k else "")
            head += p.cell(cell, Col(width, no_wrap=True, overflow=g.overflow), NULL)
        need = _section_need(_METRICS, [self.metrics])
        rows = self.rewards
        if _share(width - 2, [need, _section_need(_REWARDS, [rows])])[1] < _section_need(
            _REWARDS, [rows]
        ):
            rows = self.rewards_split
        lw, rw = _share(width - 2, [need, _section_need(_REWARDS, [rows])])
        metrics = _section(p, _METRICS, lw, [self.metrics], g, compact=True)
        rewards = _section(p, _REWARDS, rw, [rows], g, compact=True)
        middle = side_by_side(metrics, 2, rewards, lw, rw)
        timing = _section(p, _TIMING, width, self.timing, g, compact=True)
        room = height - len(head) - len(middle) - len(timing)
        if room < 0:  # still too tall (many metrics): the rules under the titles go
            metrics, rewards, timing = (_no_rule(x) for x in (metrics, rewards, timing))
            middle = side_by_side(metrics, 2, rewards, lw, rw)
            room = height - len(head) - len(middle) - len(timing)
        n = len(self.metrics)
        if room < 0 and n > 1:  # and the metrics that do not fit flow on under the rewards
            k = min(n - 1, max(1, (n + len(rewards) + 1) // 2))
            left = _no_rule(_section(p, _METRICS, lw, [self.metrics[:k]], g, compact=True))
            more = _no_rule(_section(p, _METRICS, rw, [self.metrics[k:]], g, compact=True))
            middle = side_by_side(left, 2, rewards + more, lw, rw)
            room = height - len(head) - len(middle) - len(timing)
        gap1 = [blank(width)] if room >= 2 else []
        gap2 = [blank(width)] if room >= 1 else []
        return head + gap1 + middle + gap2 + timing

    # -- the frame -----------------------------------------------------------------------
    def _frame(
        self, console: Console, options: ConsoleOptions, body: list[Line], width: int
    ) -> RenderResult:
        box = rich_box.ROUNDED.substitute(options, safe=console.safe_box)
        new_line = Segment.line()
        title = f" {self.title} "
        room = width - 4
        if width <= 4:
            yield Segment(box.get_top([width - 2]), _BORDER)
        else:
            title = set_cell_size(title, room) if Cell(title).width > room else title
            excess = room - Cell(title).width
            yield Segment(box.top_left + box.top * (1 + excess // 2), _BORDER)
            yield Segment(title, _BORDER + _BOLD)
            yield Segment(box.top * (excess - excess // 2 + 1) + box.top_right, _BORDER)
        yield new_line
        left, right = Segment(box.mid_left, _BORDER), Segment(box.mid_right, _BORDER)
        pad = Segment(" ", NULL)
        for line in body:
            yield left
            yield from merge([pad, *line, pad])  # fewer segments for Live to split again
            yield right
            yield new_line
        yield Segment(box.get_bottom([width - 2]), _BORDER)
        yield new_line


def _no_rule(section: list[Line]) -> list[Line]:
    """A section without the rule under its title row (its second line)."""
    return section[:1] + section[2:] if len(section) > 2 else section


def _pack(fields: list[Cell], width: int) -> list[list[Cell]]:
    """Header fields packed into lines ``width`` wide (`` | `` between fields, one space
    before a continuation line); the status (last, not ``whole``) joins the last line if
    it fits or leaves a usable stretch to cut with ``…``, else starts its own line."""
    status = fields[-1] if fields and not fields[-1].whole else None
    if status is not None:
        fields = fields[:-1]
    lines: list[list[Cell]] = [[]]
    used = 0
    for field in fields:
        if lines[-1] and used + 3 + field.width > width:
            lines.append([])
            used = 1
        used += (3 if lines[-1] else 0) + field.width
        lines[-1].append(field)
    if status is not None:
        room = width - used - 3
        if lines[-1] and status.width > room and room < 12:
            lines.append([])
        lines[-1].append(status)
    return lines


def dashboard_panel(state: State, now: float, glyphs: Glyphs = UNICODE_GLYPHS) -> DashboardPanel:
    """The live panel: header, blank, metrics | rewards side by side, blank, timings;
    compact where the terminal is too small for that (see :class:`DashboardPanel`)."""
    return DashboardPanel(state, now, glyphs)


class _Section:
    """One section of the wide layout on its own, as wide as it is rendered."""

    def __init__(self, build: Callable[[Painter, int], list[Line]]) -> None:
        self._build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self._build(Painter(console, options), options.max_width):
            yield from line
            yield new_line


def metrics_table(state: State, glyphs: Glyphs = UNICODE_GLYPHS) -> _Section:
    """ "Losses & Metrics" | "Value" (see :func:`~._content.metric_rows`)."""
    rows = metric_rows(state)
    return _Section(lambda p, w: _section(p, _METRICS, w, [rows], glyphs, compact=False))


def reward_table(state: State, glyphs: Glyphs = UNICODE_GLYPHS) -> _Section:
    """ "Rewards" | "Value", the narrow label column first (ratio 1:2), as the seed had."""
    rows = reward_rows(state, glyphs)
    return _Section(lambda p, w: _section(p, _REWARDS, w, [rows], glyphs, compact=False))


def timing_table(state: State, glyphs: Glyphs = UNICODE_GLYPHS) -> _Section:
    """Learner, Collector and System column pairs (see :func:`~._content.timing_columns`)."""
    columns = timing_columns(state, glyphs)
    return _Section(lambda p, w: _section(p, _TIMING, w, columns, glyphs, compact=False))
