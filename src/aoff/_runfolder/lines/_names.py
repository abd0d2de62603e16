"""The line files' names in a run folder, each spelled once.

Why a module of its own: the format table names these files on every run discovery and
every read, while what a line is (``_jsonl``, with msgspec; ``_csv``) is loaded only when
such a file is read or written; a folder of TensorBoard files alone never loads them.
"""

from __future__ import annotations

__all__ = ["CSV_NAME", "JSONL_NAME"]

JSONL_NAME = "metrics.jsonl"
CSV_NAME = "progress.csv"
