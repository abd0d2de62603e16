"""The media encoder: one thread beside the pump that turns frames into PNG/GIF/MP4.

Why a thread of its own: encoding one 200-frame episode as a GIF takes seconds. The pump's
fold must never wait for it (the scalars around a video would be late), so the intake
only hands each media event over (:meth:`MediaEncoder.submit`, a deque append) and the
encoder thread does the rest: map the frames (a shared-memory block in process mode),
convert them to uint8 ``(T, H, W, C)``, encode once per format the backends asked for,
and leave a :class:`MediaRecord` in :attr:`done`, which the intake offers to the
backends' runners on its next tick; the block is freed once they all wrote it.

Bounded: what waits here is bounded by the media budget (``media_budget`` bytes, checked
at the call, ``_calls.py``); the bytes freed so far (:attr:`freed_bytes`) go back to the
caller's budget (thread mode: ``on_freed``; process mode: the agent's ``Ack``). A bad
item (undecodable, an encoder error) is reported once per kind of error and counted in
:attr:`failed`, never raised into the pump.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from .._core._buffer import EventBuffer
from .._core._events import MEDIA
from .._core._records import MediaRecord
from ._encoding import Encoding
from ._freed import has_media

__all__ = [
    "BACKEND_FAILED",
    "FAILED",
    "FRAMES_GONE",
    "LOST_AGENT",
    "NO_BACKEND",
    "STALLED",
    "MediaEncoder",
    "MediaJob",
]

#: why media accepted at the call were not written (``FinishReport.media_lost``' keys):
#: the encoder finished no item within ``finish_timeout`` at the end of the run
STALLED = "stalled"
#: the encoder raised on the item (reported once per kind of error)
FAILED = "encoder error"
#: no backend of the run writes images or videos
NO_BACKEND = "no media backend"
#: every backend that took the item refused it or failed before writing it
BACKEND_FAILED = "backend failed"
#: handed to an agent that was lost before it wrote them, and not encoded again
LOST_AGENT = "agent lost"
#: their shared-memory block was gone: the training process ended before they were read
FRAMES_GONE = "frames gone"

#: (key, step, wall_time, what, frames payload, dataformats, fps, bytes the logger's budget
#: gets back once done: the frames' size, 0 for a producer's, freed by its own budget;
#: the call's encoding options)
MediaJob = tuple[str, int, float, str, Any, str, float, int, Encoding]


class MediaEncoder:
    def __init__(
        self, say: Callable[[str], None], on_freed: Callable[[int], None] | None = None
    ) -> None:
        self.say = say
        #: the formats to make, by what: ``{"image": {"png"}, "video": {"gif", "mp4"}}``
        self.formats: dict[str, set[str]] = {"image": set(), "video": set()}
        #: encoded, with what frees its frames' block once every backend is done with it
        #: (None: nothing to free; the intake calls it, ``Intake._media_done``)
        self.done: collections.deque[tuple[MediaRecord, Callable[[], None] | None]] = (
            collections.deque()
        )
        self.freed_bytes = 0
        self.written = 0  # encoded and handed over
        self.failed = 0
        #: accepted but never handed over, by reason (:data:`STALLED`, :data:`FAILED`)
        self.lost: collections.Counter[str] = collections.Counter()
        self.on_freed = on_freed
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

    def finished(self) -> int:
        """Items done so far (encoded or failed): the encoder's progress."""
        return self._finished

    def wait_progress(self, since: int, timeout: float) -> bool:
        """Block (a worker thread, never the loop) until every item was encoded or one
        more than ``since`` finished; False if neither happened within ``timeout``."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self.idle() or self._finished > since, timeout=timeout
            )

    def pending_count(self) -> int:
        return self._submitted - self._finished

    def close(self) -> None:
        """No more items: those not finished are given up (the encoder stalled) and
        counted in :attr:`lost`; one being encoded now is dropped when it ends."""
        with self._cond:
            if not self._closed:
                self._closed = True
                self.lost[STALLED] += self._submitted - self._finished
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
            why = FAILED
            release: Callable[[], None] | None = None
            try:
                rec, release = self._encode(job)
            except FileNotFoundError:  # its block: the training process is gone
                why, rec = FRAMES_GONE, None
                self.say(
                    "aoff: the frames of images/videos in shared memory were gone (the "
                    "training process ended before they were read); they are not written"
                )
            except Exception as exc:
                self.say(f"aoff: could not encode media {job[0]!r}: {type(exc).__name__}: {exc}")
                rec = None
            with self._cond:
                if not self._closed:  # closed: counted as stalled already
                    if rec is None:
                        self.failed += 1
                        self.lost[why] += 1
                    else:
                        self.done.append((rec, release))
                        self.written += 1
                        release = None
                self.freed_bytes += job[7]
                self._finished += 1
                self._cond.notify_all()
            if release is not None:  # closed meanwhile: nobody will write it
                release()
            hook = self.on_freed
            if hook is not None:
                hook(self.freed_bytes)

    def _encode(self, job: MediaJob) -> tuple[MediaRecord, Callable[[], None] | None]:
        """The record, and what frees its frames' shared-memory block (None for a copy).
        The block stays in use until every backend wrote the record: an agent lost
        before that leaves it to the fallback, which encodes it again from the block."""
        from ._encode import encode, to_frames
        from ._shm import ShmFrames

        key, step, wall, what, payload, fmt, fps, _, encoding = job
        palette = encoding.palette
        wanted = sorted(self.formats[what])
        release: Callable[[], None] | None = None
        if isinstance(payload, ShmFrames):
            block, arr = payload.open()
            try:  # encoded straight from the block
                frames = to_frames(arr, fmt, torch=encoding.torch)
                encoded = {f: encode(f, what, frames, fps, palette) for f in wanted}
                shape = frames.shape
            except BaseException:
                del arr
                frames = None
                payload.release(block)
                raise
            del arr
            frames = None
            release = functools.partial(payload.release, block)
        else:
            frames = to_frames(payload, fmt, torch=encoding.torch)
            encoded = {f: encode(f, what, frames, fps, palette) for f in wanted}
            shape = frames.shape
        t, h, w, c = (int(n) for n in shape)
        rec = MediaRecord(key, step, wall or time.time(), what, (t, h, w, c), fps, encoded)
        return rec, release
