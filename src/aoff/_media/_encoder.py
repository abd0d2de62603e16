"""The media encoder: one thread beside the pump that turns frames into PNG/GIF/MP4.

Why a thread of its own: encoding one 200-frame episode as a GIF takes seconds. The pump's
fold must never wait for it (the scalars around a video would be late), so the intake
only hands each media event over (:meth:`MediaEncoder.submit`, a deque append) and the
encoder thread does the rest: map the frames (a shared-memory block in process mode),
convert them to uint8 ``(T, H, W, C)``, free the block, encode once per format the
backends asked for, and leave a :class:`MediaRecord` in :attr:`done`, which the intake
offers to the backends' runners on its next tick.

Bounded: what waits here is bounded by the media budget (``media_budget`` bytes, checked
at the call, ``_calls.py``); the bytes freed so far (:attr:`freed_bytes`) go back to the
caller's budget (thread mode: ``on_freed``; process mode: the agent's ``Ack``). A bad
item (undecodable, an encoder error) is reported once per kind of error and counted in
:attr:`failed`, never raised into the pump.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

from .._core._buffer import EventBuffer
from .._core._events import MEDIA
from .._core._records import MediaRecord
from ._freed import has_media

__all__ = ["MediaEncoder", "MediaJob"]

#: (key, step, wall_time, what, frames payload, dataformats, fps, bytes the logger's budget
#: gets back once done: the frames' size, 0 for a producer's, freed by its own budget)
MediaJob = tuple[str, int, float, str, Any, str, float, int]


class MediaEncoder:
    def __init__(self, report: Callable[[str], None]) -> None:
        self.report = report
        #: the formats to make, by what: ``{"image": {"png"}, "video": {"gif", "mp4"}}``
        self.formats: dict[str, set[str]] = {"image": set(), "video": set()}
        self.done: collections.deque[MediaRecord] = collections.deque()
        self.freed_bytes = 0
        self.written = 0  # encoded and handed over
        self.failed = 0
        self.abandoned = 0  # still queued when finish() stopped waiting
        self.on_freed: Callable[[int], None] | None = None
        self._jobs: collections.deque[MediaJob] = collections.deque()
        self._cond = threading.Condition()
        self._submitted = 0
        self._finished = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, job: MediaJob) -> None:
        """Queue one item (never blocks; the caller's budget bounds the queue)."""
        with self._cond:
            self._jobs.append(job)
            self._submitted += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="aoff-media-encoder", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def trim(self, buffer: EventBuffer) -> int:
        """The pump's ``drop_oldest`` trim of ``buffer`` (``EventBuffer.trim``): frames
        of the ``MEDIA`` events it drops are never encoded, so they are given back here:
        their bytes join :attr:`freed_bytes` (the budget, ``on_freed``) and a
        shared-memory block (a lost agent's fallback) is marked free. A trim without
        media pays one C-speed look at the kinds."""
        out = buffer.trim_out()
        if out and has_media(out):
            self.drop([e for e in out if e[0] == MEDIA])
        return len(out)

    def drop(self, events: list[Any]) -> None:
        """``MEDIA`` events that will never be encoded: free their frames."""
        from ._shm import ShmFrames

        for e in events:
            if type(e[5]) is ShmFrames:
                e[5].free()
        with self._cond:
            self.freed_bytes += sum(e[8] for e in events)
            total = self.freed_bytes
        hook = self.on_freed
        if hook is not None:
            hook(total)

    def idle(self) -> bool:
        return self._finished >= self._submitted

    def wait_idle(self, timeout: float) -> bool:
        """Block (a worker thread, never the loop) until every item was encoded."""
        with self._cond:
            return self._cond.wait_for(self.idle, timeout=timeout)

    def pending_count(self) -> int:
        return self._submitted - self._finished

    def close(self) -> None:
        """No more items: those not started are dropped (finish() gave up on them)."""
        with self._cond:
            self._closed = True
            self.abandoned += len(self._jobs)
            self._jobs.clear()
            self._cond.notify_all()

    # -- the thread ------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._jobs) or self._closed)
                if not self._jobs:
                    return
                job = self._jobs.popleft()
            try:
                rec = self._encode(job)
            except Exception as exc:
                self.failed += 1
                self.report(f"aoff: could not encode media {job[0]!r}: {type(exc).__name__}: {exc}")
                rec = None
            if rec is not None:
                self.done.append(rec)
                self.written += 1
            with self._cond:
                self.freed_bytes += job[7]
                self._finished += 1
                self._cond.notify_all()
            hook = self.on_freed
            if hook is not None:
                hook(self.freed_bytes)

    def _encode(self, job: MediaJob) -> MediaRecord:
        from ._encode import encode, to_frames
        from ._shm import ShmFrames

        key, step, wall, what, payload, fmt, fps, _ = job
        fmt, _, palette = fmt.partition("+")
        palette = palette or "video"
        wanted = sorted(self.formats[what])
        if isinstance(payload, ShmFrames):
            block, arr = payload.open()
            try:  # encoded straight from the block, which is freed right after
                frames = to_frames(arr, fmt)
                encoded = {f: encode(f, what, frames, fps, palette) for f in wanted}
                shape = frames.shape
            finally:
                del arr
                frames = None
                payload.release(block)
        else:
            frames = to_frames(payload, fmt)
            encoded = {f: encode(f, what, frames, fps, palette) for f in wanted}
            shape = frames.shape
        t, h, w, c = (int(n) for n in shape)
        return MediaRecord(key, step, wall or time.time(), what, (t, h, w, c), fps, encoded)
