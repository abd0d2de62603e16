"""A run's data files read into a :class:`~aoff._runfolder.reading._rundata.RunData`:
``metrics.jsonl``
(exact float64 values), the TensorBoard event files, or ``progress.csv`` (aoff's or
SB3's own, read as :func:`aoff.read_scalars` reads it).

Why a module of its own: these are the slow paths, for a run without a usable summary;
each keeps everything before a torn or unreadable record and adds a one-line note naming
the file. The event files are read by aoff's own scalar reader
(:mod:`aoff._runfolder.tensorboard._scan`, >100 MB/s), imported only when needed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from ._rundata import NONFINITE, REWARD_TAG, RunData, stats_of

__all__ = ["read_csv", "read_jsonl", "read_tensorboard"]

_FIXED = ("step", "iteration", "wall_time")


def _as_float(v: object) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        return NONFINITE.get(v)
    return None


def read_jsonl(run_dir: str, path: str) -> RunData:
    data = RunData(path=run_dir, source=path, kind="jsonl")
    curves: dict[str, list[float]] = {}
    with open(path, "rb") as f:
        raw = f.read()
    lines = raw.split(b"\n")
    last_index = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    bad_middle = 0
    huge = 0
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
        if isinstance(row.get("media"), str):  # a media file's row (_backends/_mediafiles)
            continue
        producer = row.get("producer")
        if isinstance(producer, str):  # a collector's own steps: kept apart, counted
            data.producer_rows[producer] = data.producer_rows.get(producer, 0) + 1
            continue
        step, it, wall = row.get("step"), row.get("iteration"), row.get("wall_time")
        if isinstance(step, int) and not -(2**63) <= step < 2**63:
            huge += 1  # refused as aoff.read_scalars refuses it, and said
            continue
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
                curves.setdefault(tag, []).append(v)
        count += 1
    data.records = count
    data.tags = {tag: stats_of(values) for tag, values in curves.items()}
    if data.producer_rows:
        names = ", ".join(f"{n} ({k:,})" for n, k in sorted(data.producer_rows.items()))
        data.notes.append(
            f"{path}: rows from producers are not in these series: {names}; "
            "TensorBoard has each as its own run"
        )
    if bad_middle:
        data.notes.append(f"{path}: {bad_middle} unreadable line(s) skipped")
    if huge:
        data.notes.append(f"{path}: {huge} row(s) with a step beyond int64 refused")
    return data


def read_tensorboard(
    run_dir: str, files: list[str], progress: Callable[[int], None] | None, *, ends: bool = False
) -> RunData:
    from ..tensorboard._scan import scan_files, scan_last

    scan = scan_last(files, progress) if ends else None
    if scan is None or REWARD_TAG not in scan.tags:
        scan = scan_files(files, progress)
    data = RunData(path=run_dir, source=run_dir, kind="tensorboard")
    for path, problem in scan.problems:
        data.notes.append(f"{path}: {problem}; read up to it")
    data.first_time, data.last_time = scan.first_time, scan.last_time
    data.records = scan.records
    steps = [int(s.steps.max()) for s in scan.tags.values()]
    data.steps = max(steps) if steps else None
    data.tags = {tag: stats_of(s.values) for tag, s in scan.tags.items()}
    it = data.tags.get("axis/iteration")
    if it is not None and math.isfinite(it.last):
        data.iterations = int(it.last)
    return data


def read_csv(run_dir: str, path: str) -> RunData:
    """``progress.csv`` by the reader :func:`aoff.read_scalars` uses (so SB3's own file,
    whose step is ``time/total_timesteps``, reads as SB3 wrote it)."""
    import numpy as np

    from .._tagseries import joined
    from ..lines._csv import CsvScalars

    reader = CsvScalars(path, None)
    reader.read()
    data = RunData(path=run_dir, source=path, kind="csv")
    data.records = reader.rows_seen
    steps: list[int] = []
    walls: list[float] = []
    for tag, series in reader.sink.series.items():
        s, w, v = joined(series.take_parts())
        if len(v):
            data.tags[tag] = stats_of(v)
            steps.append(int(s.max()))
            finite = w[np.isfinite(w)]
            if len(finite):
                walls += [float(finite.min()), float(finite.max())]
    data.steps = max(steps) if steps else None
    data.first_time = min(walls) if walls else None
    data.last_time = max(walls) if walls else None
    it = data.tags.get("axis/iteration")
    if it is not None and math.isfinite(it.last):
        data.iterations = int(it.last)
    data.notes += reader.sink.notes(path)
    if reader.cursor.corrupt:
        data.notes.append(f"{path}: {reader.cursor.corrupt} unreadable row(s) skipped")
    return data
