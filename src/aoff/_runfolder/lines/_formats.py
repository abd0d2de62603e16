"""``metrics.jsonl`` and ``progress.csv`` as entries of the format table.

Why a module of its own: the two line formats' modules (``_jsonl``, ``_csv``) stay what
a line or a row is; this is only how the table names them (:class:`LineFormat`).
"""

from __future__ import annotations

from . import _csv, _jsonl
from ._points import LineFormat

__all__ = ["CSV", "JSONL"]

JSONL = LineFormat(
    "jsonl",
    _jsonl.JSONL_NAME,
    ".jsonl",
    _jsonl.JsonlScalars,
    _jsonl.last_step,
    _jsonl.cut_after,
    exact=True,
)
CSV = LineFormat("csv", _csv.CSV_NAME, ".csv", _csv.CsvScalars, _csv.last_step, _csv.cut_after)
