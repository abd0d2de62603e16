"""A CUDA tensor's frames: copied to pinned host memory without a sync, like log_histogram.

The call starts a ``non_blocking`` copy into page-locked memory and records a CUDA event
after it on the current stream; the event is a :class:`Placeholder` that whoever drains
the buffer polls (``Event.query()``, never blocking). When it is ready, :meth:`value`
gives the frames: in process mode copied into a shared-memory block (by the shipper's
round, off the training thread's call), in thread mode the pinned buffer itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._core._pending import Placeholder
from .._core._tensors import _host_empty, _record_event

if TYPE_CHECKING:
    from ._shm import ShmPool

__all__ = ["CudaFrames"]


class CudaFrames(Placeholder):
    __slots__ = ("dtype_name", "event", "host", "nbytes", "pool", "result")

    def __init__(self, t: Any, *, pool: ShmPool | None) -> None:
        import torch

        src = t.detach()
        if src.dtype not in (torch.uint8, torch.float32, torch.float64, torch.float16):
            src = src.to(torch.float32)  # on the device, queued like the copy
        host = _host_empty(src.shape, src.dtype)
        host.copy_(src, non_blocking=True)
        self.host: Any = host
        self.event: Any = _record_event(t.get_device())
        self.pool = pool
        self.result: Any = None
        self.dtype_name = str(host.numpy().dtype)
        self.nbytes = int(host.numel() * host.element_size())

    def ready(self) -> bool:
        if self.result is not None:
            return True
        if not self.event.query():
            return False
        arr = self.host.numpy()
        handle = self.pool.put(arr) if self.pool is not None else None
        if handle is not None:
            self.result = handle
            self.host = None  # give the pinned buffer back
        else:
            self.result = arr  # the pinned buffer is ours: no second copy
        self.event = None
        return True

    def value(self) -> Any:
        if self.result is None:
            raise RuntimeError("aoff: CUDA frames read before their copy completed")
        return self.result

    def __repr__(self) -> str:
        return "<aoff pending CUDA frames>"
