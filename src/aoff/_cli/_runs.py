"""Reading a finished run back from disk, for ``aoff show`` and ``aoff ls``.

A run folder holds what the backends wrote: ``metrics.jsonl`` (JSON Lines backend) and/or
``events.out.tfevents.*`` (TensorBoard backend). The commands only need each tag's curve
plus the run's step, iteration and wall-time range, so both formats are read into one
small :class:`RunData`. JSON Lines is preferred (exact float64 values, one line a step);
TensorBoard files are read with TensorBoard's own ``EventAccumulator``.

A run that was killed, or a disk that filled up, can leave a torn last record. Both
readers keep everything before it and add a one-line note naming the file, so the
commands can show what is there and say what is not. (``EventAccumulator`` skips a torn
TFRecord silently, so the TensorBoard files' framing is checked here as well.)
"""

from __future__ import annotations

import glob
import json
import math
import os
import struct
from dataclasses import dataclass, field

__all__ = ["JSONL_NAME", "TB_PATTERN", "RunData", "find_runs", "is_run_dir", "read_run"]

JSONL_NAME = "metrics.jsonl"
TB_PATTERN = "events.out.tfevents.*"
_FIXED = ("step", "iteration", "wall_time")
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


@dataclass
class RunData:
    """What ``show``/``ls`` print about one run."""

    path: str
    source: str  # the file (JSONL) or folder (TensorBoard) the numbers came from
    kind: str  # "jsonl" or "tensorboard"
    records: int = 0
    steps: int | None = None
    iterations: int | None = None
    first_time: float | None = None
    last_time: float | None = None
    #: tag -> values in step order, tags in order of first appearance
    curves: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: rows logged by ``log.remote()`` producers, by name: not the run's own series
    producer_rows: dict[str, int] = field(default_factory=dict)

    @property
    def wall_time(self) -> float | None:
        """Seconds from the first record to the last, when both are known."""
        if self.first_time is None or self.last_time is None:
            return None
        return max(self.last_time - self.first_time, 0.0)

    def last(self, tag: str) -> float | None:
        values = self.curves.get(tag)
        return values[-1] if values else None

    def best(self, tag: str) -> float | None:
        finite = [v for v in self.curves.get(tag, ()) if math.isfinite(v)]
        return max(finite) if finite else None


def _tb_files(path: str) -> list[str]:
    return sorted(glob.glob(os.path.join(glob.escape(path), TB_PATTERN)))


def is_run_dir(path: str) -> bool:
    """Whether ``path`` holds a ``metrics.jsonl`` or TensorBoard event files."""
    return os.path.isfile(os.path.join(path, JSONL_NAME)) or bool(_tb_files(path))


def find_runs(root: str) -> list[str]:
    """Every run folder at or below ``root``, sorted; a run's own subfolders are skipped.

    A folder with a live socket (or a killed run's) counts too, data or not yet."""
    from .._channel._paths import has_live_files

    found: list[str] = []
    for here, dirs, _files in os.walk(root):
        if is_run_dir(here) or has_live_files(here):
            found.append(here)
            dirs[:] = []  # its wandb/, checkpoints/ ... are part of the run
        else:
            dirs.sort()
    return sorted(found)


def _as_float(v: object) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        return _NONFINITE.get(v)
    return None


def _read_jsonl(run_dir: str, path: str) -> RunData:
    data = RunData(path=run_dir, source=path, kind="jsonl")
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    last_index = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    bad_middle = 0
    count = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not an object")
        except ValueError:
            if i == last_index:
                data.notes.append(f"{path}: the last record is truncated or corrupt; skipped")
            else:
                bad_middle += 1
            continue
        producer = row.get("producer")
        if isinstance(producer, str):  # a collector's own steps: kept apart, counted
            data.producer_rows[producer] = data.producer_rows.get(producer, 0) + 1
            continue
        step, it, wall = row.get("step"), row.get("iteration"), row.get("wall_time")
        if isinstance(step, int):
            data.steps = step
        if isinstance(it, int):
            data.iterations = it
        if isinstance(wall, int | float) and math.isfinite(wall):
            data.first_time = wall if data.first_time is None else min(data.first_time, wall)
            data.last_time = wall if data.last_time is None else max(data.last_time, wall)
        for tag, value in row.items():
            if tag in _FIXED:
                continue
            v = _as_float(value)
            if v is not None:
                # a tag missing from earlier records starts where it first appears
                data.curves.setdefault(tag, []).append(v)
        count += 1
    data.records = count
    if data.producer_rows:
        names = ", ".join(f"{n} ({k:,})" for n, k in sorted(data.producer_rows.items()))
        data.notes.append(
            f"{path}: rows from producers are not in these series: {names}; "
            "TensorBoard has each as its own run"
        )
    if bad_middle:
        data.notes.append(f"{path}: {bad_middle} unreadable line(s) skipped")
    return data


def _tfrecord_problem(path: str) -> str | None:
    """Why the TFRecord framing of ``path`` does not hold up to its end, or ``None``."""
    from .._backends._tfrecord import masked_crc32c

    with open(path, "rb") as f:
        raw = f.read()
    pos, n = 0, len(raw)
    while pos < n:
        if n - pos < 12:
            return "the last record is truncated"
        header = raw[pos : pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", raw[pos + 8 : pos + 12])
        if masked_crc32c(header) != header_crc:
            return f"a corrupt record at byte {pos}"
        end = pos + 12 + length + 4
        if end > n:
            return "the last record is truncated"
        (data_crc,) = struct.unpack("<I", raw[end - 4 : end])
        if masked_crc32c(raw[pos + 12 : end - 4]) != data_crc:
            return f"a corrupt record at byte {pos}"
        pos = end
    return None


def _read_tensorboard(run_dir: str, files: list[str]) -> RunData:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    data = RunData(path=run_dir, source=run_dir, kind="tensorboard")
    for path in files:
        problem = _tfrecord_problem(path)
        if problem is not None:
            data.notes.append(f"{path}: {problem}; read up to it")
    acc = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    acc.Reload()
    steps: set[int] = set()
    for tag in acc.Tags().get("scalars", []):
        events = acc.Scalars(tag)
        data.curves[tag] = [float(e.value) for e in events]
        for e in events:
            steps.add(int(e.step))
            t = float(e.wall_time)
            data.first_time = t if data.first_time is None else min(data.first_time, t)
            data.last_time = t if data.last_time is None else max(data.last_time, t)
    data.records = len(steps)
    data.steps = max(steps) if steps else None
    iters = data.curves.get("axis/iteration")
    if iters and math.isfinite(iters[-1]):
        data.iterations = int(iters[-1])
    return data


def read_run(run_dir: str) -> RunData | None:
    """Read ``run_dir``'s JSONL file, or failing that its TensorBoard files.

    ``None`` when the folder holds neither. A JSONL file without a single readable record
    falls back to the TensorBoard files when there are any.
    """
    jsonl = os.path.join(run_dir, JSONL_NAME)
    tb = _tb_files(run_dir)
    data: RunData | None = None
    if os.path.isfile(jsonl):
        data = _read_jsonl(run_dir, jsonl)
        if data.records > 0 or not tb:
            return data
    if tb:
        tb_data = _read_tensorboard(run_dir, tb)
        if data is not None:
            tb_data.notes[:0] = [*data.notes, f"{jsonl}: no readable records; read TensorBoard"]
        return tb_data
    return data
