"""The backend of any append-only run folder format (:class:`AppendFormat`): its file in
``log_dir``, each batch appended as the format encodes it.

Why a module of its own: a format that is one file of encoded records needs nothing of a
backend but its file; the promises (a worker thread, one whole write a batch, nothing
left of a batch a full disk tore, ``fsync`` at close, ``config.json`` beside it) are the
JSONL and CSV backends' (``_file.py``), so a new format of that kind is its format
object and one registry line, and no backend of its own.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._core._records import Record
from .._runfolder._format import AppendFormat
from ._base import Takes
from ._file import AppendFileBackend

__all__ = ["FormatFileBackend"]


class FormatFileBackend(AppendFileBackend):
    """Appends ``fmt.encode(batch)`` to ``log_dir/fmt.file_name``; takes no media."""

    #: steps (and ``SummaryWriter``'s records) only: the pump counts images, videos,
    #: texts and alerts as not taken by it (a format's ``encode`` has no row for them)
    takes = Takes.NOTHING

    def __init__(self, log_dir: str, fmt: AppendFormat) -> None:
        super().__init__(os.path.join(log_dir, fmt.file_name))
        self.format = fmt
        self.name = fmt.name
        self.label = fmt.label

    def _encode(self, records: Sequence[Record]) -> bytes:
        return self.format.encode(records)
