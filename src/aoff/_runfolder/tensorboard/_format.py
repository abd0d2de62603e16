"""TensorBoard event files as a :class:`~aoff._runfolder._format.RunFormat`.

Why a module of its own: it is what the readers, resume, run discovery and aoff's
TensorBoard backend ask of the event files, in the words of the format table; the
answers live in the modules beside it (names and last step ``_files``, the parser
``_evfolder``, the encoders ``_encode``, ``_media`` and ``_hparams``). The backend owns
the files (which one a record goes to, the lock, flushing); the format owns the bytes.
A run's event files in its sub-folders are read too, each sub-folder as TensorBoard
reads it (a run of its own), its path and ``/`` before its tags. Resume does not cut
them: a resumed writer's ``SessionLog.START`` hides their later points, as TensorBoard
reads them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._core._records import MediaRecord, Record
from .._pieces import Pieces, whole
from .._tagseries import Series
from ._files import event_files, event_folders, is_events_name, last_step

if TYPE_CHECKING:
    from ..._core._config import ConfigValue
    from ._events import EventEncoder
    from ._evfolder import EventFolder

__all__ = ["TENSORBOARD", "EventPoints", "TensorBoardFormat"]


class EventPoints:
    """The points of a run's event files (or of one event file), read incrementally."""

    def __init__(
        self, path: str, tags: Collection[str] | None, found: dict[str, list[str]] | None = None
    ) -> None:
        self.path = path
        self.tags = tags
        self.single = os.path.isfile(path)
        self.folders: dict[str, EventFolder] = {}
        #: the folders of event files just found by whoever made this reader, taken by the
        #: first read instead of walking the run again (a walk a run: a tenth of reading
        #: a small run); every later read walks it anew
        self._found = found

    def read(self) -> list[dict[str, Series]]:
        # the parser (NumPy) only once a file is read: the training process reads this
        # table through the backend registry and never reads a file back
        from ._evfolder import EventFolder

        if self.single:
            groups = {"": [self.path]}
        else:
            groups = self._found if self._found is not None else event_folders(self.path)
            self._found = None
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


#: the batch encoder (``_encode.encode_records``) once loaded: it needs NumPy, and an
#: import statement in :meth:`TensorBoardFormat.encode` cost a microsecond or two a batch
_batch_encoder: Callable[[EventEncoder, Sequence[Record], Pieces], bytes] | None = None


def _load_batch_encoder() -> Callable[[EventEncoder, Sequence[Record], Pieces], bytes]:
    global _batch_encoder
    from ._encode import encode_records

    _batch_encoder = encode_records
    return encode_records


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
            return EventPoints(path, tags) if is_events_name(os.path.basename(path)) else None
        groups = event_folders(path)
        return EventPoints(path, tags, groups) if groups else None

    def last_step(self, folder: str) -> int | None:
        files = event_files(folder) if os.path.isdir(folder) else []
        return last_step(files) if files else None

    def cut_after(self, folder: str, step: int) -> None:
        return

    def writers(self, folder: str) -> int:
        return len(event_files(folder))  # one a writer; aoff's HParams file is no writer's

    def bytes_to_read(self, path: str) -> int:
        if os.path.isfile(path):
            files = [path] if is_events_name(os.path.basename(path)) else []
        else:
            files = [f for group in event_folders(path).values() for f in group]
        total = 0
        for f in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(f)
        return total

    # -- the bytes a writer appends (the encoders load TensorBoard's protobufs and are
    # -- imported on first use: the training process reads this table at import) --------
    def encoder(self) -> EventEncoder:
        """A writer's encoder: it keeps the encoded heads of the tags it has seen."""
        from ._events import EventEncoder

        return EventEncoder()

    def encode(
        self, records: Sequence[Record], pieces: Pieces = whole, *, encoder: EventEncoder
    ) -> bytes:
        """One ``Event`` a record, framed as TFRecords into one buffer, paced by
        ``pieces`` (steps, ``SummaryWriter``'s records, texts)."""
        return (_batch_encoder or _load_batch_encoder())(encoder, records, pieces)

    def file_head(self, event_cls: Any, wall_time: float, start_step: int | None) -> bytes:
        """A new file's first events, framed: the file version and, with ``start_step``,
        a ``SessionLog.START`` there (what ``SummaryWriter(purge_step=...)`` writes:
        readers drop the points they read before it from that step on)."""
        from ._events import FILE_VERSION
        from ._tfrecord import frame_many

        head = [event_cls(wall_time=wall_time, file_version=FILE_VERSION).SerializeToString()]
        if start_step is not None:
            start = event_cls(wall_time=wall_time, step=start_step)
            start.session_log.status = start.session_log.START
            head.append(start.SerializeToString())
        return frame_many(head)

    def file_version(self, event_cls: Any, wall_time: float) -> bytes:
        """The file version event, serialised (the HParams file's first, unframed)."""
        from ._events import FILE_VERSION

        return bytes(event_cls(wall_time=wall_time, file_version=FILE_VERSION).SerializeToString())

    def encode_media(self, items: Sequence[MediaRecord]) -> bytes:
        """Encoded images and videos as image summaries, framed."""
        from ._media import media_events
        from ._tfrecord import frame_many

        return frame_many(media_events(items))

    def encode_config(
        self, values: Mapping[str, ConfigValue], step: int, wall_time: float
    ) -> bytes:
        """The config as the markdown text table at ``step``, framed."""
        from ._hparams import text_table_event
        from ._tfrecord import frame_many

        return frame_many([text_table_event(values, step, wall_time)])

    def hparams_events(
        self,
        values: Mapping[str, ConfigValue],
        *,
        start_time: float,
        end_time: float | None = None,
        interrupted: bool = False,
    ) -> list[bytes]:
        """The HParams file's events: session start info, and end info once ended."""
        from ._hparams import hparams_file_events

        return hparams_file_events(
            values, start_time=start_time, end_time=end_time, interrupted=interrupted
        )


TENSORBOARD = TensorBoardFormat()
