"""Frames handed to the agent in shared-memory blocks, by name, never pickled.

Why: a 200-frame 84x84 RGB episode is 4.2 MB; pickled into the event stream it would be
copied three more times (pickle, socket, unpickle) and hold the scalars behind it on the
link. The call copies the frames once, into a block of the training process's
:class:`ShmPool`, and the event carries only :class:`ShmFrames` (name, shape, dtype).

Why a pool: a fresh block costs its page faults on first write (~5 ms for 4.2 MB here,
against ~0.4 ms to copy into a block already mapped), so blocks are reused. Each block
starts with a state byte: the training process sets it to ``IN_USE`` before copying the
frames in, and the agent sets it back to ``FREE`` once every media backend wrote the
item encoded from them (:meth:`ShmFrames.release`, called by the pump's intake); a free
block of a fitting size takes the next call's frames. So a block in use is an item not
confirmed written: if the agent is lost, the fallback encodes it again from the block.
Between the last backend's write and the state byte there is a window of a few
microseconds: an agent killed in it leaves an item that the fallback writes a second
time (a duplicate, never a loss).
The frames waiting in blocks marked in use are the media budget's in-flight bytes
(:meth:`ShmPool.in_use_bytes`): no message is needed to give them back.

Who frees the memory: the training process owns every block. It unlinks them when the
run has ended (:meth:`ShmPool.close`, after the agent's report) or when the pool must
make room; if it dies first, its ``multiprocessing`` resource tracker unlinks them, and
if the tracker dies with it (a kill of the whole process group), the next run sweeps
them: every block is named for its run (``_shmnames``).

A small ``/dev/shm`` (Docker's default is 64 MiB): a block's pages are reserved when it
is made (``posix_fallocate``), so a full tmpfs is an ``OSError`` then, never a SIGBUS at
the copy; and no block is made past three quarters of what ``statvfs`` says is free.
Frames that get no block travel as a NumPy copy in the event (pickled, counted against
the media budget until freed), as they do when every block is in use. The
agent only maps a block while it reads it, and tells its own resource tracker to forget
it (Python < 3.13 registers every attach), so that tracker neither unlinks a block it
does not own nor warns about it.

A media event dropped on the way (the shipper's ``drop_oldest`` trim, a device value
that never came, frames a lost agent had received but not read) is never read: the
training process marks its block free itself (:meth:`ShmPool.release`), or its bytes
would count against the budget until the run ends and enough drops would refuse every
later image. Each handle carries the block's ``ticket`` for that call, so a late release
never frees a block the agent already read and a newer call took again.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import queue
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._core._events import MEDIA
from ._shmnames import block_name, shm_free_bytes, sweep_stale

__all__ = ["ShmFrames", "ShmPool"]

FREE = 0
IN_USE = 1
#: bytes before the frames: the state byte, padded so the frames stay 64-byte aligned
HEADER = 64
_ROUND = 1 << 20  # block sizes are whole MiB, so near sizes share blocks
_PAGE = 4096
#: blocks a pool keeps at most (each holds a file descriptor); past it, while every block
#: is in use, a call's frames travel as a NumPy copy in the event instead (pickled)
MAX_BLOCKS = 64
#: free blocks of a call's size class kept ready for the next calls (:meth:`ShmPool._want_spare`):
#: a slow encoder holds the blocks of the last few videos, and one spare alone was often
#: still being made when a burst's next call came
SPARES = 2
#: names of the blocks this process's pools own: a block read here (a lost agent's
#: fallback encoder) is attached without telling this process's tracker to forget it
_OWNED: set[str] = set()


def _attach(name: str) -> Any:
    """Map an existing block without making this process's tracker its owner."""
    from multiprocessing.shared_memory import SharedMemory

    if name in _OWNED:  # ours (the fallback's encoder): our tracker must keep it
        return SharedMemory(name=name)
    if sys.version_info >= (3, 13):
        return SharedMemory(name=name, track=False)
    from multiprocessing import resource_tracker

    block = SharedMemory(name=name)
    resource_tracker.unregister(block._name, "shared_memory")  # type: ignore[attr-defined]
    return block


@dataclass(frozen=True, slots=True)
class ShmFrames:
    """One call's frames (C order) in a pool block, after its header."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    #: which call's frames: the block's ticket when they were copied in
    ticket: int = 0

    def open(self) -> tuple[Any, Any]:
        """``(block, array)``: the frames as a NumPy view of the mapped block."""
        import numpy as np

        block = _attach(self.name)
        arr = np.ndarray(self.shape, dtype=np.dtype(self.dtype), buffer=block.buf, offset=HEADER)
        return block, arr

    def free(self) -> None:
        """Frames nobody will read (their event was dropped): mark the block free. A
        block already unlinked (the run ended) has nothing to give back."""
        try:
            block = _attach(self.name)
        except FileNotFoundError:
            return
        self.release(block)

    def release(self, block: Any) -> None:
        """The frames were read: mark the block free for the next call, and unmap it. A
        view still alive (an error's traceback) keeps the mapping until it goes."""
        block.buf[0] = FREE
        with contextlib.suppress(BufferError):
            block.close()


def _reserve(shm: Any, size: int) -> None:
    """Reserve the block's pages now (``posix_fallocate``): a block made with
    ``ftruncate`` alone gets its pages at the first write, and a full ``/dev/shm`` then
    kills the writer with SIGBUS instead of raising. An ``OSError`` (ENOSPC) here means the
    block cannot be backed. A system without ``posix_fallocate`` (macOS: its shared memory
    is no size-limited tmpfs), or a filesystem that cannot reserve, gets its pages at the
    first write; the ``statvfs`` cap still applies."""
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is None:
        return
    try:
        fallocate(shm._fd, 0, size)
    except OSError as exc:  # a filesystem that cannot reserve: pages at first write, not a refusal
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise


class _Block:
    __slots__ = ("buf", "nbytes", "shm", "size", "ticket")

    def __init__(self, size: int) -> None:
        from multiprocessing.shared_memory import SharedMemory

        # registered: our tracker's. Named for this run (``_shmnames``)
        self.shm = SharedMemory(name=block_name(), create=True, size=size)
        try:
            _reserve(self.shm, size)
        except BaseException:
            self.shm.close()
            self.shm.unlink()
            raise
        buf = self.shm.buf
        assert buf is not None
        self.buf: memoryview = buf
        self.size = size
        self.nbytes = 0  # the frames it holds (while in use)
        self.ticket = 0  # the call whose frames it holds
        _OWNED.add(self.shm.name)

    def free(self) -> bool:
        return self.buf[0] == FREE

    def touch(self) -> None:
        """Fault every page into this process's mapping now (one write a page, zeros:
        the state byte stays ``FREE``): the first copy into a fresh block otherwise pays
        a fault a page, ~5 ms for 4 MiB here, 20 ms and more on a loaded machine."""
        import numpy as np

        np.frombuffer(self.buf, np.uint8)[::_PAGE] = 0


class ShmPool:
    """The training process's blocks. ``put`` is called by the logging call (and, for a
    CUDA tensor, by the shipper's round), so it takes a lock."""

    def __init__(self, limit: int) -> None:
        #: the pool keeps free blocks while their total stays under this
        self.limit = limit
        self._blocks: list[_Block] = []
        self._lock = threading.Lock()
        self._closed = False
        self._tickets = itertools.count(1)
        #: a block of this size is being made ahead of the next call (:meth:`_spare`)
        self._making: int | None = None
        self._spares: queue.SimpleQueue[tuple[int, int]] = queue.SimpleQueue()
        self._spare_thread: threading.Thread | None = None
        sweep_stale()  # blocks of runs killed before they could unlink them

    def in_use_bytes(self) -> int:
        """Bytes of frames the agent has not read yet."""
        return sum(b.nbytes for b in self._blocks if not b.free())

    def put(self, arr: Any) -> ShmFrames | None:
        """Copy ``arr`` (a NumPy array of any layout) into a free block; its handle, or
        None when the pool is closed or has :data:`MAX_BLOCKS` blocks all in use."""
        import numpy as np

        need = HEADER + int(arr.nbytes)
        with self._lock:
            block = None if self._closed else self._find(need)
            if block is None:
                return None
            block.buf[0] = IN_USE
            block.nbytes = int(arr.nbytes)
            block.ticket = ticket = next(self._tickets)
            # asked for now: the spare thread does its system calls while this one
            # copies (the copy releases the GIL); asked for after the copy, its wake-up
            # came as the training loop went on, and under load cost the call more
            self._want_spare(block.size)
        try:
            view: Any = np.ndarray(arr.shape, dtype=arr.dtype, buffer=block.buf, offset=HEADER)
            np.copyto(view, arr, casting="no")
            del view
        except BaseException:
            block.buf[0] = FREE
            raise
        return ShmFrames(block.shm.name, tuple(int(n) for n in arr.shape), arr.dtype.str, ticket)

    def release(self, handle: object) -> int:
        """An event holding ``handle`` was dropped unread: mark its block free (its bytes
        come back to the budget); the bytes freed. A no-op for anything but a
        :class:`ShmFrames` whose block still holds that call's frames (read since, and
        maybe taken again by a newer call: the tickets differ)."""
        if type(handle) is not ShmFrames:
            return 0
        with self._lock:
            for b in self._blocks:
                if b.shm.name == handle.name:
                    if b.ticket != handle.ticket or b.free():
                        return 0
                    b.buf[0] = FREE
                    return b.nbytes
        return 0

    def holds(self, handle: ShmFrames) -> bool:
        """Whether ``handle``'s block still holds that call's frames, unread."""
        with self._lock:
            for b in self._blocks:
                if b.shm.name == handle.name:
                    return b.ticket == handle.ticket and not b.free()
        return False

    def release_events(self, events: Iterable[Any]) -> int:
        """:meth:`release` the frames of every ``MEDIA`` event among ``events``."""
        return sum(self.release(e[5]) for e in events if e[0] == MEDIA)

    def _find(self, need: int) -> _Block | None:
        fits = [b for b in self._blocks if b.free() and need <= b.size <= 2 * need + _ROUND]
        if fits:
            return min(fits, key=lambda b: b.size)
        if len(self._blocks) >= MAX_BLOCKS:
            free = [b for b in self._blocks if b.free()]
            if not free:
                return None
            self._drop(max(free, key=lambda b: b.size))
        size = -(-need // _ROUND) * _ROUND
        # make room: unlink free blocks that do not fit, largest first
        total = sum(b.size for b in self._blocks)
        for b in sorted(self._blocks, key=lambda b: -b.size):
            if total + size <= self.limit:
                break
            if b.free():
                self._drop(b)
                total -= b.size
        room = shm_free_bytes()
        if room is not None and size > room - room // 4:
            # leave /dev/shm a quarter of what is free (DataLoaders...): the frames go as
            # a copy in the event instead
            return None
        try:
            block = _Block(size)
        except OSError:  # no room in /dev/shm after all: the frames go as a copy
            return None
        self._blocks.append(block)
        return block

    # -- spare blocks: the next calls of a size find them ready ----------------------------
    def _fits_free(self, size: int) -> int:
        return sum(1 for b in self._blocks if b.free() and size <= b.size <= 2 * size + _ROUND)

    def _want_spare(self, size: int) -> None:
        """After a call of this size, keep :data:`SPARES` free blocks of its size class
        ready: the missing ones are made in a thread of their own (made and their pages
        faulted there, not in the training loop's next call), while the pool stays under
        its limit and :data:`MAX_BLOCKS`; none while a size's spares are on their way.
        Holds the lock."""
        if self._making is not None or self._closed:
            return
        want = SPARES - self._fits_free(size)
        room = min(
            MAX_BLOCKS - len(self._blocks),
            (self.limit - sum(b.size for b in self._blocks)) // size,
        )
        want = min(want, room)
        if want <= 0:
            return
        self._making = size
        self._spares.put((size, want))
        if self._spare_thread is None:
            self._spare_thread = threading.Thread(
                target=self._make_spares, name="aoff-shm-spare", daemon=True
            )
            self._spare_thread.start()

    def _make_spares(self) -> None:
        while True:
            size, want = self._spares.get()
            if size < 0:
                return
            for _ in range(want):
                if not self._make_spare(size):
                    break
            with self._lock:
                self._making = None

    def _make_spare(self, size: int) -> bool:
        """One spare block of ``size`` made, faulted and added; False when none could be
        (the pool closed or full, ``/dev/shm`` short of room)."""
        room = shm_free_bytes()
        if self._closed or (room is not None and size > room - room // 4):
            return False
        try:
            block = _Block(size)
            block.touch()
        except OSError:
            return False
        with self._lock:
            self._blocks.append(block)
            if self._closed or len(self._blocks) > MAX_BLOCKS:
                self._drop(block)
                return False
        return True

    def _drop(self, block: _Block) -> None:
        self._blocks.remove(block)
        _OWNED.discard(block.shm.name)
        block.buf.release()
        block.shm.close()
        block.shm.unlink()

    def close(self) -> None:
        """Unlink every block (the run ended: nothing will read them). Idempotent."""
        with self._lock:
            self._closed = True
            for b in list(self._blocks):
                self._drop(b)
            thread, self._spare_thread = self._spare_thread, None
        if thread is not None:  # one being made now is unlinked before close() returns
            self._spares.put((-1, 0))
            thread.join(5.0)
