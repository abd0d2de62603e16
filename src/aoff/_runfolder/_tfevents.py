"""TensorBoard event files: their names, and where a run keeps them.

Why a module of its own: writers name new files (``events.out.tfevents.<time>.<host>...``),
``aoff ls/show``, resume and :func:`aoff.read_scalars` find them; the names are spelled
here once. TensorBoard reads a folder's files sorted by name and takes any file whose
name holds ``tfevents``; each sub-folder is a run of its own.
"""

from __future__ import annotations

import glob
import os

__all__ = [
    "EVENTS_PATTERN",
    "EVENTS_PREFIX",
    "HPARAMS_FILE_PREFIX",
    "event_files",
    "event_folders",
    "is_events_name",
]

EVENTS_PREFIX = "events.out.tfevents."
EVENTS_PATTERN = EVENTS_PREFIX + "*"
#: aoff's HParams file (config and final metrics, ``_backends/_hparams.py``): no run
#: steps in it, so the readers of a run's series leave it out
HPARAMS_FILE_PREFIX = EVENTS_PREFIX + "0000000000.aoff-hparams."
_MARK = "tfevents"


def is_events_name(name: str) -> bool:
    """Whether TensorBoard would read a file of this name (basename) as events."""
    return _MARK in name


def event_files(folder: str, *, hparams: bool = False) -> list[str]:
    """The folder's ``events.out.tfevents.*`` files, sorted by name (as TensorBoard reads
    them); aoff's HParams file only when ``hparams``."""
    files = sorted(glob.glob(os.path.join(glob.escape(folder), EVENTS_PATTERN)))
    if hparams:
        return files
    return [f for f in files if not os.path.basename(f).startswith(HPARAMS_FILE_PREFIX)]


def event_folders(root: str) -> dict[str, list[str]]:
    """Every folder at or below ``root`` with event files: its path relative to ``root``
    (``""`` for ``root`` itself) -> its files sorted by name (any name holding
    ``tfevents``, as TensorBoard; aoff's HParams file left out). Symlinked folders are
    followed once each."""
    found: dict[str, list[str]] = {}
    seen: set[str] = set()
    for here, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(here)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        names = sorted(
            n for n in files if is_events_name(n) and not n.startswith(HPARAMS_FILE_PREFIX)
        )
        if names:
            rel = os.path.relpath(here, root)
            found["" if rel == "." else rel] = [os.path.join(here, n) for n in names]
    return found
