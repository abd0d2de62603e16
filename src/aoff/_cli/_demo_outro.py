"""Where a run's files are and how to open them: the lines the demo ends with.

Why a module of its own: they are commands that must run as printed (the scripts next to
``sys.executable``: after the README's install they are only in ``.venv/bin``, not on
``PATH``), and ``examples/_sac.py`` prints the same lines (a test compares them); finding
those scripts and W&B's run folder is apart from running the demo.
"""

from __future__ import annotations

import glob
import os
import shlex
import sys
from collections.abc import Sequence
from typing import TextIO

from .._runfolder._configfile import CONFIG_NAME
from .._runfolder.lines._csv import CSV_NAME
from .._runfolder.lines._jsonl import JSONL_NAME
from .._runfolder.summary._file import SUMMARY_NAME
from ._demo_config import DemoConfig

__all__ = ["FILE_LINES", "closing_lines", "print_outro"]


def _script(name: str) -> str | None:
    """The console script ``name`` next to ``sys.executable``, as a command prefix.

    Shown relative to the current folder when it is inside it (``.venv/bin/tensorboard``),
    else absolute; ``None`` when there is no such script.
    """
    folder = os.path.dirname(sys.executable)
    for candidate in (name, name + ".exe"):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            cwd = os.getcwd()
            absolute = os.path.abspath(path)
            if os.path.commonpath([cwd, absolute]) == cwd:
                rel = os.path.relpath(absolute, cwd)
                path = rel if os.sep in rel else os.path.join(".", rel)
            return shlex.quote(path)
    return None


def _command(script: str, module: str) -> str:
    """How to run ``script`` as printed: the script itself, else ``python -m module``."""
    found = _script(script)
    return found if found is not None else f"{shlex.quote(sys.executable)} -m {module}"


def _wandb_run_folder(cfg: DemoConfig) -> str | None:
    """The newest ``offline-run-*``/``run-*`` folder wandb left under ``<run_dir>/wandb``."""
    root = glob.escape(os.path.join(cfg.run_dir, "wandb"))
    found = [
        p
        for pattern in ("offline-run-*", "run-*")
        for p in glob.glob(os.path.join(root, pattern))
        if os.path.isdir(p)
    ]
    return max(found, key=os.path.getmtime) if found else None


#: what each file backend writes, and the label the closing lines give it
FILE_LINES = (
    ("tensorboard", "TensorBoard files", ""),
    ("jsonl", "JSON Lines", JSONL_NAME),
    ("csv", "CSV", CSV_NAME),
)


def closing_lines(run_dir: str, backends: Sequence[str]) -> list[str]:
    """Where a run's files are and how to open them, as commands that run as printed.

    ``examples/_sac.py`` prints the same lines (a test compares them): every file written,
    TensorBoard opened on the run's parent folder (so runs side by side compare), and
    ``aoff show`` on the run."""
    lines: list[str] = []
    for name, label, file in FILE_LINES:
        if name in backends:
            lines.append(f"{label + ':':<19}{os.path.join(run_dir, file) if file else run_dir}")
    for file, label in ((CONFIG_NAME, "Config"), (SUMMARY_NAME, "Run summary")):
        if os.path.isfile(os.path.join(run_dir, file)):  # aoff's own files, when written
            lines.append(f"{label + ':':<19}{os.path.join(run_dir, file)}")
    if "tensorboard" in backends:
        parent = shlex.quote(os.path.dirname(os.path.normpath(run_dir)) or ".")
        tb = _command("tensorboard", "tensorboard.main")
        lines.append(f"{'Open them with:':<19}{tb} --logdir {parent}")
    if any(name in backends for name, _, _ in FILE_LINES):
        lines.append(f"{'Summary:':<19}{_command('aoff', 'aoff')} show {shlex.quote(run_dir)}")
    return lines


def print_outro(cfg: DemoConfig, out: TextIO) -> None:
    lines = closing_lines(cfg.run_dir, cfg.backends)
    if "wandb" in cfg.backends:
        folder = _wandb_run_folder(cfg)
        if folder is None:
            where = os.path.join(cfg.run_dir, "wandb")
            lines.append(f"W&B:               no run folder under {where}; see the output above")
        else:
            lines.append(f"W&B run folder:    {folder}")
            sync = _command("wandb", "wandb")
            lines.append(f"Upload it with:    {sync} sync {shlex.quote(folder)}")
    if not lines:
        lines.append("No backend was chosen (--backends none): nothing was written.")
    print("\n".join(lines), file=out)
