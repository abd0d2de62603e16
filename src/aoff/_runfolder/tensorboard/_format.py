"""TensorBoard event files as a :class:`~aoff._runfolder._format.RunFormat`.

Why a module of its own: it is what the readers, resume and run discovery ask of the
event files, in the words of the format table; the answers live in the modules beside it
(names and last step ``_files``, the parser ``_evfolder``). A run's event files in its
sub-folders are read too, each sub-folder as TensorBoard reads it (a run of its own),
its path and ``/`` before its tags. Resume does not cut them: a resumed writer's
``SessionLog.START`` hides their later points, as TensorBoard reads them.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._tagseries import Series
from ._files import event_files, event_folders, is_events_name, last_step

if TYPE_CHECKING:
    from ._evfolder import EventFolder

__all__ = ["TENSORBOARD", "EventPoints", "TensorBoardFormat"]


class EventPoints:
    """The points of a run's event files (or of one event file), read incrementally."""

    def __init__(self, path: str, tags: Collection[str] | None) -> None:
        self.path = path
        self.tags = tags
        self.single = os.path.isfile(path)
        self.folders: dict[str, EventFolder] = {}

    def read(self) -> list[dict[str, Series]]:
        # the parser (NumPy) only once a file is read: the training process reads this
        # table through the backend registry and never reads a file back
        from ._evfolder import EventFolder

        groups = {"": [self.path]} if self.single else event_folders(self.path)
        out = []
        for rel, files in groups.items():
            folder = self.folders.get(rel)
            if folder is None:
                prefix = rel.replace(os.sep, "/") + "/" if rel else ""
                folder = self.folders[rel] = EventFolder(prefix, self.tags)
            folder.read(files)
            out.append(folder.series)
        return out

    def problems(self) -> list[tuple[str, int, int]]:
        return [
            (c.path, c.corrupt, c.torn)
            for folder in self.folders.values()
            for c in folder.cursors.values()
        ]

    def notes(self) -> list[str]:
        return []

    @property
    def rows(self) -> int | None:
        return None

    @property
    def iteration(self) -> int | None:
        return None

    def apart(self) -> dict[str, int]:
        return {}

    @property
    def bytes_read(self) -> int:
        return sum(f.bytes_read for f in self.folders.values())

    @property
    def bulk_records(self) -> int:
        return sum(f.bulk_records for f in self.folders.values())

    @property
    def retracted(self) -> list[tuple[int, frozenset[str] | None]]:
        return [r for f in self.folders.values() for r in f.retracted]

    def handed_out(self) -> None:
        for folder in self.folders.values():
            folder.handed_out = True


@dataclass(frozen=True)
class TensorBoardFormat:
    """``events.out.tfevents.*``: aoff's, or any other writer's."""

    name: str = "tensorboard"
    label: str = "TensorBoard event files"
    exact: bool = False
    holds_points: bool = True
    last_step_fallback: bool = True

    def files(self, folder: str) -> list[str]:
        return event_files(folder, hparams=True)

    def points(self, path: str, tags: Collection[str] | None) -> EventPoints | None:
        if os.path.isfile(path):
            found = is_events_name(os.path.basename(path))
        else:
            found = bool(event_folders(path))
        return EventPoints(path, tags) if found else None

    def last_step(self, folder: str) -> int | None:
        files = event_files(folder) if os.path.isdir(folder) else []
        return last_step(files) if files else None

    def cut_after(self, folder: str, step: int) -> None:
        return


TENSORBOARD = TensorBoardFormat()
