"""``aoff show --json`` and ``aoff ls --json``: what a person sees, for scripts and agents.

Why a module of its own: the JSON is an interface (scripts parse it), so its shape is
written down once here. Numbers that JSON cannot hold (NaN, infinities) are the strings
``"nan"``, ``"inf"``, ``"-inf"``, as in the run summary file; a number not known is
``null``.

``show``: ``{"run", "source", "kind", "records", "steps", "iterations",
"max_iterations", "wall_time", "state", "writers", "axes": [the run's axes, as ``aoff
compare --x`` names them], "tags": {tag: {"count", "first",
"last", "min", "max"}}, "media": {"written", "refused", "lost": {reason: n}} or null
(known from the run summary only), "notes": [...]}``. ``ls``: a list of ``{"run", "steps",
"last_reward", "wall_time", "status", "writers"}``, one per run folder.
"""

from __future__ import annotations

from typing import Any

from .._runfolder._nonfinite import to_json_float
from .._runfolder.reading._axiscols import axes_of
from .._runfolder.reading._rundata import REWARD_TAG, RunData

__all__ = ["ls_row", "show_json"]


_num = to_json_float


def show_json(data: RunData, state: str | None) -> dict[str, Any]:
    return {
        "run": data.path,
        "source": data.source,
        "kind": data.kind,
        "records": data.records,
        "steps": data.steps,
        "iterations": data.iterations,
        "max_iterations": data.max_iterations,
        "wall_time": _num(data.wall_time),
        "state": state,
        "writers": data.writers,
        "axes": axes_of(data.tags),
        "tags": {
            tag: {
                "count": t.count,
                "first": _num(t.first),
                "last": _num(t.last),
                "min": _num(t.lo),
                "max": _num(t.hi),
            }
            for tag, t in data.tags.items()
        },
        "media": None
        if data.media_written is None
        else {
            "written": data.media_written,
            "refused": data.media_refused,
            "lost": dict(data.media_lost),
        },
        "notes": list(data.notes),
    }


def ls_row(name: str, data: RunData | None, status: str) -> dict[str, Any]:
    return {
        "run": name,
        "steps": None if data is None else data.steps,
        "last_reward": None if data is None else _num(data.last(REWARD_TAG)),
        "wall_time": None if data is None else _num(data.wall_time),
        "status": status,
        "writers": None if data is None else data.writers,
    }
