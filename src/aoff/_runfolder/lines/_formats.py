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
from typing import TextIO

from ..._core._records import Record
from .._pieces import Pieces, whole
from . import _csv, _jsonl
from ._points import LineFormat

__all__ = ["CSV", "JSONL", "CsvFormat", "JsonlFormat"]


@dataclass(frozen=True)
class JsonlFormat(LineFormat):
    """``metrics.jsonl``: an append-only file of one JSON object a record."""

    def encode(self, records: Sequence[Record], pieces: Pieces = whole) -> bytes:
        """A batch of records as the lines appended, whole (paced by ``pieces``)."""
        return _jsonl.encode_lines(records, pieces)

    def encode_media(self, rows: Sequence[dict[str, object]]) -> bytes:
        """Media files' rows (``_mediafiles``) as the lines appended."""
        return _jsonl.encode_rows(rows)


@dataclass(frozen=True)
class CsvFormat(LineFormat):
    """``progress.csv``: one row a record under a header that only grows. Its bytes
    depend on the header so far, which the backend keeps with the file: a record is
    encoded as its cells (:meth:`cells`), cells under the header as :meth:`encode_rows`."""

    def cells(self, rec: Record) -> dict[str, str]:
        return _csv.record_cells(rec)

    def media_cells(self, row: dict[str, object]) -> dict[str, str]:
        return _csv.media_cells(row)

    def new_columns(self, columns: Sequence[str], rows: Iterable[dict[str, str]]) -> list[str]:
        return _csv.new_columns(columns, rows)

    def encode_rows(
        self, rows: Iterable[dict[str, str]], columns: Sequence[str], *, header: bool = False
    ) -> str:
        """The rows under ``columns`` (``header``: the header line first)."""
        body = _csv.encode_rows(rows, columns)
        return _csv.header_line(columns) + body if header else body

    def copy_padded(self, src: TextIO, out: TextIO, columns: Sequence[str]) -> None:
        _csv.copy_padded(src, out, columns)

    def read_header(self, path: str) -> list[str] | None:
        return _csv.read_header(path)


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
