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
adds to it) and parent folders are created. I/O goes through an async file object:
aiofiles on asyncio, and anyio's thread-backed ``anyio.open_file`` on trio (aiofiles is
built on asyncio's executor and has no trio support). A batch is encoded in a worker
thread when it is large (encoding 1,000 records takes milliseconds, too long a slice for
the training loop's event loop), then written with one ``write`` call; ``flush()`` (every
``flush_secs`` and at the end) pushes it to the OS.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread
import sniffio
from rich.markup import escape

from .._core._records import StepRecord
from ._base import BackendContext

#: batches at least this long are encoded in a worker thread
ENCODE_IN_THREAD = 64

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
        self._file: Any = None  # an aiofiles or anyio async file
        self._closed = False

    async def open(self, ctx: BackendContext) -> None:
        if self._closed:
            raise RuntimeError("JSONL backend: open() after close()")
        path = self.path
        await anyio.to_thread.run_sync(
            lambda: os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True),
            abandon_on_cancel=True,
        )
        if sniffio.current_async_library() == "asyncio":
            import aiofiles

            self._file = await aiofiles.open(self.path, "ab")
        else:
            self._file = await anyio.open_file(self.path, "ab")
        ctx.say(f"[dim]JSONL logging to: {escape(self.path)}[/]")

    async def write(self, records: Sequence[StepRecord]) -> None:
        if not records:
            return
        if self._file is None:
            raise RuntimeError("JSONL backend: write() before open() or after close()")
        if len(records) >= ENCODE_IN_THREAD:
            data = await anyio.to_thread.run_sync(
                encode_lines, tuple(records), abandon_on_cancel=True
            )
        else:
            data = encode_lines(records)
        await self._file.write(data)

    async def flush(self) -> None:
        if self._file is not None:
            await self._file.flush()

    async def close(self) -> None:
        self._closed = True
        f, self._file = self._file, None
        if f is not None:
            # anyio's AsyncFile closes with aclose(), aiofiles' with close()
            await (f.aclose() if hasattr(f, "aclose") else f.close())
