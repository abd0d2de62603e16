"""What the JSONL and CSV backends share: an append-only file, one whole batch a write.

Why a base class: both keep the same promises (see ``_jsonl.py``), and those promises
live in the protocol side, which is the same for both: blocking work in a worker thread
(aiofiles' executor on asyncio, ``anyio.to_thread`` on trio, which aiofiles does not
support), and the file's lock, one whole write per batch, nothing to flush and ``fsync``
once at close, which the TensorBoard backend shares too (``_lockedfile.py``). A
subclass says how to encode a batch, and may say how to open and write it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

import anyio.to_thread
import sniffio
from rich.markup import escape

from .._core._records import MediaRecord, Record
from .._runfolder._configfile import CONFIG_NAME
from .._runfolder._mediafiles import MEDIA_FORMATS, media_row, write_media_file
from .._runfolder._replace import replaced
from .._runfolder.tensorboard._tfrecord import write_whole
from ._base import BackendContext
from ._configwrites import ConfigWrites
from ._lockedfile import LockedFileBackend


class AppendFileBackend(LockedFileBackend):
    """An append-only file backend; subclasses set ``name``, ``label`` and ``_encode``."""

    name: str

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = os.fspath(path)
        # config.json: the context (its HParams) and the version written last
        self._ctx: BackendContext | None = None
        self._config_writes = ConfigWrites()

    # -- sent to the agent ----------------------------------------------------------------
    @property
    def portable(self) -> bool:
        """Whether the logger may send this backend to its agent process, which builds it
        again from its path: an unopened instance of aoff's own class (a subclass may
        hold more than its path, and the agent may not be able to import it)."""
        own = bool(type(self).__dict__.get("rebuilt_from_path", False))
        return own and self._file is None and not self._closed

    def __reduce__(self) -> tuple[Any, ...]:
        if not self.portable:
            raise TypeError(f"an opened {type(self).__name__} cannot be pickled")
        return (type(self), (self.path,))

    # -- worker-thread side (under the lock) ----------------------------------------------
    def _open_file(self) -> BinaryIO:
        """The file, open for appending, unbuffered."""
        return open(self.path, "ab", buffering=0)

    def _encode(self, records: Sequence[Record]) -> bytes:
        raise NotImplementedError

    def _write_batch(self, f: BinaryIO, records: Sequence[Record]) -> None:
        """Write one batch whole (``write_whole``), or raise leaving nothing of it."""
        write_whole(f, self._encode(records))

    def _open_sync(self) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with self._lock:
            if self._closed or self._file is not None:
                return
            self._file = self._open_file()

    def _write_sync(self, records: Sequence[Record]) -> None:
        with self._held() as f:
            self._write_batch(f, records)

    # -- media (``_mediafiles.py``): a file under log_dir/media/, and a row that names it --
    media_formats = MEDIA_FORMATS

    def _media_rows(self, f: BinaryIO, rows: list[dict[str, object]]) -> None:
        raise NotImplementedError

    def _write_media_sync(self, items: Sequence[MediaRecord]) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        rows = [media_row(rec, write_media_file(folder, rec)) for rec in items]
        with self._held() as f:
            self._media_rows(f, rows)

    async def write_media(self, items: Sequence[MediaRecord]) -> None:
        """Write the encoded images and videos (one call an item, in order with ``write``)."""
        await self._off_loop(self._write_media_sync, tuple(items))

    # -- config.json ----------------------------------------------------------------------
    def _write_config_sync(self, values: dict[str, Any]) -> None:
        """``config.json`` next to the file, replaced whole (temporary file, ``fsync``,
        ``os.replace``): a reader never sees half of it. The JSONL and CSV backends of one
        run write the same content, so whichever renames last is right."""
        folder = os.path.dirname(os.path.abspath(self.path))
        text = json.dumps(values, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        target = os.path.join(folder, CONFIG_NAME)
        with replaced(target, prefix=".config-", suffix=".json.tmp") as f:
            f.write(text.encode("utf-8"))

    async def _maybe_write_config(self) -> None:
        """Write ``config.json`` if the config changed (see :class:`ConfigWrites`)."""
        await self._config_writes.write_if_changed(
            self._ctx, lambda values: self._off_loop(self._write_config_sync, values)
        )

    # -- Backend protocol -----------------------------------------------------------------
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
            raise RuntimeError(f"{self.label} backend: open() after close()")
        await self._off_loop(self._open_sync)
        self._choose_where_to_write(ctx, self.path)
        ctx.say(f"[dim]{self.label} logging to: {escape(self.path)}[/]")
        self._ctx = ctx
        await self._maybe_write_config()

    async def write(self, records: Sequence[Record]) -> None:
        if not records:
            return
        self._check_writable()
        await self._maybe_write_config()
        if self.writes_here:  # the agent, a local disk (_lockedfile.py)
            self._write_sync(records)
            return
        # a tuple: the runner may reuse its list while an abandoned thread still reads ours
        await self._off_loop(self._write_sync, tuple(records))

    async def close(self) -> None:
        self._closed = True
        if self._file is None:
            return
        try:
            await self._maybe_write_config()  # keys logged after the last step
        finally:
            await self._off_loop(self._close_sync)
