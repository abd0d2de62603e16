"""CSV backend: ``log_dir/progress.csv``, one row per step, the file Stable-Baselines3
users know, readable by ``pandas.read_csv``.

Columns: ``step``, ``iteration``, ``wall_time``, then every tag in the order it was
first seen. A producer's row (``log.remote(name)``) has its name in a ``producer``
column (empty for the run's own rows), and that producer's own step and iteration; a
``SummaryWriter`` sub-run's row (``add_scalars``, ``add_hparams``) has its folder in a
``run`` column (texts and histograms are not CSV cells: TensorBoard and JSONL). A
row without some tag leaves that cell empty (pandas reads ``NaN``); a tag
that repeats within a record keeps its last value, and a tag named like one of the three
fixed columns never hides the record's own value (as in the JSONL backend). Values are
written with ``repr(float)``, which round-trips; non-finite ones read ``nan``, ``inf``
and ``-inf``, which pandas reads as floats.

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
import csv
import io
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from typing import BinaryIO

from .._core._records import StepRecord
from .._runfolder._tfrecord import write_whole
from ._file import AppendFileBackend

__all__ = ["FIXED_COLUMNS", "CsvBackend"]

FIXED_COLUMNS = ("step", "iteration", "wall_time")


def _row(rec: StepRecord) -> dict[str, str]:
    """A record's cells as text, keyed by column (fixed columns win over like-named tags)."""
    cells = {"step": "", "iteration": "", "wall_time": ""}
    for tag, value in rec.scalars:
        cells[tag] = repr(float(value))
    cells["step"] = str(rec.step)
    cells["iteration"] = str(rec.iteration)
    cells["wall_time"] = repr(float(rec.wall_time))
    if rec.producer is not None:  # log.remote(name): a "producer" column
        cells["producer"] = rec.producer
    if rec.run:  # SummaryWriter's add_scalars/add_hparams: a "run" column (its folder)
        cells["run"] = rec.run
    return cells


def _cell(v: object) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _csv_line(fields: Iterable[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(fields)
    return buf.getvalue()


def _encode_rows(rows: Iterable[dict[str, str]], columns: Sequence[str]) -> str:
    # Cells are numbers, "nan", "inf", "-inf" or empty: nothing that needs quoting.
    return "".join(",".join([row.get(c, "") for c in columns]) + "\n" for row in rows)


def _read_header(path: str) -> list[str] | None:
    """The header of an existing, non-empty file (None: no such file, or empty)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return next(csv.reader(f), None) or None
    except FileNotFoundError:
        return None


class CsvBackend(AppendFileBackend):
    """Appends one CSV row per :class:`~aoff.StepRecord` to ``path``."""

    name = "csv"
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
                header = _read_header(self.path)  # None: only blank lines so far
                with open(self.path, "rb") as r:
                    r.seek(size - 1)
                    if r.read(1) != b"\n":  # a last line cut short (a crash)
                        write_whole(f, b"\n")
        except BaseException:
            f.close()
            raise
        self._columns = list(header or ())
        return f

    def _write_sync(self, records: Sequence[StepRecord]) -> None:
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError("CSV backend: the file is closed")
            self._write_rows(f, [_row(rec) for rec in records])

    def _media_rows(self, f: BinaryIO, rows: list[dict[str, object]]) -> None:
        # the path has no character CSV would quote (see _mediafiles.py)
        self._write_rows(f, [{k: _cell(v) for k, v in r.items()} for r in rows])

    def _write_rows(self, f: BinaryIO, rows: list[dict[str, str]]) -> None:
        """Append ``rows`` (under the lock), rewriting the file for new columns."""
        known = set(self._columns)
        new: dict[str, None] = {}  # an ordered set: first-seen order
        for row in rows:
            for key in row:
                if key not in known:
                    new[key] = None
        if not new:
            write_whole(f, _encode_rows(rows, self._columns).encode("utf-8"))
            return
        columns = [*self._columns, *new]
        if not self._columns:  # a new file: the header goes in with the first batch
            data = _csv_line(columns) + _encode_rows(rows, columns)
            write_whole(f, data.encode("utf-8"))
        else:
            self._file = self._rewrite(f, columns, rows)
        self._columns = columns

    def _rewrite(self, old: BinaryIO, columns: list[str], rows: list[dict[str, str]]) -> BinaryIO:
        """Write header ``columns``, the file's rows padded and then ``rows`` to a temporary
        file, move it over the file and return it open for appending. On failure the
        file is as it was and ``old`` still open."""
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".progress-", suffix=".csv.tmp")
        new: BinaryIO | None = None
        try:
            width = len(columns)
            with (
                open(fd, "w", encoding="utf-8", newline="") as out,
                open(self.path, encoding="utf-8", newline="") as src,
            ):
                writer = csv.writer(out, lineterminator="\n")
                reader = csv.reader(src)
                next(reader, None)  # the old header
                writer.writerow(columns)
                for cells in reader:
                    if len(cells) < width:
                        cells.extend([""] * (width - len(cells)))
                    writer.writerow(cells)
                out.write(_encode_rows(rows, columns))
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
