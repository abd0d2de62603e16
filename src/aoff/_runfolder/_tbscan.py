"""The scalar reader's state: what each event file's records add to the run's series.

Why a module of its own: walking the bytes (``_tbread``) and deciding what a record means
are two jobs. This one owns the meaning: which values are scalars (``simple_value``, or a
one-float tensor of the ``scalars`` plugin, ``_tbvalue``), which summaries repeat a known
layout (``_tblayout``), TensorBoard's purge rules (a ``SessionLog.START`` in a
``brain.Event:2`` file, or an out-of-order step in an older one), and the end: each tag's
points, the distinct steps and the time range as a :class:`Scan`.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._tblayout import Layout
from ._tbvalue import plugin_name, tensor_scalar
from ._tbwire import F32, F64, fields, varint

__all__ = ["Reader", "Scan", "TagSeries"]


@dataclass
class TagSeries:
    """One tag's points in the order TensorBoard shows them."""

    steps: np.ndarray[Any, np.dtype[np.int64]]
    values: np.ndarray[Any, np.dtype[np.float64]]


@dataclass
class Scan:
    """What :func:`scan_files` found: each scalar tag's series, and the run's range."""

    tags: dict[str, TagSeries] = field(default_factory=dict)
    #: distinct steps that carried at least one scalar
    records: int = 0
    first_time: float | None = None
    last_time: float | None = None
    bytes_read: int = 0
    #: ``(file, why)`` for each file whose reading stopped early
    problems: list[tuple[str, str]] = field(default_factory=list)


class Reader:
    """One pass over a run's event files, record by record; :meth:`finish` gives the
    :class:`Scan`."""

    def __init__(self) -> None:
        self.scan = Scan()
        self.order = 0
        #: step and wall time of every summary with scalars (both as float64 bits: steps
        #: are exact below 2**53), for the distinct-step count and the time range
        self.points: array[float] = array("d")
        #: summary layouts by their size in bytes
        self.layouts: dict[int, list[Layout]] = {}
        #: points of summaries without a layout: tag -> (orders, steps, values)
        self.loose: dict[str, tuple[list[int], list[int], list[float]]] = {}
        self.scalars_plugin: dict[str, bool] = {}
        self.file_version: float | None = None
        self.most_recent_step = -(1 << 63)
        #: (order, step, tags or None): points read before ``order`` with step >= purged
        self.purges: list[tuple[int, int, frozenset[str] | None]] = []

    # -- per record ---------------------------------------------------------------------
    def event(self, buf: bytes, start: int, end: int) -> None:
        wall = 0.0
        step = 0
        summary: tuple[int, int] | None = None
        # aoff's and most writers' layout: wall_time (1), step (2), summary (5)
        pos = start
        if pos < end and buf[pos] == 0x09:
            (wall,) = F64.unpack_from(buf, pos + 1)
            pos += 9
        if pos < end and buf[pos] == 0x10:
            step, pos = varint(buf, pos + 1)
        if pos < end and buf[pos] == 0x2A:
            n, p2 = varint(buf, pos + 1)
            if p2 + n == end:
                summary = (p2, end)
                pos = end
        if pos != end:  # anything else: the general decoder
            self.general_event(buf, start, end)
            return
        if step >= 1 << 63:
            step -= 1 << 64
        if summary is not None:
            self.summary(buf, summary[0], summary[1], wall, step)

    def general_event(self, buf: bytes, start: int, end: int) -> None:
        wall = 0.0
        step = 0
        summary: tuple[int, int] | None = None
        session_start = False
        for num, wire, s, e in fields(buf, start, end):
            if num == 1 and wire == 1:
                (wall,) = F64.unpack_from(buf, s)
            elif num == 2 and wire == 0:
                step = varint(buf, s)[0]
            elif num == 3 and wire == 2:  # file_version, e.g. "brain.Event:2"
                text = buf[s:e].decode("utf-8", "replace")
                if self.file_version is None and text.startswith("brain.Event:"):
                    try:
                        self.file_version = float(text.split(":", 1)[1])
                    except ValueError:
                        self.file_version = 0.0
            elif num == 5 and wire == 2:
                summary = (s, e)
            elif num == 7 and wire == 2:  # SessionLog: status = 1, START = 1
                for n2, w2, s2, _e2 in fields(buf, s, e):
                    if n2 == 1 and w2 == 0 and varint(buf, s2)[0] == 1:
                        session_start = True
        if step >= 1 << 63:
            step -= 1 << 64
        if session_start and (self.file_version or 0) >= 2:
            self.purges.append((self.order, step, None))
            self.order += 1
        if summary is not None:
            self.summary(buf, summary[0], summary[1], wall, step)

    def summary(self, buf: bytes, start: int, end: int, wall: float, step: int) -> None:
        for layout in self.layouts.get(end - start, ()):
            if layout.reader.unpack_from(buf, start) == layout.heads:
                self.point_range(step, wall)
                if self.old_rule:
                    self.out_of_order(step, layout.tags)
                layout.raw += memoryview(buf)[start:end]
                if len(layout.raw) >= layout.size * layout.FLUSH_ROWS:
                    layout.flush()
                series = layout.series
                series.append(self.order)
                series.append(step)
                self.order += 1
                return
        self.general_summary(buf, start, end, wall, step)

    def general_summary(self, buf: bytes, start: int, end: int, wall: float, step: int) -> None:
        heads: list[bytes] = []
        tags: list[str] = []
        simple_only = True
        found: list[tuple[str, float]] = []
        pos = start
        for num, wire, s, e in fields(buf, start, end):
            if num != 1 or wire != 2:
                simple_only = False
                continue
            tag: str | None = None
            simple: float | None = None
            tensor: tuple[int, int] | None = None
            plugin: str | None = None
            plain = True  # only a tag, then a simple_value as the Value's last 4 bytes
            parts = fields(buf, s, e)
            for n2, w2, s2, e2 in parts:
                if n2 == 1 and w2 == 2:
                    tag = buf[s2:e2].decode("utf-8", "replace")
                elif n2 == 2 and w2 == 5:
                    (simple,) = F32.unpack_from(buf, s2)
                elif n2 == 8 and w2 == 2:
                    tensor = (s2, e2)
                    plain = False
                elif n2 == 9 and w2 == 2:
                    plugin = plugin_name(buf, s2, e2)
                    plain = False
                else:
                    plain = False
            if tag is None:
                simple_only = False
                continue
            if plugin is not None and tag not in self.scalars_plugin:
                self.scalars_plugin[tag] = plugin == "scalars"
            if simple is not None:
                found.append((tag, float(simple)))
                last = parts[-1]
                if plain and len(parts) == 2 and last[0] == 2 and last[2] == e - 4:
                    heads.append(buf[pos : e - 4])  # this Value up to its float
                    tags.append(tag)
                    pos = e
                else:
                    simple_only = False
            else:
                simple_only = False
                if tensor is not None and self.scalars_plugin.get(tag):
                    v = tensor_scalar(buf, tensor[0], tensor[1])
                    if v is not None:
                        found.append((tag, v))
        if not found:
            return
        self.point_range(step, wall)
        if self.old_rule:
            self.out_of_order(step, frozenset(t for t, _ in found))
        if simple_only and heads and pos == end:
            layout = Layout(tuple(heads), tuple(tags))
            self.layouts.setdefault(end - start, []).append(layout)
            layout.add_row([v for _, v in found])
            layout.series.append(self.order)
            layout.series.append(step)
        else:
            loose = self.loose
            for tag, v in found:
                got = loose.get(tag)
                if got is None:
                    got = loose[tag] = ([], [], [])
                got[0].append(self.order)
                got[1].append(step)
                got[2].append(v)
        self.order += 1

    @property
    def old_rule(self) -> bool:
        """Whether TensorBoard purges by out-of-order steps (files before ``Event:2``)."""
        return self.file_version is None or self.file_version < 2

    def point_range(self, step: int, wall: float) -> None:
        self.points.append(step)
        self.points.append(wall)

    def out_of_order(self, step: int, tags: Sequence[str] | frozenset[str]) -> None:
        """TensorBoard's rule for files older than ``brain.Event:2``."""
        if step < self.most_recent_step:
            self.purges.append((self.order, step, frozenset(tags)))
        else:
            self.most_recent_step = step

    # -- the end ----------------------------------------------------------------------------
    def finish(self) -> Scan:
        scan = self.scan
        parts: dict[str, list[tuple[Any, Any, Any]]] = {}
        for tag, (o_, s_, v_) in self.loose.items():
            parts.setdefault(tag, []).append(
                (np.asarray(o_, np.int64), np.asarray(s_, np.int64), np.asarray(v_, np.float64))
            )
        for layouts in self.layouts.values():
            for layout in layouts:
                layout.flush()
                rows = np.concatenate(layout.rows)
                series = np.frombuffer(layout.series, np.int64).reshape(-1, 2)
                for j, tag in enumerate(layout.tags):
                    parts.setdefault(tag, []).append(
                        (series[:, 0], series[:, 1], rows[:, j].astype(np.float64))
                    )
        purged = False
        for tag, got in parts.items():
            orders: Any
            steps: Any
            values: Any
            if len(got) == 1:
                orders, steps, values = got[0]
            else:
                orders = np.concatenate([g[0] for g in got])
                steps = np.concatenate([g[1] for g in got])
                values = np.concatenate([g[2] for g in got])
                by = np.argsort(orders, kind="stable")
                orders, steps, values = orders[by], steps[by], values[by]
            if self.purges:
                keep = np.ones(len(orders), bool)
                for at, step, tags in self.purges:
                    if tags is None or tag in tags:
                        keep &= ~((orders < at) & (steps >= step))
                if not keep.all():
                    purged = True
                    steps, values = steps[keep], values[keep]
            if len(values):
                scan.tags[tag] = TagSeries(steps, values)
        if purged:
            scan.records = len(np.unique(np.concatenate([s.steps for s in scan.tags.values()])))
        else:
            scan.records = len(np.unique(np.frombuffer(self.points)[0::2]))
        if self.points:
            walls = np.frombuffer(self.points)[1::2]
            scan.first_time, scan.last_time = float(walls.min()), float(walls.max())
        return scan
