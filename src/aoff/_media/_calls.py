"""``log_image``, ``log_video`` and ``log_figure``: the calls both faces share, and the budget.

Each call checks its input and copies it once (``_frames``), then records one ``MEDIA``
event with the copy's handle; the agent's encoder does the rest (``_encoder``). The copy
goes into a shared-memory block when the pump runs in the agent (``pump="process"``), a
NumPy array when it runs in this process.

The media budget (``media_budget``, default 256 MiB): the bytes of frames accepted but not
yet encoded. A call that would go over it is refused at once (never a wait, never a
scalar dropped): no copy is made, a ``MEDIA_REFUSED`` event counts it (``FinishReport.
media_refused``, the run summary) and the first refusal warns once (:class:`AoffWarning`).
The bytes come back as the encoder reads the frames: in process mode the agent marks the
frames' shared-memory block free (``_shm.ShmPool``), in thread mode the encoder thread
reports its running total. In process mode, frames that find no free block (all
``MAX_BLOCKS`` in use) travel as a NumPy copy in the event: that copy counts until it is
freed (pickled into a frame for the agent, dropped, or encoded by a lost agent's
fallback), or a burst of small images would hold any number of copies past the budget.

``log_figure`` renders the Matplotlib figure here, at the call, to an RGB array (Agg,
``figure.canvas.buffer_rgba``), then logs it as an image: a figure is a live object of
this process and cannot travel, and rendering once is what SummaryWriter.add_figure does.
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Generic

from .._core import _events as ev
from .._core._convert import int64_step
from .._core._pending import PendingEvent, Placeholder
from .._core._recorder import R
from .._core._warning import AoffWarning
from ._encoding import PALETTES, PLAIN, Encoding
from ._frames import (
    IMAGE_FORMATS,
    VIDEO_FORMATS,
    capture_frames,
    check_format,
    check_key,
    checked_frames,
)
from ._shm import ShmFrames, ShmPool

__all__ = [
    "DEFAULT_MEDIA_BUDGET",
    "MediaBudget",
    "MediaCalls",
    "check_media_budget",
    "render_figure",
]

DEFAULT_MEDIA_BUDGET = 256 * 1024 * 1024


def check_media_budget(value: object) -> int:
    """``value`` as a media budget (bytes, an int >= 0), or a ``ValueError`` saying why
    not: the one check behind the constructor's, ``log.remote()``'s and
    ``aoff.ray.serve()``'s ``media_budget``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"media_budget must be a number of bytes >= 0, got {value!r}")
    return value


class MediaBudget:
    """Bytes of frames in flight: in process mode, those in pool blocks the agent has not
    read yet (the pool knows at once); in thread mode, taken at the call minus the
    encoder's running total of bytes freed (``note_freed``, from the encoder thread)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        # re-entrant: a copy's finalizer (_unspill) may run in a collection that starts
        # inside take()
        self._lock = threading.RLock()
        self.taken = 0
        self.freed = 0
        #: the shared-memory pool (process mode): its blocks in use are what is in flight
        self.pool: ShmPool | None = None
        #: process mode: bytes of NumPy copies made because no block was free, alive now
        self.spilled = 0

    def note_freed(self, total: int) -> None:
        """The encoder's running total of bytes freed (monotonic)."""
        if total > self.freed:
            self.freed = total

    def in_flight(self) -> int:
        pool = self.pool
        if pool is not None:
            return pool.in_use_bytes() + self.spilled
        return self.taken - self.freed

    def captured(self, payload: object, nbytes: int) -> None:
        """Process mode: a call's frames are in ``payload``. Frames outside the pool (a
        NumPy copy: every block was in use) count until that copy is freed."""
        if self.pool is None or type(payload) is ShmFrames:
            return
        numpy = sys.modules.get("numpy")
        if numpy is None or type(payload) is not numpy.ndarray:
            return  # a device copy still on its way (counted by the pool if it lands there)
        with self._lock:
            self.spilled += nbytes
        weakref.finalize(payload, self._unspill, nbytes)

    def _unspill(self, nbytes: int) -> None:
        with self._lock:
            self.spilled -= nbytes

    def take(self, nbytes: int) -> bool:
        """Room for ``nbytes`` more (then counted), or False (nothing counted)."""
        with self._lock:
            if nbytes > self.limit - self.in_flight():
                return False
            self.taken += nbytes
            return True

    def unread(self, event: ev.Event) -> None:
        """``event`` was dropped before anyone read it (``drop_newest`` refused it): a
        media event's frames give their bytes back (process mode: their block is marked
        free), or enough refusals would refuse every later image."""
        if event[0] == ev.MEDIA:
            if self.pool is not None:
                self.pool.release(event[5])
            self.give_back(event[8])

    def give_back(self, nbytes: int) -> None:
        """A call that took room failed before its frames were queued."""
        with self._lock:
            self.taken -= nbytes


def _fps(where: str, fps: object) -> float:
    if isinstance(fps, bool) or not isinstance(fps, int | float) or not 0 < fps <= 1000:
        raise ValueError(f"{where}: fps must be a number in (0, 1000], got {fps!r}")
    return float(fps)


def _step(where: str, step: object) -> int | None:
    if step is None:
        return None
    if isinstance(step, bool) or not isinstance(step, int):
        index = getattr(step, "__index__", None)
        if index is None:
            raise TypeError(f"{where}: step must be an int or None, got {type(step).__name__}")
        step = index()
    assert isinstance(step, int)
    return step


def _nbytes(shape: tuple[int, ...], itemsize: int) -> int:
    n = itemsize
    for d in shape:
        n *= d
    return n


def _itemsize(data: Any) -> int:
    size = getattr(data, "itemsize", None)  # numpy
    if size is None:
        size = data.element_size() if hasattr(data, "element_size") else 8
    return int(size)


def render_figure(where: str, figure: Any, *, close: bool = False) -> Any:
    """A Matplotlib figure as an ``(H, W, 4)`` uint8 RGBA array (Agg), at the call."""
    canvas = getattr(figure, "canvas", None)
    if canvas is None or not hasattr(figure, "savefig"):
        raise TypeError(f"{where}: expected a matplotlib Figure, got {type(figure).__name__}")
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(canvas, FigureCanvasAgg):
        canvas = FigureCanvasAgg(figure)
    canvas.draw()  # type: ignore[no-untyped-call]
    rgba = np.array(canvas.buffer_rgba(), dtype=np.uint8, copy=True)  # type: ignore[no-untyped-call]
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return rgba


class MediaCalls(Generic[R]):
    """The media calls of a face; it sets ``_media_budget`` (whose ``pool`` is set in
    process mode)."""

    _put: Callable[[ev.Event], R]
    _clock: Callable[[], float]
    _media_budget: MediaBudget
    _media_warned = False

    def _media(
        self,
        where: str,
        what: str,
        key: str,
        data: Any,
        fmt: str,
        step: int | None,
        fps: float,
        wall: float | None = None,
        encoding: Encoding = PLAIN,
    ) -> R:
        budget = self._media_budget
        if step is not None:  # TensorBoard's step is an int64: refused here, not later
            int64_step(where, step)
        data = checked_frames(where, key, data, fmt)  # errors first
        want = _nbytes(tuple(data.shape), _itemsize(data))
        if not budget.take(want):
            return self._refuse(where, key, what)
        try:
            payload, _, _, nbytes = capture_frames(data, pool=budget.pool)
        except BaseException:
            budget.give_back(want)
            raise
        budget.captured(payload, nbytes)
        wall = self._clock() if wall is None else wall
        event = (ev.MEDIA, wall, key, step, what, payload, fmt, fps, nbytes, encoding)
        if isinstance(payload, Placeholder):
            return self._put(PendingEvent(event, (payload,)))
        return self._put(event)

    def _refuse(self, where: str, key: str, what: str) -> R:
        if not self._media_warned:
            self._media_warned = True
            limit = self._media_budget.limit
            warnings.warn(
                f"aoff: {where}({key!r}) refused: more than media_budget={limit:,} bytes of "
                "frames are waiting to be encoded (counted in FinishReport.media_refused; "
                "this warning is shown once)",
                AoffWarning,
                stacklevel=4,
            )
        return self._put((ev.MEDIA_REFUSED, self._clock(), key, what))

    def log_image(
        self, key: str, image: Any, *, step: int | None = None, dataformats: str = "HWC"
    ) -> R:
        """Log one image (TensorBoard: a PNG in the Images tab), encoded in the agent.

        ``image``: a NumPy array or torch tensor (CPU or CUDA), uint8 or float in [0, 1],
        laid out as ``dataformats`` says (``"HWC"``, ``"CHW"`` or ``"HW"``), 1, 3 or 4
        channels. ``step=None``: the step of the last ``log_step``. Returns at once; over
        the media budget the image is refused and counted (see docs/guides/media.md)."""
        where = "log_image"
        key = check_key(where, key)
        fmt = check_format(where, dataformats, IMAGE_FORMATS)
        return self._media(where, "image", key, image, fmt, _step(where, step), 0.0)

    def log_video(
        self,
        key: str,
        frames: Any,
        *,
        step: int | None = None,
        fps: float = 30,
        dataformats: str = "THWC",
        palette: str = "video",
    ) -> R:
        """Log one video (TensorBoard: an animated GIF in the Images tab), encoded in the
        agent. ``frames``: ``(T, H, W, C)`` (``dataformats="THWC"``) or ``(T, C, H, W)``
        (``"TCHW"``), uint8 or float in [0, 1], NumPy or torch (CPU or CUDA). The call
        costs one copy of the frames; see :meth:`log_image` for the rest. ``palette``:
        the GIF's colours, ``"video"`` (one palette for the whole video, fast) or
        ``"frame"`` (one per frame: for colours that change a lot; seconds a video)."""
        where = "log_video"
        key = check_key(where, key)
        fmt = check_format(where, dataformats, VIDEO_FORMATS)
        if palette not in PALETTES:
            raise ValueError(f"{where}: palette must be one of {PALETTES}, got {palette!r}")
        encoding = PLAIN if palette == PLAIN.palette else Encoding(palette=palette)
        return self._media(
            where, "video", key, frames, fmt, _step(where, step), _fps(where, fps), None, encoding
        )

    def log_figure(
        self, key: str, figure: Any, *, step: int | None = None, close: bool = True
    ) -> R:
        """Log a Matplotlib figure as an image: rendered here, at the call, to RGBA
        (Agg), then encoded in the agent like :meth:`log_image`. ``close`` closes it."""
        where = "log_figure"
        key = check_key(where, key)
        rgba = render_figure(where, figure, close=close)
        return self._media(where, "image", key, rgba, "HWC", _step(where, step), 0.0)
