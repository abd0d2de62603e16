"""Distributions (``log_histogram``): what the hot path keeps, and the one reduction.

A distribution becomes a :class:`Histogram`: the count of finite values, min, max, sum,
sum of squares, :data:`BINS` equal-width bucket counts between min and max, and the
:data:`PERCENTILES` (linear interpolation, NumPy's default). Backends get the histogram
(TensorBoard) and the scalars of :func:`histogram_scalars` (every backend).

Where the reduction runs, by input:

* **CUDA tensors** are reduced on the device by ``_histogram_torch`` inside an
  asynchronous copy (never a sync), and the small result is read by whoever drains the
  buffer once its CUDA event reports completion.
* **CPU tensors, NumPy arrays and sequences** of up to :data:`DEFER_MAX` elements are
  *copied* in the caller (a ``memcpy``: ~1-3 us for 4,096 floats) and reduced by the pump,
  in the agent process by default, so the training thread never pays for the sort and
  the binning (~60-100 us for 4,096 values). The copy is a plain NumPy array, which
  pickles to the agent. Larger inputs are reduced in the caller instead, so that one
  buffered event holds at most ``DEFER_MAX`` values (512 KiB) however large the input.
  The buffer bounds events, not bytes: while the pump keeps up (it reduces 4,096 values
  in ~0.1 ms) a copy lives for one tick; if it falls behind, ``capacity`` bounds how
  many copies wait.

Bad input is refused at the call, with a specific error: a key that is not a non-empty
``str`` (``TypeError``/``ValueError``), a value that is not a tensor, array or sequence
(``TypeError``), a non-numeric dtype (complex, strings, objects that are not numbers:
``TypeError``), an empty input or a ragged sequence (``ValueError``). NaN and ±inf are
not errors: they are left out of every statistic and counted in ``nonfinite`` (logged as
``<key>/nonfinite`` when not zero).

No module-level NumPy import: ``import aoff`` stays light; NumPy is imported at the first
``log_histogram`` (it is installed with TensorBoard).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from ._convert import encodable
from ._histogram_data import BINS, PERCENTILES, Histogram, bucket_limits

#: inputs up to this many elements are copied and reduced by the pump; larger ones are
#: reduced in the caller (bounded memory per buffered event)
DEFER_MAX = 1 << 16

_NUMERIC_KINDS = frozenset("biuf")


# -- the hot path ---------------------------------------------------------------------------
def check_key(key: object) -> str:
    if type(key) is not str:
        raise TypeError(f"log_histogram: key must be a str, got {type(key).__name__}")
    if not key:
        raise ValueError("log_histogram: key must not be empty")
    if not key.isascii() and not encodable(key):
        raise ValueError(f"log_histogram: key {key!r:.60} is not valid Unicode")
    return key


def _empty(key: str) -> ValueError:
    return ValueError(f"log_histogram: values for {key!r} are empty (nothing to summarise)")


def capture(key: object, values: Any) -> Any:
    """What a ``log_histogram`` event carries for ``values``: a device placeholder (CUDA
    tensor), a private NumPy copy, or (over :data:`DEFER_MAX` elements) the
    :class:`Histogram` itself. Raises for bad input, in the caller."""
    key = check_key(key)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(values, torch.Tensor):
        if values.is_cuda:
            from ._histogram_torch import capture_cuda

            return capture_cuda(key, values)
        arr = _from_cpu_tensor(key, values, torch)
    else:
        arr = _from_other(key, values)
    if arr.size == 0:
        raise _empty(key)
    if arr.size > DEFER_MAX:
        return summarize(key, arr)
    return arr


def _from_cpu_tensor(key: str, t: Any, torch: Any) -> Any:
    if t.is_complex() or t.is_quantized:
        raise TypeError(f"log_histogram: tensor for {key!r} has non-real dtype {t.dtype}")
    if t.numel() == 0:
        raise _empty(key)
    if t.is_floating_point() and t.dtype not in (torch.float32, torch.float64):
        # float16/bfloat16/float8: NumPy has no (or no exact) twin; .to() makes a new tensor
        return t.detach().to("cpu", torch.float32).numpy()
    # numpy(force=True) copes with requires_grad, conj/neg bits and non-CPU devices
    return t.numpy(force=True).copy()


def _from_other(key: str, values: Any) -> Any:
    import numpy as np

    if isinstance(values, np.ndarray):
        if values.dtype.kind in _NUMERIC_KINDS:
            return values.copy()
        if values.dtype.kind != "O":
            raise TypeError(
                f"log_histogram: array for {key!r} has non-numeric dtype {values.dtype}"
            )
    elif (
        values is None
        or isinstance(values, str | bytes | bytearray | dict)
        or not hasattr(values, "__len__")
    ):
        raise TypeError(
            f"log_histogram: values for {key!r} must be a tensor, a NumPy array or a "
            f"sequence of numbers, got {type(values).__name__}"
        )
    if len(values) == 0:
        raise _empty(key)
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        kind = ValueError if "inhomogeneous" in str(exc) or "sequence" in str(exc) else TypeError
        raise kind(
            f"log_histogram: values for {key!r} are not an array of real numbers: {exc}"
        ) from None
    return arr


# -- the reduction (in the pump, or in the caller for large inputs) --------------------------
def summarize(tag: str, values: Any) -> Histogram:
    """Reduce a NumPy array (any real dtype and shape) to a :class:`Histogram`.

    One sort does most of the work (~4x cheaper than ``np.percentile`` plus
    ``np.bincount`` at 4,096 values): NumPy sorts ``-inf`` first and ``+inf``/NaN last,
    so the finite values are one slice found by two binary searches; min and max are its
    ends, the percentiles are read at their positions, and the bucket of each value,
    ``floor((x - min) * BINS / (max - min))`` (the device path's formula), is a
    non-decreasing array whose bucket boundaries are again binary searches.
    """
    import numpy as np

    s = np.sort(np.asarray(values, dtype=np.float64), axis=None)
    first = int(np.searchsorted(s, -np.inf, side="right"))
    end = int(np.searchsorted(s, np.inf, side="left"))
    x = s[first:end]
    n = int(x.size)
    nonfinite = int(s.size) - n
    if n == 0:
        return Histogram(tag, 0, nonfinite, math.nan, math.nan, 0.0, 0.0, (), (), ())
    lo = float(x[0])
    hi = float(x[-1])
    total = float(x.sum())
    squares = float(np.dot(x, x))
    width = hi - lo
    if width > 0 and math.isfinite(width):
        idx = ((x - lo) * (BINS / width)).astype(np.int64)
        np.minimum(idx, BINS - 1, out=idx)
        starts = np.searchsorted(idx, np.arange(BINS + 1), side="left")
        counts = [float(c) for c in np.diff(starts).tolist()]
    else:  # one value (or a span beyond float range): everything in the first bucket
        counts = [float(n)] + [0.0] * (BINS - 1)
    pos = np.asarray(PERCENTILES, dtype=np.float64) * ((n - 1) / 100)
    below = np.floor(pos)
    i_lo = below.astype(np.int64)
    i_hi = np.minimum(i_lo + 1, n - 1)
    pct = x[i_lo] + (x[i_hi] - x[i_lo]) * (pos - below)
    return Histogram(
        tag,
        n,
        nonfinite,
        lo,
        hi,
        total,
        squares,
        bucket_limits(lo, hi),
        tuple(counts),
        tuple(zip(PERCENTILES, (float(v) for v in pct.tolist()), strict=True)),
    )
