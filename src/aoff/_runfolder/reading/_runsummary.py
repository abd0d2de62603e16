"""The run summary file (``aoff-summary.json``) as ``show`` and ``ls`` print it.

Why a module of its own: the summary (a few kilobytes, whatever the run's length, kept by
the pump: :mod:`aoff._runfolder.summary._writer`) is the fast path of ``show`` and ``ls``; when
it may stand for the run is the run folder's rule (:mod:`aoff._runfolder.summary._file`),
how its numbers turn into :class:`RunData` is this module's. It is read without
importing numpy or the writer's module: ``ls`` stays light.
"""

from __future__ import annotations

import math
import os
from typing import Any

from .._nonfinite import from_json_float
from ..summary._file import SUMMARY_NAME
from ..summary._file import load_summary as load_one
from ._formats import writers
from ._rundata import RunData, TagStats
from ._runfind import summary_files

__all__ = ["from_summary", "load_summary", "sessions_state"]


def load_summary(run_dir: str, *, live: bool) -> tuple[str, dict[str, Any]] | None:
    """The summary file and its content when it may stand for the run: the folder's only
    session or writer (one ``aoff-summary.json``, at most one event file), and the file
    itself may (:func:`aoff._runfolder.summary._file.load_summary`); ``None`` when there
    are several (their data files hold the union) or it may not."""
    only = os.path.join(run_dir, SUMMARY_NAME)
    if summary_files(run_dir) != [only] or writers(run_dir) > 1:
        return None
    content = load_one(run_dir, live=live)
    return None if content is None else (only, content)


def sessions_state(run_dir: str, *, live: bool) -> str | None:
    """How a run read from its data files ended, from its sessions' summaries when every
    one says the same (``"finished"``): several sessions wrote into the folder, or a data
    file was cut since (the summary's numbers no longer stand for the files; how the run
    ended still does). ``None`` when one is missing, left by a killed session, or they
    differ: the data files say nothing of it."""
    states = set()
    for path in summary_files(run_dir):
        name = os.path.basename(path)
        content = load_one(run_dir, live=live, name=name, check_files=False)
        if content is None:
            return None
        states.add(str(content.get("state")))
    return states.pop() if len(states) == 1 else None


_num = from_json_float  # the summary's numbers, read without its writer (numpy)


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
        late = content.get("late")
        if isinstance(late, dict):
            producers = late.get("producers") or {}
            data.late_records = int(late.get("records", 0)) + sum(map(int, producers.values()))
        stopped = content.get("stopped")
        if isinstance(stopped, dict):
            data.stopped_by = (
                f"stopped at iteration {int(stopped['iteration']):,} by rule {stopped['rule']}"
            )
        media = content.get("media")
        if isinstance(media, dict):
            data.media_written = int(media.get("written", 0))
            data.media_refused = int(media.get("refused", 0))
            lost = media.get("lost") or {}
            data.media_lost = {str(why): int(n) for why, n in lost.items() if int(n)}
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
