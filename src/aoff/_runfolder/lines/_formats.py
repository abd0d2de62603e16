"""``metrics.jsonl`` and ``progress.csv`` as entries of the format table, and how each
encodes what aoff's backends append to it.

Why a module of its own: the two line formats' modules (``_jsonl``, ``_csv``) stay what
a line or a row is; this is how the table names them (:class:`LineFormat`) and the one
object a backend asks for the bytes (:class:`JsonlFormat`, :class:`CsvFormat`): the
backend owns the file (its handle, batching, the CSV's rewrite for new columns), the
format owns the bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import _csv, _jsonl
from ._points import LineFormat

__all__ = ["CSV", "JSONL", "CsvFormat", "JsonlFormat"]


@dataclass(frozen=True)
class JsonlFormat(LineFormat):
    """``metrics.jsonl``: an append-only file of one JSON object a record."""

    #: a batch of records as the lines appended, whole (paced by ``pieces``); the
    #: encoders themselves, not wrappers: the agent calls them for every batch
    encode = staticmethod(_jsonl.encode_lines)
    #: media files' rows (``_mediafiles``) as the lines appended
    encode_media = staticmethod(_jsonl.encode_rows)


@dataclass(frozen=True)
class CsvFormat(LineFormat):
    """``progress.csv``: one row a record under a header that only grows. Its bytes
    depend on the header so far, which the backend keeps with the file: a record is
    encoded as its cells (:meth:`cells`), cells under the header as :meth:`encode_rows`."""

    #: a batch's rows: a run fold's rows a run at a time (``RowCells``), every other
    #: record's cells keyed by column (the agent calls it for every batch)
    batch_cells = staticmethod(_csv.batch_cells)
    #: a media file's row as cells
    media_cells = staticmethod(_csv.media_cells)
    #: the columns rows bring that the header lacks, in first-seen order
    new_columns = staticmethod(_csv.new_columns)
    #: the file again under a wider header, every row padded (a new column's rewrite)
    copy_padded = staticmethod(_csv.copy_padded)
    #: an existing file's header (None: no such file, or empty)
    read_header = staticmethod(_csv.read_header)

    def encode_rows(
        self,
        rows: Iterable[dict[str, str] | _csv.RowCells],
        columns: Sequence[str],
        *,
        header: bool = False,
    ) -> str:
        """The rows under ``columns`` (``header``: the header line first)."""
        body = _csv.encode_rows(rows, columns)
        return _csv.header_line(columns) + body if header else body


JSONL = JsonlFormat(
    "jsonl",
    _jsonl.JSONL_NAME,
    ".jsonl",
    _jsonl.JsonlScalars,
    _jsonl.last_step,
    _jsonl.cut_after,
    exact=True,
)
CSV = CsvFormat("csv", _csv.CSV_NAME, ".csv", _csv.CsvScalars, _csv.last_step, _csv.cut_after)
