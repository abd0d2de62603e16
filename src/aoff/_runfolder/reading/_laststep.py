"""A run folder's last logged step, and its rows cut after a step: what resume needs.

Why a module of its own: the formats each know their own last step and cut (the format
table, ``_formats``); which of them a resume trusts, and in which order, is one decision
over the whole folder, made here: the last step is the largest of the formats that read
it cheaply (a line file's last row), and only when none has one, a fallback's
(TensorBoard's, a scan of whole files); every format cuts its own rows.
"""

from __future__ import annotations

from ._formats import formats

__all__ = ["cut_after", "last_logged_step"]


def last_logged_step(log_dir: str) -> tuple[int | None, list[str], list[str]]:
    """``(last step, read from, found)``: the largest last step of the formats that read
    it from their files' ends (``metrics.jsonl``, ``progress.csv``, ...), else (when none
    has a row) the fallback's (the TensorBoard files); ``read from`` names the files the
    step came from, ``found`` every format present (empty: no run in the folder)."""
    found: list[str] = []
    used: list[str] = []
    steps: list[int] = []
    present = [f for f in formats() if f.holds_points and f.files(log_dir)]
    found = [f.label for f in present]
    for fallback in (False, True):
        if steps:
            break  # the tails above are cheap; a fallback's scan only without them
        for fmt in present:
            if fmt.last_step_fallback != fallback:
                continue
            step = fmt.last_step(log_dir)
            if step is not None:
                steps.append(step)
                used.append(fmt.label)
    return (max(steps) if steps else None), used, found


def cut_after(log_dir: str, step: int) -> None:
    """Drop every row after ``step`` from each format's files (the TensorBoard files are
    not cut: the resumed writer's ``SessionLog.START`` hides their later points, as
    TensorBoard reads them)."""
    for fmt in formats():
        fmt.cut_after(log_dir, step)
