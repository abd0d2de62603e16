"""``log_histogram`` of a CUDA tensor: reduced on the device, read without a sync.

Imported only for a tensor (so torch is already imported). :func:`reduce_tensor` turns a
tensor of any real dtype and shape into one float64 vector of ``6 + len(PERCENTILES) +
BINS`` values with torch ops that never read device memory on the host: every size it
needs is the input's ``numel`` (known on the host), and every value that depends on the
data (how many are finite, min/max, bucket indices, percentile positions) stays on the
device:

* finite mask: ``isfinite``; count ``sum``; min/max: ``amin``/``amax`` of ``where(finite,
  x, ±inf)`` (``aminmax`` would return NaN for a NaN input);
* sum and sum of squares in float64 over ``where(finite, x, 0)``;
* buckets: each finite value's index ``(x - min) * BINS / (max - min)``, made safe with
  ``nan_to_num`` and ``clamp`` (an out-of-range index would be a device assert), then
  ``scatter_add_`` of the finite mask into a fixed ``zeros(BINS)``. Not ``histc`` (with
  ``min == max`` it computes the range with ``.item()``) and not ``bincount`` (it reads
  the largest index on the host to size its output);
* percentiles: ``sort`` of ``where(finite, x, nan)`` (NaN sorts last, so the finite
  values come first), positions ``q * (count - 1)`` computed on the device from the
  device count with Python-scalar multiplies (no host-to-device copy of a ``q`` list,
  which would be a blocking copy), ``gather`` at the floor and the next index and a
  linear interpolation: the same definition as NumPy's default ``percentile``.

The vector is copied with ``non_blocking=True`` into pinned host memory and a CUDA event
is recorded after it, on the current stream, exactly like the scalar path (``_tensors``):
:class:`CudaHistogram` is a placeholder whose ``ready()`` polls the event
(``Event.query()``, never blocking) and whose ``value()`` is the :class:`Histogram`.

:func:`reduce_tensor` is device-agnostic, so the CPU tests check its numbers against the
NumPy reduction; ``tests/gpu/test_histogram_gpu.py`` checks it on CUDA under
``torch.cuda.set_sync_debug_mode("error")``.
"""

from __future__ import annotations

from typing import Any

import torch

from ._histogram_data import BINS, PERCENTILES, Histogram, from_packed
from ._pending import Placeholder
from ._tensors import _host_empty, _record_event

_Q = tuple(q / 100 for q in PERCENTILES)
_INF = float("inf")
_NAN = float("nan")


def check_tensor(key: str, t: Any) -> None:
    """The call's errors, from what the host knows (dtype, numel): never a sync."""
    if t.is_complex() or t.is_quantized:
        raise TypeError(f"log_histogram: tensor for {key!r} has non-real dtype {t.dtype}")
    if t.numel() == 0:
        raise ValueError(f"log_histogram: values for {key!r} are empty (nothing to summarise)")


def reduce_tensor(t: Any) -> Any:
    """The packed reduction of ``t`` (see ``_histogram.from_packed``), on ``t``'s device."""
    x = t.detach().reshape(-1)
    if x.dtype != torch.float64 and not (x.is_floating_point() and x.element_size() >= 4):
        # ints (exact in float64), bool, float16/bfloat16 (float32 is enough)
        x = x.to(torch.float64 if not x.is_floating_point() else torch.float32)
    numel = x.numel()
    dev = x.device
    finite = torch.isfinite(x)
    n = finite.sum()
    lo = torch.where(finite, x, _INF).amin()
    hi = torch.where(finite, x, -_INF).amax()
    zeroed = torch.where(finite, x, 0.0).to(torch.float64)
    total = zeroed.sum()
    squares = (zeroed * zeroed).sum()
    # buckets: width 0 (one value) or no finite values put everything in bucket 0
    width = hi - lo
    scale = torch.where(width > 0, BINS / width, 0.0)
    pos = (torch.where(finite, x, lo) - lo) * scale
    idx = torch.nan_to_num(pos, nan=0.0, posinf=0.0, neginf=0.0).clamp_(0, BINS - 1).long()
    counts = torch.zeros(BINS, dtype=torch.float64, device=dev)
    counts.scatter_add_(0, idx, finite.to(torch.float64))
    # percentiles over the sorted finite values (NaN sorts last)
    ordered = torch.sort(torch.where(finite, x, _NAN)).values.to(torch.float64)
    last = (n - 1).clamp_(min=0)
    last_f = last.to(torch.float64)  # (an int64 tensor times a float would be float32)
    where_q = torch.stack([last_f * q for q in _Q])
    below = where_q.floor()
    frac = where_q - below
    i_lo = below.long()
    i_hi = torch.minimum(i_lo + 1, last)
    v_lo = ordered.gather(0, i_lo)
    v_hi = ordered.gather(0, i_hi)
    pct = v_lo + (v_hi - v_lo) * frac
    head = torch.stack(
        [
            torch.full((), float(numel), dtype=torch.float64, device=dev),
            n.to(torch.float64),
            lo.to(torch.float64),
            hi.to(torch.float64),
            total,
            squares,
        ]
    )
    return torch.cat([head, pct, counts])


class CudaHistogram(Placeholder):
    """One CUDA tensor's reduction on its way to pinned host memory."""

    __slots__ = ("event", "host", "result", "tag")

    def __init__(self, tag: str, t: Any) -> None:
        self.tag = tag
        self.result: Histogram | None = None
        packed = reduce_tensor(t)
        host = _host_empty(packed.shape, packed.dtype)
        host.copy_(packed, non_blocking=True)
        self.host: Any = host
        self.event: Any = _record_event(t.get_device())

    def ready(self) -> bool:
        if self.result is not None:
            return True
        if not self.event.query():
            return False
        self.result = from_packed(self.tag, self.host.tolist())
        self.host = self.event = None  # give the pinned buffer and the event back
        return True

    def value(self) -> Histogram:
        if self.result is None:
            raise RuntimeError("aoff: CUDA histogram read before its copy completed")
        return self.result

    def __repr__(self) -> str:
        return f"<aoff pending CUDA histogram {self.tag!r}>"


def capture_cuda(key: str, t: Any) -> CudaHistogram:
    check_tensor(key, t)
    return CudaHistogram(key, t)
