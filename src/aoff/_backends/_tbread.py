"""Reading the scalars back out of TensorBoard event files, fast.

Why not TensorBoard's own reader: ``EventAccumulator`` builds a protobuf object per event
and a Python object per value; on a 65 MB file (50,000 steps of the demo) it took ~25 s.
``aoff show``/``aoff ls`` need only the scalars: this module walks the TFRecord framing
(both checksums checked, as TensorBoard does) and decodes just enough of ``Event`` and
``Summary`` to find them, skipping everything else (histograms, images, text ...).

Most summaries repeat one layout record after record (the same tags in the same order,
``simple_value`` each): the first time a layout is seen its byte pattern is turned into a
:class:`struct.Struct` that reads every tag head and float of such a summary in one call;
a record whose heads do not match goes through the general decoder. What is read is what
TensorBoard's readers show:

* ``Value.simple_value`` (what aoff, TensorBoard's ``SummaryWriter`` and torch's write);
* ``Value.tensor`` holding one float (``DT_FLOAT``/``DT_DOUBLE``/``DT_HALF``) for a tag
  whose metadata names the ``scalars`` plugin (torch's ``new_style=True``, TF2's
  ``tf.summary.scalar``);
* TensorBoard's purge rule: a ``SessionLog.START`` at step ``s`` (a resumed run) hides
  every point read before it with a step ``>= s``; files without ``brain.Event:2`` use the
  older out-of-order-step rule.

A torn or corrupt record ends the reading of its file (what came before is kept) and is
named in :attr:`Scan.problems`, as TensorBoard stops there too.
"""

from __future__ import annotations

import contextlib
import os
import struct
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from crc32c import crc32c

__all__ = ["Scan", "TagSeries", "scan_files"]

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_HEADER = struct.Struct("<QI")
_U32S = struct.Struct("<I")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_F16 = struct.Struct("<e")
#: bytes read at a time; the progress callback is called once per chunk
CHUNK = 8 << 20

_DT_FLOAT, _DT_DOUBLE, _DT_HALF = 1, 2, 19


def _masked(data: bytes | memoryview) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32


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


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _skip(buf: bytes, pos: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        n, pos = _varint(buf, pos)
        return pos + n
    if wire == 5:
        return pos + 4
    raise ValueError(f"unsupported wire type {wire}")


def _fields(buf: bytes, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """``(field, wire, start, stop)`` of each field in ``buf[pos:end]`` (length-delimited
    fields: start/stop of their content)."""
    out = []
    while pos < end:
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 2:
            n, pos = _varint(buf, pos)
            out.append((num, wire, pos, pos + n))
            pos += n
        else:
            start = pos
            pos = _skip(buf, pos, wire)
            out.append((num, wire, start, pos))
    if pos != end:
        raise ValueError("field runs past its message")
    return out


def _plugin_name(buf: bytes, start: int, end: int) -> str | None:
    """``SummaryMetadata.plugin_data.plugin_name``."""
    for num, wire, s, e in _fields(buf, start, end):
        if num == 1 and wire == 2:  # plugin_data
            for n2, w2, s2, e2 in _fields(buf, s, e):
                if n2 == 1 and w2 == 2:
                    return buf[s2:e2].decode("utf-8", "replace")
    return None


def _tensor_scalar(buf: bytes, start: int, end: int) -> float | None:
    """The one float a 0-d (or one-element) float ``TensorProto`` holds, else ``None``."""
    dtype = 0
    dims = 1
    values: list[float] = []
    content = b""
    for num, wire, s, e in _fields(buf, start, end):
        if num == 1 and wire == 0:
            dtype = _varint(buf, s)[0]
        elif num == 2 and wire == 2:  # TensorShapeProto
            for n2, w2, s2, e2 in _fields(buf, s, e):
                if n2 == 2 and w2 == 2:  # Dim
                    size = 1
                    for n3, w3, s3, _e3 in _fields(buf, s2, e2):
                        if n3 == 1 and w3 == 0:
                            size = _varint(buf, s3)[0]
                    dims *= size
        elif num == 4 and wire == 2:
            content = buf[s:e]
        elif num == 5:  # float_val (packed or not)
            raw = buf[s:e]
            values.extend(v for (v,) in _F32.iter_unpack(raw[: len(raw) // 4 * 4]))
        elif num == 6:  # double_val
            raw = buf[s:e]
            values.extend(v for (v,) in _F64.iter_unpack(raw[: len(raw) // 8 * 8]))
        elif num == 13:  # half_val: int32 bit patterns, packed varints
            pos = s
            while pos < e:
                bits, pos = _varint(buf, pos) if wire == 2 else (_varint(buf, s)[0], e)
                values.append(_F16.unpack(struct.pack("<H", bits & 0xFFFF))[0])
    if dims != 1:
        return None
    if content:
        fmt = {_DT_FLOAT: _F32, _DT_DOUBLE: _F64, _DT_HALF: _F16}.get(dtype)
        if fmt is None or len(content) != fmt.size:
            return None
        return float(fmt.unpack(content)[0])
    if dtype in (_DT_FLOAT, _DT_DOUBLE, _DT_HALF) and len(values) == 1:
        return float(values[0])
    return None


class _Layout:
    """A summary's byte pattern: heads (tag + ``simple_value`` key) around 4-byte floats.

    ``reader`` unpacks the heads of a summary of this size and skips its floats; the
    summaries that match are copied whole into ``raw`` and their floats cut out of it in
    bulk (numpy) every ``FLUSH_ROWS`` rows, so no Python float is made per value."""

    __slots__ = ("heads", "offsets", "raw", "reader", "rows", "series", "size", "tags")
    FLUSH_ROWS = 4096

    def __init__(self, heads: tuple[bytes, ...], tags: tuple[str, ...]) -> None:
        self.heads = heads
        self.tags = tags
        self.reader = struct.Struct("<" + "".join(f"{len(h)}s4x" for h in heads))
        self.size = self.reader.size
        offsets = []
        at = 0
        for h in heads:
            at += len(h)
            offsets.append(at)
            at += 4
        self.offsets = np.asarray(offsets, np.intp)
        self.raw = bytearray()
        #: float32 blocks of (rows, tags), in order
        self.rows: list[np.ndarray[Any, np.dtype[np.float32]]] = []
        #: per matching summary: its record order, then its step
        self.series: array[int] = array("q")

    def flush(self) -> None:
        if not self.raw:
            return
        table = np.frombuffer(self.raw, np.uint8).reshape(-1, self.size)
        cols = self.offsets[:, None] + np.arange(4)  # (tags, 4) byte positions
        block = table[:, cols].reshape(len(table), -1).copy().view("<f4")
        self.rows.append(block.astype(np.float32, copy=False))
        self.raw = bytearray()

    def add_row(self, values: Sequence[float]) -> None:
        self.flush()
        self.rows.append(np.asarray([values], np.float32))


class _Reader:
    def __init__(self) -> None:
        self.scan = Scan()
        self.order = 0
        #: step and wall time of every summary with scalars (both as float64 bits: steps
        #: are exact below 2**53), for the distinct-step count and the time range
        self.points: array[float] = array("d")
        #: summary layouts by their size in bytes
        self.layouts: dict[int, list[_Layout]] = {}
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
            (wall,) = _F64.unpack_from(buf, pos + 1)
            pos += 9
        if pos < end and buf[pos] == 0x10:
            step, pos = _varint(buf, pos + 1)
        if pos < end and buf[pos] == 0x2A:
            n, p2 = _varint(buf, pos + 1)
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
        for num, wire, s, e in _fields(buf, start, end):
            if num == 1 and wire == 1:
                (wall,) = _F64.unpack_from(buf, s)
            elif num == 2 and wire == 0:
                step = _varint(buf, s)[0]
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
                for n2, w2, s2, _e2 in _fields(buf, s, e):
                    if n2 == 1 and w2 == 0 and _varint(buf, s2)[0] == 1:
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
        for num, wire, s, e in _fields(buf, start, end):
            if num != 1 or wire != 2:
                simple_only = False
                continue
            tag: str | None = None
            simple: float | None = None
            tensor: tuple[int, int] | None = None
            plugin: str | None = None
            plain = True  # only a tag, then a simple_value as the Value's last 4 bytes
            fields = _fields(buf, s, e)
            for n2, w2, s2, e2 in fields:
                if n2 == 1 and w2 == 2:
                    tag = buf[s2:e2].decode("utf-8", "replace")
                elif n2 == 2 and w2 == 5:
                    (simple,) = _F32.unpack_from(buf, s2)
                elif n2 == 8 and w2 == 2:
                    tensor = (s2, e2)
                    plain = False
                elif n2 == 9 and w2 == 2:
                    plugin = _plugin_name(buf, s2, e2)
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
                last = fields[-1]
                if plain and len(fields) == 2 and last[0] == 2 and last[2] == e - 4:
                    heads.append(buf[pos : e - 4])  # this Value up to its float
                    tags.append(tag)
                    pos = e
                else:
                    simple_only = False
            else:
                simple_only = False
                if tensor is not None and self.scalars_plugin.get(tag):
                    v = _tensor_scalar(buf, tensor[0], tensor[1])
                    if v is not None:
                        found.append((tag, v))
        if not found:
            return
        self.point_range(step, wall)
        if self.old_rule:
            self.out_of_order(step, frozenset(t for t, _ in found))
        if simple_only and heads and pos == end:
            layout = _Layout(tuple(heads), tuple(tags))
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


def _read_file(
    reader: _Reader,
    path: str,
    progress: Callable[[int], None] | None,
    *,
    start: int = 0,
    limit: int | None = None,
) -> tuple[str, str] | None:
    """Walk one file's records from byte ``start``; ``(path, why)`` when it stops before
    the end. ``limit``: read at most that many bytes (a record cut there is not a fault).

    The loop is written out (no calls) for the common record: ``wall_time``, ``step`` and
    a summary of a known layout; anything else goes to :meth:`_Reader.event`."""
    scan = reader.scan
    event = reader.event
    header = _HEADER.unpack_from
    u32 = _U32S.unpack_from
    f64 = _F64.unpack_from
    layouts = reader.layouts
    points = reader.points
    add_point = points.append
    left = limit
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        buf = b""
        view = memoryview(buf)
        base = start  # file offset of buf[0]
        pos = 0
        eof = False
        want = 12
        while True:
            if len(buf) - pos < want:
                if eof:
                    if pos == len(buf) or limit is not None:
                        return None
                    return (path, "the last record is truncated")
                size = max(CHUNK, want)
                if left is not None:
                    size = min(size, left)
                    left -= size
                more = f.read(size) if size > 0 else b""
                if not more:
                    eof = True
                    continue
                scan.bytes_read += len(more)
                if progress is not None:
                    progress(len(more))
                base += pos
                view.release()
                buf = buf[pos:] + more
                view = memoryview(buf)
                pos = 0
                continue
            length, hcrc = header(buf, pos)
            c = crc32c(view[pos : pos + 8])
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != hcrc:
                return (path, f"a corrupt record at byte {base + pos}")
            p = pos + 12
            end = p + length
            if end + 4 > len(buf):
                want = 16 + length
                continue
            want = 12
            c = crc32c(view[p:end])
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != u32(buf, end)[0]:
                return (path, f"a corrupt record at byte {base + pos}")
            pos = end + 4
            try:
                if length > 13 and buf[p] == 0x09 and buf[p + 9] == 0x10:
                    q = p + 10
                    step = 0
                    shift = 0
                    while True:  # the step's varint, written out
                        b = buf[q]
                        q += 1
                        step |= (b & 0x7F) << shift
                        if b < 0x80:
                            break
                        shift += 7
                    if buf[q] == 0x2A:
                        size = buf[q + 1]
                        q += 2
                        if size >= 0x80:
                            b = buf[q]
                            q += 1
                            size = (size & 0x7F) | ((b & 0x7F) << 7)
                            if b >= 0x80:
                                size, q = _varint(buf, q - 3)
                        if q + size == end and step < (1 << 63) and not reader.old_rule:
                            for layout in layouts.get(size, ()):
                                if layout.reader.unpack_from(buf, q) == layout.heads:
                                    (wall,) = f64(buf, p + 1)
                                    add_point(step)
                                    add_point(wall)
                                    raw = layout.raw
                                    raw += view[q:end]
                                    if len(raw) >= size * _Layout.FLUSH_ROWS:
                                        layout.flush()
                                    series = layout.series
                                    series.append(reader.order)
                                    series.append(step)
                                    reader.order += 1
                                    break
                            else:
                                event(buf, p, end)
                            continue
                event(buf, p, end)
            except (ValueError, IndexError, struct.error):
                return (path, f"an unreadable event at byte {base + pos - length - 16}")


def scan_files(paths: Sequence[str], progress: Callable[[int], None] | None = None) -> Scan:
    """Read every scalar of ``paths`` (one run's event files, in the order TensorBoard
    reads them: sorted by name). ``progress`` is called with the bytes of each chunk read.

    Raises ``OSError`` for a file that cannot be opened or read."""
    reader = _Reader()
    for path in paths:
        problem = _read_file(reader, path, progress)
        if problem is not None:
            reader.scan.problems.append(problem)
    return reader.finish()


#: bytes of the last event file ``scan_last`` reads, and of the first one
TAIL_BYTES = 4 << 20
HEAD_BYTES = 256 << 10


def _sync_point(buf: bytes) -> int | None:
    """The offset of the first record in ``buf`` (a slice from inside a file) whose chain
    of valid record headers runs to the end of ``buf`` (a torn last record allowed)."""
    n = len(buf)
    at = buf.find(b"\0\0\0\0", 4)
    while at != -1:
        p = at - 4  # the length's high 4 bytes are zero: a header may start here
        q = p
        hops = 0
        while q + 12 <= n:
            length, hcrc = _HEADER.unpack_from(buf, q)
            if length >= n or _masked(buf[q : q + 8]) != hcrc:
                break
            q += 16 + length
            hops += 1
        if hops and (q == n or (q > n and hops > 1) or n - q < 12):
            return p
        at = buf.find(b"\0\0\0\0", at + 1)
    return None


def scan_last(paths: Sequence[str], progress: Callable[[int], None] | None = None) -> Scan | None:
    """The run's ends only, for ``aoff ls``: the first record's wall time (from the start
    of the first file) and each tag's last points (from the last ``TAIL_BYTES`` of the
    last file). Tag counts and curves are those of the tail only. ``None`` when the files
    are small enough to read whole, or the tail cannot be lined up with the records."""
    if not paths:
        return None
    last = paths[-1]
    size = os.path.getsize(last)
    if size <= 2 * TAIL_BYTES:
        return None
    with open(last, "rb") as f:
        f.seek(size - TAIL_BYTES)
        tail = f.read()
    sync = _sync_point(tail)
    if sync is None:
        return None
    head = _Reader()
    _read_file(head, paths[0], None, limit=HEAD_BYTES)
    reader = _Reader()
    reader.file_version = head.file_version
    problem = _read_file(reader, last, None, start=size - TAIL_BYTES + sync)
    scan = reader.finish()
    if problem is not None:
        scan.problems.append(problem)
    first = head.finish()
    if first.first_time is not None:
        scan.first_time = first.first_time
    if progress is not None:
        progress(2 * TAIL_BYTES)
    return scan


def file_bytes(paths: Sequence[str]) -> int:
    """Total size of ``paths`` (missing files count 0)."""
    total = 0
    for p in paths:
        with contextlib.suppress(OSError):
            total += os.path.getsize(p)
    return total
