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
segments: a frame costs well under Rich ``Table``'s 10+ ms. Still, that is 1-2 ms of
Python; where the training loop shares the GIL, building and drawing pause between
sections and every few lines (the ``pause`` the dashboard is given: a no-op by default),
so the loop never waits for a whole frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from rich import box as rich_box
from rich.cells import set_cell_size
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style

from .._core._view import RunView
from ._cells import (
    NULL,
    Cell,
    Col,
    Line,
    Painter,
    Pause,
    blank,
    merge,
    no_pause,
    ratio_distribute,
    side_by_side,
)
from ._chart import PanelMemory, chart_lines
from ._content import (
    Pair,
    header_fields,
    join_fields,
    metric_rows,
    reward_rows,
    timing_columns,
)
from ._glyphs import UNICODE_GLYPHS, Glyphs
from ._sections import (
    METRICS,
    REWARDS,
    Spec,
    numbers_fit,
    section,
    section_need,
    share,
    timing_spec,
)

__all__ = ["DashboardPanel", "dashboard_panel", "metrics_table", "reward_table", "timing_table"]

TITLE = "aoff Off-Policy Training"
#: lines drawn between two pauses
LINES_A_PIECE = 8
_BORDER = Style.parse("bright_blue")
_BOLD = Style.parse("bold")
_DIM = Style.parse("dim")


class DashboardPanel:
    """The live panel for one ``(state, now, glyphs)``; its layout is chosen at render
    time from the width and height Rich renders it into."""

    def __init__(
        self,
        state: RunView,
        now: float,
        glyphs: Glyphs = UNICODE_GLYPHS,
        memory: PanelMemory | None = None,
        pause: Pause = no_pause,
    ) -> None:
        self.pause = pause
        self.glyphs = glyphs
        self.state = state
        self.memory = memory
        # the content is built here, so that a state it cannot show fails the caller
        self.fields = header_fields(state, now, glyphs)
        self.metrics = metric_rows(state)
        self.pause()
        self.rewards = reward_rows(state, glyphs)
        self.rewards_split = reward_rows(state, glyphs, split=True)
        self.pause()
        self.timing_spec, self.timing = _timing(state, glyphs)
        self.pause()

    @property
    def title(self) -> str:
        rocket = f"{self.glyphs.rocket} " if self.glyphs.rocket else ""
        return f" {rocket}{TITLE} "

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.pause()  # after Rich's own preparations (Live's cursor moves)
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
        p = Painter(console, options, self.pause)
        body = self.wide(p, inner, height - 2)
        misfit = p.cut or len(body) + 2 > height
        if misfit or p.cropped:
            if body:
                self.pause()
            q = Painter(console, options, self.pause)
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
        timing = max(map(len, self.timing), default=-3)  # none: no blank, title, rule
        rows = 7 + max(len(self.metrics), len(self.rewards)) + timing
        if (
            rows > height
            or sum(f.width + 3 for f in fields if f.whole) - 3 > width
            or not numbers_fit(METRICS, lw, [self.metrics], g)
            or not numbers_fit(REWARDS, rw, [self.rewards], g)
            or (self.timing and not numbers_fit(self.timing_spec, width, self.timing, g))
        ):
            p.cut = True
            return []
        lines = p.cell(join_fields(fields), Col(width, no_wrap=True, overflow=g.overflow), NULL)
        lines.append(blank(width))
        self.pause()
        metrics = section(p, METRICS, lw, [self.metrics], g, compact=False)
        self.pause()
        rewards = section(p, REWARDS, rw, [self.rewards], g, compact=False)
        # the chart: in the rows beside the longer metrics, and those the height spares
        free = len(metrics) - len(rewards) + height - rows
        rewards += chart_lines(self.state, self.memory, rw, free, g)
        self.pause()
        lines += side_by_side(metrics, 2, rewards, lw, rw)
        if self.timing:
            lines.append(blank(width))
            self.pause()
            lines += section(p, self.timing_spec, width, self.timing, g, compact=False)
        return lines

    def compact(self, p: Painter, width: int, height: int) -> list[Line]:
        """Every number whole in as few rows as possible (see the module docstring)."""
        g = self.glyphs
        head: list[Line] = []
        for k, fields in enumerate(_pack(self.fields, width)):
            cell = join_fields(fields, lead=" " if k else "")
            head += p.cell(cell, Col(width, no_wrap=True, overflow=g.overflow), NULL)
        self.pause()
        need = section_need(METRICS, [self.metrics])
        rows = self.rewards
        if share(width - 2, [need, section_need(REWARDS, [rows])])[1] < section_need(
            REWARDS, [rows]
        ):
            rows = self.rewards_split
        needs = [need, section_need(REWARDS, [rows])]
        lw, rw = share(width - 2, needs)
        mem = self.memory
        if mem is not None:  # the last frame's split, while both sides still fit
            lw, rw = mem.steady(("split", width, len(rows)), [lw, rw], needs)
        metrics = section(p, METRICS, lw, [self.metrics], g, compact=True, memory=mem)
        self.pause()
        rewards = section(p, REWARDS, rw, [rows], g, compact=True, memory=mem)
        self.pause()
        timing: list[Line] = []
        if self.timing:
            timing = section(p, self.timing_spec, width, self.timing, g, compact=True, memory=mem)
        self.pause()
        room = height - len(head) - max(len(metrics), len(rewards)) - len(timing)
        # the chart: beside the longer metrics, and in the rows the height spares (two
        # are left for the spacers)
        free = max(len(metrics) - len(rewards), 0) + (room - 2 if room > 2 else min(room, 1))
        table = rewards
        rewards = table + chart_lines(self.state, mem, rw, free, g)
        self.pause()
        middle = side_by_side(metrics, 2, rewards, lw, rw)
        room = height - len(head) - len(middle) - len(timing)
        if room < 0:  # still too tall (many metrics): the rules under the titles go
            metrics, table, timing = (_no_rule(x) for x in (metrics, table, timing))
            rewards = table + rewards[len(table) + 1 :]
            middle = side_by_side(metrics, 2, rewards, lw, rw)
            room = height - len(head) - len(middle) - len(timing)
        n = len(self.metrics)
        if room < 0 and n > 1:  # and the metrics that do not fit flow on under the rewards
            # the reward trend keeps one row (a sparkline) above them: the chart's blocks
            # have no room left
            rewards = table + chart_lines(self.state, mem, rw, 1, g)
            k = min(n - 1, max(1, (n + len(rewards) + 1) // 2))
            left = _no_rule(section(p, METRICS, lw, [self.metrics[:k]], g, compact=True))
            # the rest of the metrics, without a second "Losses & Metrics" title
            more = section(p, METRICS, rw, [self.metrics[k:]], g, compact=True)[2:]
            middle = side_by_side(left, 2, rewards + more, lw, rw)
            room = height - len(head) - len(middle) - len(timing)
        gap1 = [blank(width)] if room >= 2 else []
        gap2 = [blank(width)] if room >= 1 and timing else []
        if room < 0:  # still too tall: the rows that do not fit are one counted line
            middle = _cut(middle, len(middle) + room, width)
            room = height - len(head) - len(middle) - len(timing)
            if room < 0:
                timing = _cut(timing, len(timing) + room, width)
        # the height is the panel's to keep: a frame taller than the terminal loses its
        # bottom border to Rich's "..." (the header alone can be taller on a tiny one)
        return (head + gap1 + middle + gap2 + timing)[: max(height, 0)]

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
        for i, line in enumerate(body):
            if i % LINES_A_PIECE == LINES_A_PIECE - 1:
                self.pause()  # Rich takes each line apart again as it comes
            yield left
            yield from merge([pad, *line, pad])  # fewer segments for Live to split again
            yield right
            yield new_line
        yield Segment(box.get_bottom([width - 2]), _BORDER)
        yield new_line
        self.pause()


def _cut(lines: list[Line], keep: int, width: int) -> list[Line]:
    """``lines`` in ``keep`` rows (at least one): the last says how many are not shown."""
    keep = max(keep, 1)
    if len(lines) <= keep:
        return lines
    hidden = len(lines) - keep + 1
    note = f" … {hidden} more row{'s' if hidden > 1 else ''} (a taller terminal shows them)"
    return [*lines[: keep - 1], [Segment(set_cell_size(note, max(width, 0)), _DIM)]]


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


def dashboard_panel(
    state: RunView,
    now: float,
    glyphs: Glyphs = UNICODE_GLYPHS,
    memory: PanelMemory | None = None,
    pause: Pause = no_pause,
) -> DashboardPanel:
    """The live panel: header, blank, metrics | rewards (and the reward chart) side by
    side, blank, timings; compact where the terminal is too small for that (see
    :class:`DashboardPanel`). ``memory``: the dashboard's, kept between frames;
    ``pause``: called between pieces of the work (a no-op by default)."""
    return DashboardPanel(state, now, glyphs, memory, pause)


class _Section:
    """One section of the wide layout on its own, as wide as it is rendered."""

    def __init__(self, build: Callable[[Painter, int], list[Line]]) -> None:
        self._build = build

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self._build(Painter(console, options), options.max_width):
            yield from line
            yield new_line


def metrics_table(state: RunView, glyphs: Glyphs = UNICODE_GLYPHS) -> _Section:
    """ "Losses & Metrics" | "Value" (see :func:`~._content.metric_rows`)."""
    rows = metric_rows(state)
    return _Section(lambda p, w: section(p, METRICS, w, [rows], glyphs, compact=False))


def reward_table(state: RunView, glyphs: Glyphs = UNICODE_GLYPHS) -> _Section:
    """ "Rewards" | "Value", the narrow label column first (ratio 1:2), as the seed had."""
    rows = reward_rows(state, glyphs)
    return _Section(lambda p, w: section(p, REWARDS, w, [rows], glyphs, compact=False))


def timing_table(state: RunView, glyphs: Glyphs = UNICODE_GLYPHS) -> _Section:
    """Learner, Collector and System column pairs (see :func:`~._content.timing_columns`);
    no line when nothing of them was logged."""
    spec, columns = _timing(state, glyphs)
    if not columns:
        return _Section(lambda p, w: [])
    return _Section(lambda p, w: section(p, spec, w, columns, glyphs, compact=False))


def _timing(state: RunView, glyphs: Glyphs) -> tuple[Spec, list[list[Pair]]]:
    """The timing section's spec and its columns' rows (only the columns with rows)."""
    titled = timing_columns(state, glyphs)
    return timing_spec([t for t, _ in titled]), [rows for _, rows in titled]
