"""JSON Lines backend: one strict-JSON object per step, for tools that are not TensorBoard.

What a line is (its keys, its order, non-finite values, the encoder) is the run folder's
format, :data:`aoff._runfolder.lines._formats.JSONL` (its encoder in
:mod:`aoff._runfolder.lines._jsonl`); this backend owns the file while the run lasts.

The file is opened for appending (an existing file is never truncated; a resumed run
adds to it) and parent folders are created. Each batch is encoded and handed to the OS
in a worker thread (aiofiles' executor wrapper on asyncio, ``anyio.to_thread`` on trio,
which aiofiles does not support; the event loop never encodes or waits on the disk),
with one ``write`` on
an unbuffered file: when :meth:`JsonlBackend.write` returns, the whole batch is in the
file, and nothing of it is held in this process's buffers (so :meth:`~JsonlBackend.flush`
has nothing to do, and a crash of this process loses nothing that was confirmed). The
file is ``fsync``-ed once, at :meth:`~JsonlBackend.close`.

A failed write leaves nothing of its batch behind: if the disk fills up (``ENOSPC``, or
``EFBIG`` past ``RLIMIT_FSIZE``) part-way through a batch, the file is cut back to its
size before that batch, as the TensorBoard backend does. So every line in the file is
whole, strict JSON, a retry never leaves a torn line in the middle of the file, and the
runner's ``written`` count (records whose ``write`` returned) is exactly the number of
lines this backend added to the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

from .._core._records import Record
from .._runfolder._pieces import whole
from .._runfolder.lines import _jsonl  # noqa: F401  (the codec loaded with its backend, not by its first batch)
from .._runfolder.lines._formats import JSONL, JsonlFormat
from .._runfolder.tensorboard._tfrecord import write_whole
from ._base import Takes
from ._file import AppendFileBackend

__all__ = ["JsonlBackend"]


class JsonlBackend(AppendFileBackend):
    """Appends one JSON object per record (:data:`~aoff.Record`) to ``path``."""

    name = "jsonl"
    takes = Takes.TEXTS | Takes.MEDIA
    label = "JSONL"
    #: what a line is: the format's (the backend owns the file)
    format: JsonlFormat = JSONL
    #: the agent builds it again from its path (see ``AppendFileBackend.portable``)
    rebuilt_from_path = True

    def _encode(self, records: Sequence[Record]) -> bytes:
        return self.format.encode(records, whole if self._ctx is None else self._ctx.pieces)

    def _media_rows(self, f: BinaryIO, rows: list[dict[str, object]]) -> None:
        write_whole(f, self.format.encode_media(rows))
