"""CSV backend: ``log_dir/progress.csv``, one row per step, the file Stable-Baselines3
users know, readable by ``pandas.read_csv``.

What a row and the header are is the run folder's format, :mod:`aoff._runfolder.lines._csv`;
this backend owns the file while the run lasts.

The file only grows. The header is written with the first batch, and rewritten only
when a batch brings a tag the header does not have (not on every batch, which is what
Lightning's CSV logger once did, PR #18567): then the whole file is written once to a
temporary file in the same folder (the new header, every existing row padded with empty
cells, then the new batch), ``fsync``-ed and moved over ``progress.csv`` with
``os.replace``, and appending carries on in the new file. A failure on the way (a full
disk) leaves the old file as it was. Every other batch is appended with one ``write`` on
an unbuffered file in a worker thread (aiofiles' executor wrapper on asyncio,
``anyio.to_thread`` on trio), and cut back if a full disk tears it, as in the JSONL
backend: the file only ever holds whole rows, and the runner's ``written`` count is
exactly the number of rows this backend added. The file is ``fsync``-ed at
:meth:`CsvBackend.close`.

An existing file (a resumed run in the same folder) is appended to: its header is read
at open and kept, so the columns stay consistent.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from typing import BinaryIO

from .._core._records import Record
from .._runfolder.lines._csv import (
    RowCells,
    batch_cells,
    copy_padded,
    encode_rows,
    header_line,
    media_cells,
    new_columns,
    read_header,
)
from .._runfolder.tensorboard._tfrecord import write_whole
from ._base import Takes
from ._file import AppendFileBackend

__all__ = ["CsvBackend"]


class CsvBackend(AppendFileBackend):
    """Appends one CSV row per :class:`~aoff.StepRecord` to ``path``."""

    name = "csv"
    takes = Takes.MEDIA
    label = "CSV"
    #: the agent builds it again from its path (see ``AppendFileBackend.portable``)
    rebuilt_from_path = True

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        #: the header as in the file; empty until it has one
        self._columns: list[str] = []
        #: how many times the file was rewritten for new columns (tests read it)
        self.rewrites = 0

    def _open_file(self) -> BinaryIO:
        f = super()._open_file()
        try:
            header = None
            size = os.fstat(f.fileno()).st_size
            if size:  # a resumed run: keep its columns
                header = read_header(self.path)  # None: only blank lines so far
                with open(self.path, "rb") as r:
                    r.seek(size - 1)
                    if r.read(1) != b"\n":  # a last line cut short (a crash)
                        write_whole(f, b"\n")
        except BaseException:
            f.close()
            raise
        self._columns = list(header or ())
        return f

    def _write_sync(self, records: Sequence[Record]) -> None:
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError("CSV backend: the file is closed")
            self._write_rows(f, batch_cells(records))

    def _media_rows(self, f: BinaryIO, rows: list[dict[str, object]]) -> None:
        self._write_rows(f, [media_cells(r) for r in rows])

    def _write_rows(self, f: BinaryIO, rows: Sequence[dict[str, str] | RowCells]) -> None:
        """Append ``rows`` (under the lock), rewriting the file for new columns."""
        new = new_columns(self._columns, rows)
        if not new:
            write_whole(f, encode_rows(rows, self._columns).encode("utf-8"))
            return
        columns = [*self._columns, *new]
        if not self._columns:  # a new file: the header goes in with the first batch
            data = header_line(columns) + encode_rows(rows, columns)
            write_whole(f, data.encode("utf-8"))
        else:
            self._file = self._rewrite(f, columns, rows)
        self._columns = columns

    def _rewrite(
        self, old: BinaryIO, columns: list[str], rows: Sequence[dict[str, str] | RowCells]
    ) -> BinaryIO:
        """Write header ``columns``, the file's rows padded and then ``rows`` to a temporary
        file, move it over the file and return it open for appending. On failure the
        file is as it was and ``old`` still open."""
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".progress-", suffix=".csv.tmp")
        new: BinaryIO | None = None
        try:
            with (
                open(fd, "w", encoding="utf-8", newline="") as out,
                open(self.path, encoding="utf-8", newline="") as src,
            ):
                copy_padded(src, out, columns)
                out.write(encode_rows(rows, columns))
            os.chmod(tmp, stat.S_IMODE(os.fstat(old.fileno()).st_mode))  # not mkstemp's 0600
            new = open(tmp, "ab", buffering=0)  # noqa: SIM115 - returned, closed in close()
            os.fsync(new.fileno())  # the data is on disk before the name points at it
            os.replace(tmp, self.path)
        except BaseException:
            if new is not None:
                new.close()
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.rewrites += 1
        with contextlib.suppress(OSError):  # the old file is gone from the folder
            old.close()
        return new
