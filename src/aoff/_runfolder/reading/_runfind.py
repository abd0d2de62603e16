"""Which folders are runs: the one meaning of "a run" and "a folder of runs" that
``aoff ls``, ``show``, ``compare``, ``export`` and :func:`aoff.read_scalars` share.

Why a module of its own: finding runs (following symlinks once each, counting a folder
with a live socket, naming a folder that cannot be listed) is apart from reading one;
``aoff attach`` uses the test too. It reads names only, never a file's content.

A run is a folder that holds a file of any run folder format (the format table: a run
summary, ``metrics.jsonl``, ``progress.csv``, aoff's or SB3's own, TensorBoard event
files, or a format added since); its sub-folders are part of it (a
``SummaryWriter``'s ``add_scalars`` runs, ``wandb/``). A folder that is not a run but
holds runs below it is a folder of runs: each run in it is named by its path under the
folder as given (:func:`runs_in`).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..summary._format import SUMMARY
from ..tensorboard._files import event_files, folder_id
from ._formats import formats

__all__ = ["find_runs", "is_run_dir", "runs_in", "summary_files", "tb_files"]


def tb_files(path: str, *, hparams: bool = False) -> list[str]:
    """The run's event files, sorted by name (as TensorBoard reads them); aoff's HParams
    file (config and final metrics: no run steps in it, so ``show``/``ls`` leave it out,
    as the run summary does) only when ``hparams``."""
    return event_files(path, hparams=hparams)


def summary_files(path: str) -> list[str]:
    """The run summaries in ``path``: one per session or writer that wrote there."""
    return SUMMARY.files(path)


def is_run_dir(path: str) -> bool:
    """Whether ``path`` holds a file of any run folder format (``_formats``: a run
    summary, ``metrics.jsonl``, ``progress.csv``, TensorBoard event files, or a format
    added since)."""
    return any(fmt.files(path) for fmt in formats())


def runs_in(
    path: str, skipped: list[str] | None = None, *, live: Callable[[str], bool] | None = None
) -> list[str]:
    """The runs ``path`` names: itself when it is a run (or not a folder: a file, or a
    path that does not exist, for the caller to refuse), else every run below it, each
    ``os.path.join(path, <its path under it>)``; ``[]`` for a folder with no run in it."""
    if not os.path.isdir(path) or is_run_dir(path) or (live is not None and live(path)):
        return [path]
    return find_runs(path, skipped, live=live)


def find_runs(
    root: str, skipped: list[str] | None = None, *, live: Callable[[str], bool] | None = None
) -> list[str]:
    """Every run folder at or below ``root``, sorted; a run's own subfolders are skipped.

    Symlinked folders are followed (each real folder once). A folder for which ``live``
    says yes (the caller's test for a live socket, or a killed run's: the channel owns
    those names, above this part) counts too, data or not yet. A folder that cannot be
    listed is named in ``skipped`` (``"<path>: <why>"``) and left out."""
    found: list[str] = []
    seen: set[tuple[int, int] | str] = set()

    def problem(exc: OSError) -> None:
        if skipped is not None:
            skipped.append(f"{exc.filename or root}: {exc.strerror or exc}")

    for here, dirs, _files in os.walk(root, onerror=problem, followlinks=True):
        real = folder_id(here)
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
