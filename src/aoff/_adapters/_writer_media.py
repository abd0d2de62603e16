"""``SummaryWriter``'s media calls (``add_image``, ``add_images``, ``add_video``,
``add_figure``), through aoff's media path (``_media/``).

Each call takes what torch's takes and checks it at the call (shape against
``dataformats``, dtype, channels); the frames are copied once and the agent encodes them
exactly as torch's ``SummaryWriter`` would: the layout is converted with torch's rules
(grey to RGB, ``make_grid`` for a batch of images, the power-of-two grid of
``_prepare_video`` for a batch of videos; ``_media/_encode.py``), then a PNG (images) or
an animated GIF (videos) image summary under the tag, at ``global_step`` (default 0, as
torch) and ``walltime``. Figures are rendered at the call (Agg, RGB), as torch's
``figure_to_image`` does. Unlike torch's ``add_video``, no moviepy is needed (Pillow
writes the GIF).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._core._warning import AoffWarning
from .._media._calls import render_figure
from .._media._encoding import TORCH
from .._media._frames import check_format, check_key
from . import _writer_checks as checked

if TYPE_CHECKING:
    from .._faces._face import Face
    from .._faces._sync import OffPolicyLogger

__all__ = ["WriterMedia", "torch_figure", "torch_image", "torch_video"]


def _step(where: str, global_step: Any) -> int:
    return 0 if global_step is None else checked.step(where, global_step)


def _wall(where: str, walltime: float | None) -> float:
    return time.time() if walltime is None else checked.walltime(where, walltime)


# -- torch's media calls on an aoff logger (also SB3's Image/Video/Figure, _sb3.py) ----------
def torch_image(
    log: Face[Any], where: str, tag: str, img: Any, step: int, wall: float | None, fmt: str
) -> None:
    fmt = check_format(where, fmt, ("CHW", "HWC", "HW", "NCHW", "NHWC"))
    log._media(where, "image", check_key(where, tag, "tag"), img, fmt, step, 0.0, wall, TORCH)


def torch_video(
    log: Face[Any], where: str, tag: str, vid: Any, step: int, fps: float, wall: float | None
) -> None:
    """``(N, T, C, H, W)`` videos as one animated GIF (torch's grid)."""
    fps = float(fps)
    log._media(where, "video", check_key(where, tag, "tag"), vid, "NTCHW", step, fps, wall, TORCH)


def torch_figure(
    log: Face[Any], where: str, tag: str, figure: Any, step: int, close: bool, wall: float | None
) -> None:
    """A Matplotlib figure (or a list of them, as a batch), rendered here to RGB."""
    if isinstance(figure, Sequence):
        import numpy as np

        rgb = np.stack([render_figure(where, f, close=close)[:, :, :3] for f in figure])
        torch_image(log, where, tag, rgb, step, wall, "NHWC")
    else:
        rgb = render_figure(where, figure, close=close)[:, :, :3]
        torch_image(log, where, tag, rgb, step, wall, "HWC")


class WriterMedia:
    """The media calls of :class:`aoff.tensorboard.SummaryWriter` (``_engine`` is its
    aoff logger)."""

    _engine: OffPolicyLogger
    _closed: bool

    def _after_close(self, where: str) -> bool:
        """True (and one warning naming the call) once the writer is closed: the call is
        not recorded."""
        if not self._closed:
            return False
        warnings.warn(
            f"aoff: {where}() called after close(); it was not recorded",
            AoffWarning,
            stacklevel=3,  # this method, the media call: the user's line
        )
        return True

    def add_image(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """One image (uint8, or float in [0, 1]); ``dataformats`` ``"CHW"``, ``"HWC"`` or
        ``"HW"``. A PNG image summary, as torch's."""
        where = "add_image"
        if self._after_close(where):
            return
        check_format(where, dataformats, ("CHW", "HWC", "HW"))
        step = _step(where, global_step)
        torch_image(self._engine, where, tag, img_tensor, step, _wall(where, walltime), dataformats)

    def add_images(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """A batch of images (``"NCHW"`` or ``"NHWC"``), tiled 8 to a row like torch's."""
        where = "add_images"
        if self._after_close(where):
            return
        check_format(where, dataformats, ("NCHW", "NHWC"))
        step = _step(where, global_step)
        torch_image(self._engine, where, tag, img_tensor, step, _wall(where, walltime), dataformats)

    def add_video(
        self,
        tag: str,
        vid_tensor: Any,
        global_step: int | None = None,
        fps: float = 4,
        walltime: float | None = None,
    ) -> None:
        """Videos ``(N, T, C, H, W)`` (uint8, or float in [0, 1]) as one animated GIF."""
        where = "add_video"
        if self._after_close(where):
            return
        step = _step(where, global_step)
        torch_video(self._engine, where, tag, vid_tensor, step, fps, _wall(where, walltime))

    def add_figure(
        self,
        tag: str,
        figure: Any,
        global_step: int | None = None,
        close: bool = True,
        walltime: float | None = None,
    ) -> None:
        """A Matplotlib figure (or a list of them, as a batch), rendered here to RGB."""
        where = "add_figure"
        if self._after_close(where):
            return
        step = _step(where, global_step)
        torch_figure(self._engine, where, tag, figure, step, close, _wall(where, walltime))
