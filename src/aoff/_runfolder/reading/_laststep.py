"""A run folder's last logged step, and its rows cut after a step: what resume needs.

Why a module of its own: the formats each know their own last step and cut
(``lines/_jsonl``, ``lines/_csv``, ``tensorboard/_files``); which of them a resume trusts, and in
which order, is one decision over the whole folder, made here.
"""

from __future__ import annotations

import os

from ..lines import _csv, _jsonl
from ..lines._csv import CSV_NAME
from ..lines._jsonl import JSONL_NAME
from ..tensorboard import _files

__all__ = ["TB_FILES", "cut_after", "last_logged_step"]

#: how the TensorBoard files are named in messages
TB_FILES = "TensorBoard event files"


def last_logged_step(log_dir: str) -> tuple[int | None, list[str], list[str]]:
    """``(last step, read from, found)``: the last row of ``metrics.jsonl`` and
    ``progress.csv`` (the larger), else (when neither has a row) the TensorBoard files;
    ``read from`` names the files the step came from, ``found`` every file kind present
    (empty: no run in the folder)."""
    found: list[str] = []
    used: list[str] = []
    steps: list[int] = []
    for name, last in ((JSONL_NAME, _jsonl.last_step), (CSV_NAME, _csv.last_step)):
        path = os.path.join(log_dir, name)
        if os.path.isfile(path):
            found.append(name)
            step = last(path)
            if step is not None:
                steps.append(step)
                used.append(name)
    tb = _files.event_files(log_dir) if os.path.isdir(log_dir) else []
    if tb:
        found.append(TB_FILES)
        if not steps:  # the tails above are cheap; a TB scan only without them
            step = _files.last_step(tb)
            if step is not None:
                steps.append(step)
                used.append(TB_FILES)
    return (max(steps) if steps else None), used, found


def cut_after(log_dir: str, step: int) -> None:
    """Drop every row after ``step`` from ``metrics.jsonl`` and ``progress.csv`` (the
    TensorBoard files are not cut: the resumed writer's ``SessionLog.START`` hides their
    later points, as TensorBoard reads them)."""
    jsonl = os.path.join(log_dir, JSONL_NAME)
    if os.path.isfile(jsonl):
        _jsonl.cut_after(jsonl, step)
    path = os.path.join(log_dir, CSV_NAME)
    if os.path.isfile(path):
        _csv.cut_after(path, step)
