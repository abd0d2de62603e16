"""Animated GIFs as a viewer plays them: the frames (decoded by Pillow, in RGB), each
frame's delay, and how far the colours are from the frames that were logged. The video
drop-ins (``SummaryWriter.add_video``, TorchRL's ``log_video``) are compared with torch's
own writer through these."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image, ImageSequence


def gif_frames(encoded: bytes) -> tuple[np.ndarray, list[int]]:
    """``(T, H, W, 3)`` int frames and their delays in ms (0 where a frame has none)."""
    gif = Image.open(io.BytesIO(encoded))
    assert gif.format == "GIF"
    frames, delays = [], []
    for frame in ImageSequence.Iterator(gif):
        frames.append(np.asarray(frame.convert("RGB"), dtype=np.int16))
        delays.append(int(frame.info.get("duration") or 0))
    return np.stack(frames), delays


def torch_frames(video: Any) -> np.ndarray:
    """What torch's ``add_video`` hands its GIF encoder for ``(N, T, C, H, W)``
    ``video``: ``_prepare_video``'s grid, scaled to uint8 (as ``summary.video`` does),
    grey as RGB, as int ``(T, H, W, 3)``."""
    from torch.utils.tensorboard._utils import _prepare_video

    arr = video.numpy() if hasattr(video, "numpy") else np.asarray(video)
    frames = (_prepare_video(arr).astype(np.float32) * 255).clip(0, 255).astype(np.uint8)
    return np.repeat(frames, 3 // frames.shape[3], axis=3).astype(np.int16)


def colour_error(frames: np.ndarray, source: np.ndarray) -> tuple[float, int]:
    """Mean and largest absolute difference per channel, on the 0-255 scale."""
    assert frames.shape == source.shape, (frames.shape, source.shape)
    diff = np.abs(frames - source)
    return float(diff.mean()), int(diff.max())
