"""JSON Lines backend: one strict-JSON object per step, for tools that are not TensorBoard.

Each :class:`~aoff.StepRecord` becomes one line::

    {"step": 4096, "iteration": 1, "wall_time": 1718000000.25, "train/loss": 0.5, ...}

``step``, ``iteration`` and ``wall_time`` come first, then every tag in the record's
order; a tag that repeats within a record keeps its last value (as W&B does). These three
keys always hold the record's own values, even if a tag has the same name.

Non-finite values: JSON has no NaN or infinity, and ``json.dumps`` would by default
emit the invalid tokens ``NaN``/``Infinity``. So a NaN is written as the string
``"nan"``, +inf as ``"inf"`` and -inf as ``"-inf"``; every line is strict JSON
(``json.loads(line, parse_constant=...)`` never sees a bare constant). Read them back
with ``float(value)``, which accepts those three strings.

The file is opened for appending (an existing file is never truncated; a resumed run
adds to it) and parent folders are created. Encoding and writing a batch happen
together in one worker thread (``anyio.to_thread.run_sync(..., abandon_on_cancel=True)``),
one ``write`` system call per batch on an unbuffered file: encoding 1,000 records
takes milliseconds, too long a slice for the training loop's event loop. aiofiles is not
used because it needs an asyncio loop and the pump may run on trio.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Sequence
from typing import BinaryIO

import anyio.to_thread
from rich.markup import escape

from ._backend import BackendContext
from ._state import StepRecord
from ._tfrecord import write_all

__all__ = ["JsonlBackend", "encode_lines"]

_dumps = json.JSONEncoder(
    ensure_ascii=True, allow_nan=False, separators=(", ", ": "), check_circular=False
).encode


def _finite_or_str(v: object) -> object:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    return v


def encode_lines(records: Sequence[StepRecord]) -> bytes:
    """Encode records as UTF-8 JSON lines (see the module docstring for the format)."""
    lines: list[str] = []
    append = lines.append
    for rec in records:
        row: dict[str, object] = {"step": rec.step, "iteration": rec.iteration, "wall_time": 0}
        row.update(rec.scalars)
        # re-set after the tags: a tag named like a fixed key never hides the record's own
        row["step"] = rec.step
        row["iteration"] = rec.iteration
        row["wall_time"] = rec.wall_time
        try:
            append(_dumps(row))
        except ValueError:  # a non-finite float: allow_nan=False refuses it
            append(_dumps({k: _finite_or_str(v) for k, v in row.items()}))
    if not lines:
        return b""
    lines.append("")
    return "\n".join(lines).encode("utf-8")


class JsonlBackend:
    """Appends one JSON object per :class:`~aoff.StepRecord` to ``path``."""

    name = "jsonl"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._file: BinaryIO | None = None
        self._closed = False
        # taken only in worker threads: orders an abandoned write against later calls
        self._lock = threading.Lock()

    def _open_sync(self) -> None:
        parent = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(parent, exist_ok=True)
        with self._lock:
            if self._closed or self._file is not None:
                return
            self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - until close()

    def _write_sync(self, records: Sequence[StepRecord]) -> None:
        data = encode_lines(records)
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError("JSONL backend: file is closed")
            write_all(f, data)

    def _close_sync(self) -> None:
        with self._lock:
            f, self._file = self._file, None
            if f is not None:
                f.close()

    async def open(self, ctx: BackendContext) -> None:
        if self._closed:
            raise RuntimeError("JSONL backend: open() after close()")
        await anyio.to_thread.run_sync(self._open_sync, abandon_on_cancel=True)
        ctx.say(f"[dim]JSONL logging to: {escape(self.path)}[/]")

    async def write(self, records: Sequence[StepRecord]) -> None:
        if not records:
            return
        if self._file is None:
            raise RuntimeError("JSONL backend: write() before open() or after close()")
        await anyio.to_thread.run_sync(self._write_sync, tuple(records), abandon_on_cancel=True)

    async def flush(self) -> None:
        # Unbuffered file: each write() already handed its bytes to the OS.
        return

    async def close(self) -> None:
        self._closed = True
        if self._file is None:
            return
        await anyio.to_thread.run_sync(self._close_sync, abandon_on_cancel=True)
