"""Media delivery: every video accepted is written, or counted and named.

The GIF encoding (one palette per video by default, per frame as an option), the wait
of ``finish()`` for an encoder that makes progress, the count of what was not written,
and the shared-memory blocks (reserved when made, named for their run, swept when stale).
Videos are read back with TensorBoard's reader and decoded with Pillow.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageSequence

import aoff
from aoff import OffPolicyLogger
from aoff._media._encode import gif_bytes

MODES = ("process", "thread")


def _logger(tmp_path: Path, pump: str, **kw: Any) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=tmp_path,
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
        system_interval=0,
        display=aoff.NullDisplay(),
        **kw,
    )


def frames_of(encoded: bytes) -> list[np.ndarray]:
    img = Image.open(io.BytesIO(encoded))
    return [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(img)]


def smooth_scene(t: int, h: int, w: int) -> np.ndarray:
    """A rendered scene with smooth gradients that move: thousands of colours."""
    y, x = np.mgrid[0:h, 0:w]
    v = np.empty((t, h, w, 3), np.uint8)
    for i in range(t):
        v[i, :, :, 0] = (x * 3 + i) % 256
        v[i, :, :, 1] = (y * 3 + 2 * i) % 256
        v[i, :, :, 2] = (x + y + i) % 256
    return v


def test_one_palette_per_video_by_default_and_per_frame_as_an_option() -> None:
    """Both GIFs decode to every frame at the right size; one palette maps each pixel to
    its nearest of 256 colours (a small error on a smooth scene, none on a flat one), the
    per-frame palettes are closer on colours that change, and a flat scene stays exact."""
    v = smooth_scene(24, 20, 30)
    errors = {}
    for palette in ("video", "frame"):
        frames = frames_of(gif_bytes(v, 30, palette))
        assert len(frames) == 24
        assert all(f.shape == (20, 30, 3) for f in frames)
        err = np.mean([np.abs(f.astype(int) - g).mean() for f, g in zip(frames, v, strict=True)])
        errors[palette] = err
    assert errors["video"] < 16, errors
    assert errors["frame"] < errors["video"], errors
    flat = np.zeros((10, 8, 8, 3), np.uint8)
    for i in range(10):
        flat[i, :, : i % 8 + 1] = (200, 30 * (i % 3), 7)
    for got, exp in zip(frames_of(gif_bytes(flat, 10)), flat, strict=True):
        assert np.array_equal(got, exp)
    grey = frames_of(gif_bytes(flat[:, :, :, :1], 10))
    assert np.array_equal(grey[3], np.repeat(flat[3, :, :, :1], 3, axis=2))


@pytest.mark.parametrize("pump", MODES)
def test_log_video_palette_option_is_checked_and_written(tmp_path: Path, pump: str) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    v = smooth_scene(6, 10, 12)
    with _logger(tmp_path, pump) as log:
        with pytest.raises(ValueError, match="palette must be one of"):
            log.log_video("bad", v, palette="per-frame")
        log.log_video("per_frame", v, step=3, palette="frame")
        log.log_video("one", v, step=3)
    acc = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    acc.Reload()
    assert set(acc.Tags()["images"]) == {"per_frame", "one"}
    (rec,) = acc.Images("per_frame")
    assert np.array_equal(
        frames_of(rec.encoded_image_string)[0], frames_of(gif_bytes(v, 30, "frame"))[0]
    )
