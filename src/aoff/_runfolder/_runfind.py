"""Which folders are runs: ``aoff ls``'s walk and the test for one folder.

Why a module of its own: finding runs (following symlinks once each, counting a folder
with a live socket, naming a folder that cannot be listed) is apart from reading one;
``aoff attach`` uses the test too. It reads names only, never a file's content.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable

from ._rundata import JSONL_NAME, SUMMARY_GLOB
from ._tfevents import event_files

__all__ = ["find_runs", "is_run_dir", "summary_files", "tb_files"]


def tb_files(path: str, *, hparams: bool = False) -> list[str]:
    """The run's event files, sorted by name (as TensorBoard reads them); aoff's HParams
    file (config and final metrics: no run steps in it, so ``show``/``ls`` leave it out,
    as the run summary does) only when ``hparams``."""
    return event_files(path, hparams=hparams)


def summary_files(path: str) -> list[str]:
    """The run summaries in ``path``: one per session or writer that wrote there."""
    return sorted(glob.glob(os.path.join(glob.escape(path), SUMMARY_GLOB)))


def is_run_dir(path: str) -> bool:
    """Whether ``path`` holds a run summary, a ``metrics.jsonl`` or TensorBoard event files."""
    return (
        bool(summary_files(path))
        or os.path.isfile(os.path.join(path, JSONL_NAME))
        or bool(tb_files(path, hparams=True))
    )


def find_runs(
    root: str, skipped: list[str] | None = None, *, live: Callable[[str], bool] | None = None
) -> list[str]:
    """Every run folder at or below ``root``, sorted; a run's own subfolders are skipped.

    Symlinked folders are followed (each real folder once). A folder for which ``live``
    says yes (the caller's test for a live socket, or a killed run's: the channel owns
    those names, above this part) counts too, data or not yet. A folder that cannot be
    listed is named in ``skipped`` (``"<path>: <why>"``) and left out."""
    found: list[str] = []
    seen: set[str] = set()

    def problem(exc: OSError) -> None:
        if skipped is not None:
            skipped.append(f"{exc.filename or root}: {exc.strerror or exc}")

    for here, dirs, _files in os.walk(root, onerror=problem, followlinks=True):
        real = os.path.realpath(here)
        if real in seen:  # a link back up, or two links to one folder
            dirs[:] = []
            continue
        seen.add(real)
        try:
            is_run = is_run_dir(here) or (live is not None and live(here))
        except OSError as exc:
            problem(exc)
            dirs[:] = []
            continue
        if is_run:
            found.append(here)
            dirs[:] = []  # its wandb/, checkpoints/ ... are part of the run
        else:
            dirs.sort()
    return sorted(found)
