"""A run's data files read into a :class:`~aoff._runfolder.reading._rundata.RunData`:
the TensorBoard event files, or any other format's points (``metrics.jsonl``,
``progress.csv``, a format added since), read by the reader :func:`aoff.read_scalars`
uses, so the two agree on every value.

Why a module of its own: these are the slow paths, for a run without a usable summary;
each keeps everything before a torn or unreadable record and adds a one-line note naming
the file. The event files are read by aoff's own scalar reader
(:mod:`aoff._runfolder.tensorboard._scan`, >100 MB/s, the one event parser with its
policy at a corrupt record set to stop there, as TensorBoard does), imported only when
needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .._format import RunFormat
from ._rundata import REWARD_TAG, RunData, stats_of

__all__ = ["read_points", "read_tensorboard"]


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


def read_points(run_dir: str, fmt: RunFormat) -> RunData | None:
    """The run's own points in ``fmt`` (its producers' and sub-runs' rows named in a note,
    as TensorBoard shows each as a run of its own); None when it has none there."""
    import numpy as np

    from .._tagseries import joined

    points = fmt.points(run_dir, None)
    if points is None:
        return None
    groups = points.read()
    own = groups[0] if groups else {}
    files = fmt.files(run_dir)
    source = files[0] if len(files) == 1 else run_dir
    data = RunData(path=run_dir, source=source, kind=fmt.name)
    steps: list[int] = []
    walls: list[float] = []
    every_steps = []
    for tag, series in own.items():
        s, w, v = joined(series.take_parts())
        if len(v):
            data.tags[tag] = stats_of(v)
            steps.append(int(s.max()))
            every_steps.append(s)
            finite = w[np.isfinite(w)]
            if len(finite):
                walls += [float(finite.min()), float(finite.max())]
    rows = points.rows
    if rows is None:
        rows = len(np.unique(np.concatenate(every_steps))) if every_steps else 0
    data.records = rows
    data.steps = max(steps) if steps else None
    data.first_time = min(walls) if walls else None
    data.last_time = max(walls) if walls else None
    it = data.tags.get("axis/iteration")
    if points.iteration is not None:
        data.iterations = points.iteration
    elif it is not None and math.isfinite(it.last):
        data.iterations = int(it.last)
    apart = points.apart()
    if apart:
        data.producer_rows = dict(apart)
        names = ", ".join(f"{n} ({k:,})" for n, k in sorted(apart.items()))
        data.notes.append(
            f"{source}: rows from producers are not in these series: {names}; "
            "TensorBoard has each as its own run"
        )
    for path, corrupt, torn in points.problems():
        if torn:
            data.notes.append(f"{path}: the last record is truncated or corrupt; skipped")
        if corrupt:
            data.notes.append(f"{path}: {corrupt} unreadable line(s) skipped")
    data.notes += points.notes()
    return data
