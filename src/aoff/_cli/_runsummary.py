"""The run summary file (``aoff-summary.json``) read back, when it may stand for the run.

Why a module of its own: the summary (a few kilobytes, whatever the run's length, kept by
the pump: :mod:`aoff._backends._summary`) is the fast path of ``show`` and ``ls``, with
rules of its own: when it stands for the run (finished, or refreshed by a live run; not
left by a killed one, not when a data file was cut since) and how its numbers are
written. It is read without importing numpy or the writer's module: ``ls`` stays light.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from ._rundata import NONFINITE, RunData, TagStats
from ._runfind import summary_files, tb_files

__all__ = ["from_summary", "load_summary"]


def writers(run_dir: str) -> int:
    """How many sessions or writers wrote into ``run_dir``: its summaries (one each) or
    its event files (one each), whichever are more."""
    return max(len(summary_files(run_dir)), len(tb_files(run_dir)), 1)


def load_summary(run_dir: str, *, live: bool) -> tuple[str, dict[str, Any]] | None:
    """The summary file and its content when it may stand for the run: the folder's only
    session or writer, finished (or interrupted) or still refreshing it while live;
    ``None`` when absent, unreadable, one of several (the files hold their union) or
    left by a run that was killed (its files go further than it)."""
    found = summary_files(run_dir)
    if len(found) != 1 or len(tb_files(run_dir)) > 1:
        return None
    path = found[0]
    try:
        with open(path, "rb") as f:
            content = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("format") != "aoff.run-summary":
        return None
    if content.get("version") != 1 or not isinstance(content.get("tags"), dict):
        return None
    if content.get("state") == "running" and not live:
        return None
    files = content.get("files")
    if isinstance(files, dict):  # a data file cut since: read the files, say what is lost
        for name, size in files.items():
            try:
                if os.path.getsize(os.path.join(run_dir, str(name))) < int(size):
                    return None
            except (OSError, TypeError, ValueError):
                return None
    return path, content


def _num(v: object) -> float | None:
    """A number of the summary file (``_backends._summary.to_json_float``'s output);
    read here without importing numpy, which ``ls`` does not need."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and v in NONFINITE:
        return NONFINITE[v]
    raise ValueError(f"not a number: {v!r}")


def _nan_if_none(v: float | None) -> float:
    return math.nan if v is None else v


def from_summary(run_dir: str, path: str, content: dict[str, Any]) -> RunData | None:
    data = RunData(path=run_dir, source=path, kind="summary")
    try:
        data.records = int(content["records"])
        for name in ("steps", "iterations", "max_iterations"):
            v = content.get({"steps": "step", "iterations": "iteration"}.get(name, name))
            setattr(data, name, None if v is None else int(v))
        data.first_time = _num(content.get("first_time"))
        data.last_time = _num(content.get("last_time"))
        data.state = str(content.get("state"))
        for tag, t in content["tags"].items():
            curve = [_num(v) for v in t["curve"]]
            data.tags[str(tag)] = TagStats(
                count=int(t["count"]),
                first=_nan_if_none(_num(t["first"])),
                last=_nan_if_none(_num(t["last"])),
                lo=_num(t.get("min")),
                hi=_num(t.get("max")),
                curve=[_nan_if_none(v) for v in curve],
            )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return data
