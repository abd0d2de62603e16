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

import json
import math
import os
import threading
from collections.abc import Callable, Sequence
from typing import BinaryIO

import anyio.to_thread
import sniffio
from rich.markup import escape

from .._core._records import StepRecord
from ._base import BackendContext
from ._tfrecord import fsync_and_close, write_whole

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
        # Serialises file access between worker threads: after the runner abandons a
        # hung call, the next call may start while the old thread still runs. Only ever
        # taken in worker threads, never on the event loop.
        self._lock = threading.Lock()

    # -- worker-thread side ------------------------------------------------------------
    def _open_sync(self) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with self._lock:
            if self._closed or self._file is not None:
                return
            self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed in close()

    def _write_sync(self, records: Sequence[StepRecord]) -> None:
        data = encode_lines(records)
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError("JSONL backend: the file is closed")
            write_whole(f, data)

    def _close_sync(self) -> None:
        with self._lock:
            f, self._file = self._file, None
            if f is None:
                return
            fsync_and_close(f)

    # -- Backend protocol --------------------------------------------------------------
    @staticmethod
    async def _off_loop(fn: Callable[..., None], *args: object) -> None:
        """Run ``fn`` in a worker thread: aiofiles' executor on asyncio, anyio's on trio."""
        if sniffio.current_async_library() == "asyncio":
            import aiofiles.os

            await aiofiles.os.wrap(fn)(*args)
        else:
            await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)

    async def open(self, ctx: BackendContext) -> None:
        if self._closed:
            raise RuntimeError("JSONL backend: open() after close()")
        await self._off_loop(self._open_sync)
        ctx.say(f"[dim]JSONL logging to: {escape(self.path)}[/]")

    async def write(self, records: Sequence[StepRecord]) -> None:
        if not records:
            return
        if self._file is None:
            raise RuntimeError("JSONL backend: write() before open() or after close()")
        # a tuple: the runner may reuse its list while an abandoned thread still reads ours
        await self._off_loop(self._write_sync, tuple(records))

    async def flush(self) -> None:
        # Every write() handed its bytes to the OS already (unbuffered file): nothing is
        # held in this process, so there is nothing to do and no thread hop to pay.
        return

    async def close(self) -> None:
        self._closed = True
        if self._file is None:
            return
        await self._off_loop(self._close_sync)
