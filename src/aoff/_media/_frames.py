"""The call's half of a media call: check the input, then copy it once.

Accepted input: a NumPy array or a torch tensor (CPU or CUDA) of dtype ``uint8``, or a
float dtype with values in [0, 1] (converted in the agent, see ``_encode.to_uint8``), in
the layout ``dataformats`` names: ``"HWC"`` (default), ``"CHW"`` or ``"HW"`` for an image,
``"THWC"`` (default) or ``"TCHW"`` for a video, with 1 (grey), 3 (RGB) or 4 (RGBA)
channels. Anything else is an error here, at the call, naming what is wrong: a key that is
not a non-empty str, a type that is not an array or tensor (``TypeError``), a dtype that
is neither uint8 nor float (``TypeError``), a shape that does not match ``dataformats``,
a channel count other than 1/3/4 or an empty array (``ValueError``).

The copy, by where the pump runs: process mode, a block of the face's shared-memory
pool (``_shm``); thread mode, a NumPy copy. A CUDA tensor is copied without a sync
(``_cuda``), like ``log_histogram``'s. Nothing is converted here: the layout and the
float scaling are the agent's work, so the caller pays for one ``memcpy``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .._core._convert import encodable, unencodable

if TYPE_CHECKING:
    from ._shm import ShmPool

__all__ = [
    "IMAGE_FORMATS",
    "VIDEO_FORMATS",
    "Captured",
    "capture_frames",
    "check_key",
    "checked_frames",
]

IMAGE_FORMATS = ("HWC", "CHW", "HW")
VIDEO_FORMATS = ("THWC", "TCHW")
_CHANNELS = (1, 3, 4)
_FLOAT_KINDS = "f"

#: what the event carries: (frames payload, shape, dtype name, bytes)
Captured = tuple[Any, tuple[int, ...], str, int]


def check_key(where: str, key: object, what: str = "key") -> str:
    """``key`` if every backend can name a file and a tag after it; ``what="tag"``:
    torch's ``SummaryWriter`` calls, which take an empty tag as torch's do."""
    if not isinstance(key, str):
        raise TypeError(f"{where}: {what} must be a str, got {type(key).__name__}")
    if not key and what != "tag":
        raise ValueError(f"{where}: {what} must not be empty")
    if not key.isascii() and not encodable(key):  # every backend's tag is UTF-8
        raise unencodable(where, what, key)
    return key


def check_format(where: str, dataformats: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(dataformats, str) or dataformats.upper() not in allowed:
        raise ValueError(f"{where}: dataformats must be one of {allowed}, got {dataformats!r}")
    return dataformats.upper()


def check_shape(where: str, key: str, shape: tuple[int, ...], fmt: str) -> None:
    if len(shape) != len(fmt):
        raise ValueError(
            f"{where}: {key!r} has shape {shape} ({len(shape)} dimensions); dataformats "
            f"{fmt!r} needs {len(fmt)}"
        )
    if 0 in shape:
        raise ValueError(f"{where}: {key!r} is empty (shape {shape})")
    if "C" in fmt:
        c = shape[fmt.index("C")]
        if c not in _CHANNELS:
            raise ValueError(
                f"{where}: {key!r} has {c} channels (dataformats {fmt!r}, shape {shape}); "
                "expected 1 (grey), 3 (RGB) or 4 (RGBA)"
            )


def _bad_dtype(where: str, key: str, dtype: object) -> TypeError:
    return TypeError(
        f"{where}: {key!r} has dtype {dtype}; expected uint8 (0-255) or a float dtype "
        "with values in [0, 1]"
    )


def checked_frames(where: str, key: str, data: Any, fmt: str) -> Any:
    """``data`` checked against ``fmt`` (a list or tuple as a NumPy array): the call's
    errors, before anything is copied or counted."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        if not (data.dtype == torch.uint8 or data.is_floating_point()):
            raise _bad_dtype(where, key, data.dtype)
        check_shape(where, key, tuple(int(n) for n in data.shape), fmt)
        return data
    import numpy as np

    if not isinstance(data, np.ndarray):
        if not isinstance(data, list | tuple):
            raise TypeError(
                f"{where}: {key!r} must be a NumPy array or a torch tensor, "
                f"got {type(data).__name__}"
            )
        data = np.asarray(data)
    if not (data.dtype == np.uint8 or data.dtype.kind in _FLOAT_KINDS):
        raise _bad_dtype(where, key, data.dtype)
    check_shape(where, key, tuple(int(n) for n in data.shape), fmt)
    return data


def capture_frames(data: Any, *, pool: ShmPool | None) -> Captured:
    """Copy frames :func:`checked_frames` returned (into a block of ``pool``, if given).

    Returns the payload for the event (a NumPy copy, a :class:`ShmFrames`, or a CUDA
    placeholder), its shape, dtype name and size in bytes."""
    shape = tuple(int(n) for n in data.shape)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        return _capture_tensor(data, shape, torch, pool=pool)
    return _copy(data, shape, pool)


def _copy(arr: Any, shape: tuple[int, ...], pool: ShmPool | None) -> Captured:
    handle = pool.put(arr) if pool is not None else None
    if handle is not None:
        return handle, shape, arr.dtype.name, int(arr.nbytes)
    import numpy as np

    copy = np.array(arr, copy=True, order="C")
    return copy, shape, copy.dtype.name, int(copy.nbytes)


def _capture_tensor(
    t: Any, shape: tuple[int, ...], torch: Any, *, pool: ShmPool | None
) -> Captured:
    if t.is_cuda:
        from ._cuda import CudaFrames

        frames = CudaFrames(t, pool=pool)
        return frames, shape, frames.dtype_name, frames.nbytes
    if t.dtype not in (torch.uint8, torch.float32, torch.float64, torch.float16):
        t = t.detach().to(torch.float32)  # bfloat16, float8: NumPy has no twin
    return _copy(t.detach().numpy(), shape, pool)
