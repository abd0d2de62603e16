"""A run's event files read for ``aoff show``/``aoff ls``: each tag's series and the run's
range, as TensorBoard shows them.

Why not TensorBoard's own reader: ``EventAccumulator`` builds a protobuf object per event
and a Python object per value; on a 65 MB file (50,000 steps of the demo) it took ~25 s.
The records are parsed by the one event parser of the run folder (``_evfolder``, with
its bulk path ``_evfast``), the same that :func:`aoff.read_scalars` reads with, so the
two agree on every value and on TensorBoard's purge rules. Only the policy at a corrupt
record differs, and it is a parameter of that parser: here reading stops there, as
TensorBoard stops, and the place is named in :attr:`Scan.problems` (``read_scalars``
skips the record and counts it).

This module is what ``show``/``ls`` need on top: the result's shape (:class:`Scan`), the
whole files (:func:`scan_files`), or for ``aoff ls`` on a big run only its ends
(:func:`scan_last`), which needs a record boundary found in the middle of a file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._evfolder import Cursor, EventFolder
from ._tfrecord import masked_crc32c
from ._wire import HEADER

__all__ = ["HEAD_BYTES", "TAIL_BYTES", "Scan", "TagSeries", "scan_files", "scan_last"]

#: bytes read at a time; the progress callback is called once per chunk
CHUNK = 8 << 20

#: bytes of the last event file ``scan_last`` reads, and of the first one
TAIL_BYTES = 4 << 20
HEAD_BYTES = 256 << 10


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


def _folder(progress: Callable[[int], None] | None) -> EventFolder:
    return EventFolder(stop_at_corrupt=True, pipes=True, progress=progress, chunk=CHUNK)


def _scan(folder: EventFolder) -> Scan:
    """The folder's series as a :class:`Scan` (the series are handed out)."""
    scan = Scan(bytes_read=folder.bytes_read)
    walls = []
    for tag, series in folder.series.items():
        steps, wall, values = series.take()
        if len(values):
            scan.tags[tag] = TagSeries(steps, values)
            walls.append(wall)
    if walls:
        scan.records = _distinct_steps([t.steps for t in scan.tags.values()])
        scan.first_time = float(min(w.min() for w in walls))
        scan.last_time = float(max(w.max() for w in walls))
    for cur in folder.cursors.values():
        if cur.stopped is not None:
            scan.problems.append((cur.path, cur.stopped))
        elif cur.torn:
            scan.problems.append((cur.path, "the last record is truncated"))
    return scan


def _distinct_steps(arrays: list[np.ndarray[Any, np.dtype[np.int64]]]) -> int:
    """How many distinct steps the tags' step arrays hold together. Most tags of a run
    share one array of steps: each distinct array is counted in once (a hash-based
    ``np.unique`` of every tag's steps joined took seconds on a long run)."""
    kept: dict[tuple[int, int, int], list[np.ndarray[Any, np.dtype[np.int64]]]] = {}
    for a in arrays:
        same = kept.setdefault((len(a), int(a[0]), int(a[-1])), [])
        if not any(np.array_equal(a, b) for b in same):
            same.append(a)
    joined = np.sort(np.concatenate([a for same in kept.values() for a in same]))
    return int(np.count_nonzero(joined[1:] != joined[:-1])) + 1


def scan_files(paths: Sequence[str], progress: Callable[[int], None] | None = None) -> Scan:
    """Read every scalar of ``paths`` (one run's event files, in the order TensorBoard
    reads them: sorted by name). ``progress`` is called with the bytes of each chunk read.

    Raises ``OSError`` for a file that cannot be opened or read."""
    folder = _folder(progress)
    folder.read(list(paths))
    return _scan(folder)


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
            length, hcrc = HEADER.unpack_from(buf, q)
            if length >= n or masked_crc32c(buf[q : q + 8]) != hcrc:
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
    head = _folder(None)
    head.cursors[paths[0]] = Cursor(paths[0], end=HEAD_BYTES)
    head.read([paths[0]])
    folder = _folder(None)
    folder.file_version = head.file_version  # the tail has no file_version record
    folder.cursors[last] = Cursor(last, offset=size - TAIL_BYTES + sync)
    folder.read([last])
    scan = _scan(folder)
    first = _scan(head)
    if first.first_time is not None:
        scan.first_time = first.first_time
    if progress is not None:
        progress(2 * TAIL_BYTES)
    return scan
