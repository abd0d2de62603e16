"""What every aoff file backend shares: one unbuffered file, and where its writes run.

Why a base of its own: the TensorBoard backend and the append-only ones (JSONL, CSV,
``_file.py``) keep the same promises about their file, and they were written twice.
Blocking work runs under a lock (after the runner abandons a hung call, the next may
start while the old thread still runs); each batch is one ``write_whole`` on an
unbuffered file, so :meth:`flush` has nothing to do; the file is ``fsync``-ed once, at
close; a call once the file is closed raises, it never writes nowhere. Subclasses open
the file (``_file``) and say what goes into it.

Where a batch is encoded and written (:attr:`writes_here`, chosen at open): in a worker
thread, except in the agent (``BackendContext.writes_on_loop``) when the file is on a
local disk (``_localdisk.py``), where the loop's own thread does it as soon as the
runner hands it the batch, while the records it just folded are still in this core's
cache. A worker thread on the other core read them from memory and took the GIL from
the loop for every batch: on the agent's flat-out workloads the loop's own writes take
10-12 % less of its CPU (``docs/reference/performance.md``). The price, on a local disk
only: a write that blocks holds the agent's loop, and every backend waits with it.
Configs, media and the close stay in worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from .._runfolder.tensorboard._tfrecord import fsync_and_close, write_whole
from ._base import BackendContext
from ._localdisk import on_local_disk


class LockedFileBackend:
    """The file, its lock and its closed state; subclasses set ``label``."""

    #: how the backend names itself in messages, e.g. ``"JSONL"``
    label: str
    #: what a worker-thread call says once the file is closed
    closed_message = "the file is closed"

    def __init__(self) -> None:
        self._file: BinaryIO | None = None
        self._closed = False
        # taken where the blocking work runs: worker threads, or the agent's own loop
        self._lock = threading.Lock()
        #: batches are written on the calling loop, not in a worker thread (see above)
        self.writes_here = False

    # -- worker-thread side ------------------------------------------------------------
    @contextmanager
    def _held(self) -> Iterator[BinaryIO]:
        """The open file, under the lock; raises if it is closed (or never opened)."""
        with self._lock:
            f = self._file
            if f is None:
                raise RuntimeError(f"{self.label} backend: {self.closed_message}")
            yield f

    def _write_bytes(self, data: bytes) -> None:
        """Write ``data`` whole (``write_whole``), or raise leaving nothing of it."""
        with self._held() as f:
            write_whole(f, data)

    def _close_others(self) -> None:
        """Close a subclass's other files (called under the lock, before the main one)."""

    def _close_sync(self) -> None:
        with self._lock:
            f, self._file = self._file, None
            self._close_others()
            if f is None:
                return
            fsync_and_close(f)

    # -- event-loop side ---------------------------------------------------------------
    def _choose_where_to_write(self, ctx: BackendContext, path: str) -> None:
        """At open: batches written on the loop only in the agent, for a local disk."""
        self.writes_here = ctx.writes_on_loop and on_local_disk(path)

    def _check_writable(self) -> None:
        if self._file is None:
            raise RuntimeError(f"{self.label} backend: write() before open() or after close()")

    async def flush(self) -> None:
        # Every write() handed its bytes to the OS already (unbuffered file): nothing is
        # held in this process, so there is nothing to do and no thread hop to pay.
        return
