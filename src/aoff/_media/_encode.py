"""From the call's frames to what the backends write: uint8 frames, PNG, GIF, MP4.

Runs in the agent's media encoder thread (``_encoder``), never in the training loop.

Conversion (documented in docs/guides/media.md): a float input is multiplied by 255,
clipped to [0, 255] and truncated to uint8, as torch's ``SummaryWriter`` does (NaN becomes
0); uint8 is taken as is. The layout named by ``dataformats`` becomes ``(T, H, W, C)``;
an image is a one-frame video; ``"HW"`` is one grey channel.

``SummaryWriter``'s frames (``Encoding.torch``, from ``aoff.tensorboard``) follow torch's
``add_image``/``add_images``/``add_video`` to the pixel: grey images become RGB, a batch
of images is tiled 8 to a row (``make_grid``), a batch of videos into a power-of-two grid,
uint8 videos go through ``/255`` then ``*255`` in float32 (so a value may lose one), as
torch's ``_prepare_video`` does.

Encoders: Pillow for PNG and GIF (the ``media`` extra; TensorBoard shows an animated
GIF in its Images tab, which is how torch's ``add_video`` writes a video), PyAV for MP4
(H.264, yuv420p, even sizes). Each is imported at its first use, and a missing one is an
``ImportError`` that names the extra.
"""

from __future__ import annotations

import io
import math
from typing import Any

__all__ = ["encode", "gif_bytes", "gif_delay_ms", "mp4_bytes", "png_bytes", "to_frames"]

_EXTRA = "pip install 'aoff[media]'"


def _np() -> Any:
    import numpy as np

    return np


def _to_uint8(arr: Any) -> Any:
    np = _np()
    if arr.dtype == np.uint8:
        return arr
    x = np.nan_to_num(arr.astype(np.float32), nan=0.0, posinf=255.0, neginf=0.0)
    return (x * 255.0).clip(0, 255).astype(np.uint8)


def _torch_scale(arr: Any) -> Any:
    """torch's ``(x.astype(float32) * scale).clip(0, 255).astype(uint8)``."""
    np = _np()
    scale = 1.0 if arr.dtype == np.uint8 else 255.0
    x = np.nan_to_num(arr.astype(np.float32), nan=0.0)
    return (x * scale).clip(0, 255).astype(np.uint8)


def _grid(images: Any, ncols: int = 8) -> Any:
    """torch's ``make_grid``: ``(N, C, H, W)`` -> ``(C, H * rows, W * cols)``."""
    np = _np()
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    n, c, h, w = images.shape
    ncols = min(n, ncols)
    nrows = math.ceil(n / ncols)
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h : (y + 1) * h, x * w : (x + 1) * w] = images[i]
    return canvas


def _torch_video(v: Any) -> Any:
    """torch's ``_prepare_video``: ``(N, T, C, H, W)`` -> ``(T, H', W', C)`` in [0, 1]."""
    np = _np()
    b, t, c, h, w = v.shape
    if v.dtype == np.uint8:
        v = np.float32(v) / 255.0
    if b & (b - 1):  # pad the batch to a power of two
        v = np.concatenate((v, np.zeros((2 ** b.bit_length() - b, t, c, h, w))), axis=0)
    rows = 2 ** ((b.bit_length() - 1) // 2)
    cols = v.shape[0] // rows
    v = np.reshape(v, (rows, cols, t, c, h, w))
    v = np.transpose(v, (2, 0, 4, 1, 5, 3))
    return np.reshape(v, (t, rows * h, cols * w, c))


def _torch_frames(arr: Any, fmt: str) -> Any:
    np = _np()
    if fmt == "NTCHW":
        return _torch_scale(_torch_video(arr))
    if fmt in ("NCHW", "NHWC"):
        nchw = arr if fmt == "NCHW" else arr.transpose(0, 3, 1, 2)
        hwc = _grid(nchw).transpose(1, 2, 0)
    elif fmt == "HW":
        hwc = np.stack([arr, arr, arr], 2)
    else:
        chw = arr if fmt == "CHW" else arr.transpose(2, 0, 1)
        if chw.shape[0] == 1:
            chw = np.concatenate([chw, chw, chw], 0)
        hwc = chw.transpose(1, 2, 0)
    return _torch_scale(hwc)[None]


def to_frames(arr: Any, fmt: str, *, torch: bool = False) -> Any:
    """``arr`` in layout ``fmt`` as contiguous ``(T, H, W, C)`` uint8 frames (``torch``:
    by torch's conventions, see :class:`~aoff._media._encoding.Encoding`)."""
    np = _np()
    if torch:
        return np.ascontiguousarray(_torch_frames(arr, fmt))
    if fmt == "HW":
        arr = arr[None, :, :, None]
    elif fmt == "HWC":
        arr = arr[None]
    elif fmt == "CHW":
        arr = arr.transpose(1, 2, 0)[None]
    elif fmt == "TCHW":
        arr = arr.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(_to_uint8(arr))


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - Pillow comes with the media extra
        raise ImportError(f"aoff: images and videos need Pillow ({_EXTRA})") from exc
    return Image


def _image(frame: Any, *, alpha: bool = True) -> Any:
    """One ``(H, W, C)`` uint8 frame as a Pillow image (grey, RGB or RGBA)."""
    Image = _pil()
    c = frame.shape[2]
    if c == 1:
        return Image.fromarray(frame[:, :, 0], "L")
    if c == 4 and not alpha:
        frame = frame[:, :, :3]
    return Image.fromarray(frame, "RGBA" if frame.shape[2] == 4 else "RGB")


def png_bytes(frame: Any) -> bytes:
    out = io.BytesIO()
    _image(frame).save(out, format="PNG")
    return out.getvalue()


#: frames sampled (evenly spaced) to build a video's one palette
PALETTE_SAMPLE = 16


def _video_palette(frames: Any) -> Any:
    """One 256-colour palette for ``frames`` (RGB), from an even sample of them: exact
    when the sample has at most 256 colours (a rendered scene with flat colours), else
    Pillow's fast octree (no dither, so a still background stays still)."""
    Image = _pil()
    np = _np()
    t, _, w, _ = frames.shape
    pick = np.linspace(0, t - 1, min(t, PALETTE_SAMPLE)).astype(np.intp)
    sample = Image.fromarray(np.ascontiguousarray(frames[pick].reshape(-1, w, 3)), "RGB")
    colours = sample.getcolors(256)
    if colours is None:
        return sample.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    palette = Image.new("P", (1, 1))
    palette.putpalette([c for _, rgb in colours for c in rgb])
    return palette


def _one_palette_frames(frames: Any) -> list[Any]:
    """``frames`` mapped to one palette: the whole video quantised as one tall image
    (one C call, not one a frame), then cut into frames that share the palette, so the
    GIF writer compares them index to index and writes one global colour table."""
    Image = _pil()
    t, h, w, c = frames.shape
    if c == 1:
        frames = _np().repeat(frames, 3, axis=3)
    rgb = _np().ascontiguousarray(frames[:, :, :, :3])
    tall = Image.fromarray(rgb.reshape(t * h, w, 3), "RGB")
    indexed = tall.quantize(palette=_video_palette(rgb), dither=Image.Dither.NONE)
    return [indexed.crop((0, i * h, w, (i + 1) * h)) for i in range(t)]


def gif_delay_ms(fps: float) -> int:
    """The frame delay a GIF can hold for ``fps``: whole hundredths of a second (the
    format's unit), the nearest to ``1 / fps`` (Pillow would truncate: 15 fps as 60 ms),
    and at least 20 ms, because browsers, TensorBoard's viewer among them, play a delay
    under 20 ms at 100 ms: a 60 fps episode would play six times too slowly. At most
    655.35 s, the field's largest value."""
    return min(max(round(100 / fps), 2), 0xFFFF) * 10


def gif_bytes(frames: Any, fps: float, palette: str = "video") -> bytes:
    """An animated GIF that loops (alpha dropped: GIF has none worth the name).

    ``palette="video"`` (the default): one palette for the whole video, built from a
    sample of its frames, every frame mapped to it without dithering: tens of
    milliseconds for a 200-frame 84x84 episode, where Pillow's own per-frame quantising
    takes seconds. A video whose colours change a lot over time (a scene that fades from
    one palette to another, a sample missing the colours of a short event) loses some
    colour accuracy with one palette: ``palette="frame"`` quantises each frame to its own
    palette, as Pillow does by default, at that cost in time. Pillow merges identical
    consecutive frames into one shown for their total time: the GIF plays the same, with
    fewer frames."""
    extra: dict[str, Any] = {}
    if palette == "frame":
        images = [_image(f, alpha=False) for f in frames]
    else:
        images = _one_palette_frames(frames)
        extra["optimize"] = False  # one shared palette: nothing to shrink per frame
    out = io.BytesIO()
    images[0].save(
        out,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=gif_delay_ms(fps),
        loop=0,
        **extra,
    )
    return out.getvalue()


def mp4_bytes(frames: Any, fps: float) -> bytes:
    """H.264 in MP4 (yuv420p: odd sizes are padded by one pixel, alpha dropped)."""
    try:
        import av
    except ImportError as exc:
        raise ImportError(f"aoff: MP4 videos need PyAV ({_EXTRA})") from exc
    np = _np()
    _, h, w, c = frames.shape
    if c == 1:
        frames = np.repeat(frames, 3, axis=3)
    frames = frames[:, :, :, :3]
    ph, pw = h + h % 2, w + w % 2
    if (ph, pw) != (h, w):
        frames = np.pad(frames, ((0, 0), (0, ph - h), (0, pw - w), (0, 0)), mode="edge")
    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        from fractions import Fraction

        stream = container.add_stream("h264", rate=Fraction(fps).limit_denominator(1000))
        stream.width, stream.height, stream.pix_fmt = pw, ph, "yuv420p"
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f))):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return out.getvalue()


def encode(fmt: str, what: str, frames: Any, fps: float, palette: str = "video") -> bytes:
    """One encoding of ``frames``: ``"png"`` (an image: its one frame; a video: its first),
    ``"gif"`` (a video, with ``palette``: :func:`gif_bytes`) or ``"mp4"`` (a video)."""
    if fmt == "png":
        return png_bytes(frames[0])
    if fmt == "gif":
        return gif_bytes(frames, fps, palette)
    if fmt == "mp4":
        return mp4_bytes(frames, fps)
    raise ValueError(f"aoff: unknown media format {fmt!r}")
