"""One tag's points of each run, for ``aoff compare``: steps and values, nothing else.

Why a module of its own: ``compare`` needs each run's whole series of one tag (not the
bucketed curve ``show`` draws), from whatever a run folder holds — its event files (in
the folder and its sub-folders, as TensorBoard reads them), else aoff's ``metrics.jsonl``.
Reading problems (a torn record, a folder that cannot be read) come back as one line each,
and the run goes on with what could be read, or is left out with its line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._rundata import JSONL_NAME, NONFINITE
from ._runfind import tb_files

__all__ = ["Series", "event_files", "read_series"]


@dataclass
class Series:
    """A run's points of one tag, sorted by step as TensorBoard shows them."""

    steps: np.ndarray[Any, np.dtype[np.float64]]
    values: np.ndarray[Any, np.dtype[np.float64]]
    tags: list[str] = field(default_factory=list)  # every scalar tag the run has


def event_files(run: str) -> list[str]:
    """The event files of ``run`` and of its sub-folders, by folder then by name."""
    found: list[str] = []
    for here, dirs, _files in os.walk(run):
        dirs.sort()
        found.extend(tb_files(here))
    return found


def _jsonl(path: str, tag: str, notes: list[str]) -> Series:
    steps: list[float] = []
    values: list[float] = []
    tags: dict[str, None] = {}
    bad = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if not isinstance(row, dict) or "producer" in row or "media" in row:
                continue
            for k in row:
                if k not in ("step", "iteration", "wall_time"):
                    tags.setdefault(k)
            v = row.get(tag)
            v = NONFINITE.get(v, v) if isinstance(v, str) else v
            if isinstance(v, int | float) and isinstance(row.get("step"), int):
                steps.append(float(row["step"]))
                values.append(float(v))
    if bad:
        notes.append(f"{path}: {bad} unreadable line(s) skipped")
    return Series(np.asarray(steps), np.asarray(values), list(tags))


def read_series(
    run: str, tag: str, notes: list[str], progress: Callable[[int], None] | None = None
) -> Series | None:
    """``run``'s points of ``tag`` (an empty series when it has none); ``None`` when the
    folder holds no event file nor ``metrics.jsonl``. Raises ``OSError`` when a file
    cannot be read."""
    files = event_files(run)
    if not files:
        jsonl = os.path.join(run, JSONL_NAME)
        return _jsonl(jsonl, tag, notes) if os.path.isfile(jsonl) else None
    from .._backends._tbread import scan_files

    scan = scan_files(files, progress)
    for path, problem in scan.problems:
        notes.append(f"{path}: {problem}; read up to it")
    got = scan.tags.get(tag)
    if got is None:
        return Series(np.empty(0), np.empty(0), list(scan.tags))
    return Series(got.steps.astype(np.float64), got.values.copy(), list(scan.tags))
