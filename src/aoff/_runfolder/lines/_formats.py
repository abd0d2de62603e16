"""``metrics.jsonl`` and ``progress.csv`` as entries of the format table, and how each
encodes what aoff's backends append to it.

Why a module of its own: the two line formats' modules (``_jsonl``, ``_csv``) stay what
a line or a row is; this is how the table names them (:class:`LineFormat`) and the one
object a backend asks for the bytes (:class:`JsonlFormat`, :class:`CsvFormat`): the
backend owns the file (its handle, batching, the CSV's rewrite for new columns), the
format owns the bytes.

Why lazily: the table is asked about every folder read, and most are TensorBoard's; what a
line is (``_jsonl`` with msgspec, ``_csv``, their rows' columns) is loaded by the first
call that reads, cuts or encodes such a file (~10 ms under ``-X importtime`` of a first
``read_scalars`` call that reads none). The encoders are still the functions themselves
once loaded, never wrappers: the agent calls them for every batch.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TextIO

from ._names import CSV_NAME, JSONL_NAME
from ._points import LineFormat, LineScalars

if TYPE_CHECKING:
    from ..._core._records import Record
    from .._pieces import Pieces
    from ._csv import RowCells

__all__ = ["CSV", "JSONL", "CsvFormat", "JsonlFormat"]


#: the two entries add no field: their dataclass is ``LineFormat``'s (its ``__init__``,
#: ``__eq__``, ``__repr__``, ``__hash__`` inherited), made again only to stay frozen for
#: any attribute name (~1.3 ms less of a first call than making each anew)
_ENTRY = dataclass(frozen=True, init=False, repr=False, eq=False)


@_ENTRY
class JsonlFormat(LineFormat):
    """``metrics.jsonl``: an append-only file of one JSON object a record."""

    @cached_property
    def encode(self) -> Callable[[Sequence[Record], Pieces], bytes]:
        """A batch of records as the lines appended, whole (paced by ``pieces``)."""
        from ._jsonl import encode_lines

        return encode_lines

    @cached_property
    def encode_media(self) -> Callable[[Sequence[dict[str, object]]], bytes]:
        """Media files' rows (``_mediafiles``) as the lines appended."""
        from ._jsonl import encode_rows

        return encode_rows


@_ENTRY
class CsvFormat(LineFormat):
    """``progress.csv``: one row a record under a header that only grows. Its bytes
    depend on the header so far, which the backend keeps with the file: a record is
    encoded as its cells (:meth:`cells`), cells under the header as :meth:`encode_rows`."""

    @cached_property
    def batch_cells(self) -> Callable[[Sequence[Record]], list[dict[str, str] | RowCells]]:
        """A batch's rows: a run fold's rows a run at a time (``RowCells``), every other
        record's cells keyed by column (the agent calls it for every batch)."""
        from ._csv import batch_cells

        return batch_cells

    @cached_property
    def media_cells(self) -> Callable[[dict[str, object]], dict[str, str]]:
        """A media file's row as cells."""
        from ._csv import media_cells

        return media_cells

    @cached_property
    def new_columns(
        self,
    ) -> Callable[[Sequence[str], Iterable[dict[str, str] | RowCells]], list[str]]:
        """The columns rows bring that the header lacks, in first-seen order."""
        from ._csv import new_columns

        return new_columns

    @cached_property
    def copy_padded(self) -> Callable[[TextIO, TextIO, Sequence[str]], None]:
        """The file again under a wider header, every row padded (a new column's rewrite)."""
        from ._csv import copy_padded

        return copy_padded

    @cached_property
    def read_header(self) -> Callable[[str], list[str] | None]:
        """An existing file's header (None: no such file, or empty)."""
        from ._csv import read_header

        return read_header

    def encode_rows(
        self,
        rows: Iterable[dict[str, str] | RowCells],
        columns: Sequence[str],
        *,
        header: bool = False,
    ) -> str:
        """The rows under ``columns`` (``header``: the header line first)."""
        from . import _csv

        body = _csv.encode_rows(rows, columns)
        return _csv.header_line(columns) + body if header else body


def _read_jsonl(path: str, tags: Collection[str] | None) -> LineScalars:
    from ._jsonl import JsonlScalars

    return JsonlScalars(path, tags)


def _jsonl_last_step(path: str) -> int | None:
    from ._jsonl import last_step

    return last_step(path)


def _cut_jsonl(path: str, step: int) -> None:
    from ._jsonl import cut_after

    cut_after(path, step)


def _read_csv(path: str, tags: Collection[str] | None) -> LineScalars:
    from ._csv import CsvScalars

    return CsvScalars(path, tags)


def _csv_last_step(path: str) -> int | None:
    from ._csv import last_step

    return last_step(path)


def _cut_csv(path: str, step: int) -> None:
    from ._csv import cut_after

    cut_after(path, step)


JSONL = JsonlFormat(
    "jsonl", JSONL_NAME, ".jsonl", _read_jsonl, _jsonl_last_step, _cut_jsonl, exact=True
)
CSV = CsvFormat("csv", CSV_NAME, ".csv", _read_csv, _csv_last_step, _cut_csv)
