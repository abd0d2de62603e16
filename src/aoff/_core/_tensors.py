"""PyTorch tensor values, read without making the training thread wait for a device.

This module imports torch, so it is imported only once torch is already in
``sys.modules`` (see ``_capture.activate``); ``import aoff`` never imports
torch. ``_capture.capture`` calls :func:`capture` for every tensor of one logging call;
``_capture.finish`` calls :meth:`CudaCall.launch` once at the end of a call that had
CUDA tensors.

What a tensor may be
    a 0-d or one-element tensor of any real dtype (float16/bfloat16/float32/float64,
    integer, bool), on any device, with or without ``requires_grad``. In ``log_step``'s
    ``reward`` and its three dicts a tensor may also hold more elements: a per-environment
    vector (any shape, its elements one population), copied once here and reduced in the
    agent (``_vectors.py`` says what it becomes). Anywhere else, and an empty tensor
    anywhere, a tensor with more than one element raises ``ValueError`` in the caller,
    naming the argument and the key (reduce it first, e.g. ``.mean()``).

Vectors
    join the call's capture list like CUDA values, on any device: a CUDA vector is
    copied into pinned host memory with one ``copy_(non_blocking=True)`` (its device's
    event then covers it), a CPU vector is cloned; neither is read here. Whoever
    drains the buffer turns the copy into a :class:`~._vectors.Vector` once the event
    has completed, so the training thread never calls ``.item()``, ``.cpu()``,
    ``.numpy()`` or ``.tolist()`` on one (``tests/test_episode_stats.py`` patches them
    to raise). A vector on another device (MPS, XPU) is read with ``.cpu()``, which
    waits for that device, as its scalars' ``.item()`` does.

CPU tensors
    are read at once with ``.item()``: that touches no device, and it captures the value
    as it is at the time of the call, so a later in-place change (``t.add_(1)``) does not
    change what was logged. ``.item()`` measured ~0.4 us a tensor here, a ``clone()``
    ~2.5 us (plus a conversion later), so the hot path reads CPU tensors immediately.

CUDA tensors
    are gathered per call and read with as few kernel launches as possible: per
    (device, dtype, ndim) group one ``torch.stack`` (a one-element tensor of a given ndim
    always has the shape ``(1,) * ndim``, so no per-tensor reshape is needed; a group of
    one tensor is copied directly) and one ``copy_(non_blocking=True)`` into pinned host
    memory, then one CUDA event per device recorded on that device's current stream.
    Everything is enqueued on the stream that would run the caller's next kernel, so an
    in-place change made after the call is ordered after the copy, and nothing waits.
    The call's values become :class:`CudaValue` placeholders; the pump folds the event only
    once every event of the call reports completion (``Event.query()``, which never
    blocks), then reads the pinned buffers with ``tolist()`` (exact: each group keeps its
    own dtype, so int64 counters and bfloat16 values convert exactly).

    Costs: the training thread pays the Python side only (~2 us a tensor on this
    project's slow 2-core CPU, simulated with CPU tensors: defer, group, one stack, one
    copy); no call waits for queued GPU work. Values reach the dashboard and backends up
    to one pump tick (<= 50 ms) after the copy lands. ``flush()`` waits for pending
    copies; ``finish()``/``aclose()`` wait at most ``finish_timeout`` for them, then drop
    the events still waiting and count them in ``FinishReport.dropped_events``. A
    ``ready()`` that raises (a CUDA error surfacing in ``Event.query()``) drops that
    event only, reported once. The pinned buffers come from PyTorch's caching host
    allocator (a few bytes a call) and are released once read.

    Caveats: the copies run on the *current* stream, like any op on those tensors, so a
    value produced on a side stream needs the usual ``wait_stream`` first; and logging
    inside CUDA-graph capture would capture the copies too (log outside the graph).

Other devices (MPS, XPU, ...)
    fall back to ``.item()``, which waits for that device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ._arguments import W_COMPONENTS, W_METRICS, W_REWARD_METRICS
from ._pending import Placeholder
from ._vectors import Vector

if TYPE_CHECKING:
    from ._pending import Gather

#: a group: (tensors, their slots in the call), keyed by (device index, dtype, ndim)
Group = tuple[list[Any], list[int]]

#: the arguments whose values may be per-environment vectors (a dict's name, or
#: (call, argument) for a scalar argument)
_VECTOR_DICTS = frozenset((W_METRICS, W_REWARD_METRICS, W_COMPONENTS))
_VECTOR_SCALARS = frozenset((("log_step", "reward"),))


def capture(g: Gather, t: Any, where: str, key: object) -> Any:
    """Capture one tensor of the call ``g``: a number now, or a :class:`CudaValue`."""
    n = t.numel()
    if n != 1:
        if n and (where in _VECTOR_DICTS or (where, key) in _VECTOR_SCALARS):
            return defer_vector(g, t, where, key)
        extra = " (per-env vectors: log_step's reward and dicts)" if n else ""
        raise ValueError(
            f"{where}: tensor for {key!r} has shape {tuple(t.shape)}; "
            f"log a 0-d or one-element tensor (reduce it first, e.g. .mean()){extra}"
        )
    if not t.is_cuda:
        return read_now(t)
    return defer(g, t)


def defer_vector(g: Gather, t: Any, where: str, key: object) -> CudaValue:
    """Add a per-environment vector to the call's capture list ``g``; its placeholder."""
    if t.is_complex():
        raise TypeError(f"{where}: tensor for {key!r} is {t.dtype}, not a real dtype")
    return defer(g, t)


def defer(g: Gather, t: Any) -> CudaValue:
    """Add a one-element tensor to the call's capture list ``g``; its placeholder."""
    if t.requires_grad:
        t = t.detach()  # cheaper than a no_grad() block around the stack (~0.8 vs ~4 us)
    if g:
        call = g[0]
    else:
        call = CudaCall()
        g.append(call)
    g.append(t)
    return CudaValue(call, len(g) - 2)


def read_now(value: Any) -> Any:
    """Read a one-element non-CUDA tensor now (a Python float, int or bool)."""
    try:
        return value.item()
    except RuntimeError:  # e.g. a meta tensor: the pump reports it, like any non-number
        return value


def _host_empty(shape: Any, dtype: Any) -> Any:
    """Page-locked host memory, so the device-to-host copy can be asynchronous."""
    return torch.empty(shape, dtype=dtype, pin_memory=True)


def _record_event(device: int) -> Any:
    """A CUDA event recorded on ``device``'s current stream (after the copies)."""
    event = torch.cuda.Event()  # type: ignore[no-untyped-call]
    event.record(torch.cuda.current_stream(device))
    return event


#: marks a copy's slots as one vector's (its own slot, then this)
_VECTOR = -1


class CudaCall:
    """The pending device-to-host copies of one logging call."""

    __slots__ = ("copies", "events", "n", "values")

    def __init__(self) -> None:
        self.copies: list[tuple[Any, list[int]]] = []  # (pinned host tensor, slots)
        self.events: list[Any] = []
        self.values: list[Any] | None = None
        self.n = 0

    def launch(self, tensors: list[Any]) -> None:
        """Enqueue one stack and one asynchronous copy per group, one event per device;
        a vector is copied alone (see the module's docstring)."""
        groups: dict[Any, Group] = {}
        devices: list[int] = []
        for slot, t in enumerate(tensors):
            if t.numel() != 1:
                self._copy_vector(slot, t, devices)
                continue
            k = (t.get_device(), t.dtype, t.dim())
            group = groups.get(k)
            if group is None:
                group = groups[k] = ([], [])
            group[0].append(t)
            group[1].append(slot)
        for (device, _dtype, _ndim), (ts, slots) in groups.items():
            src = torch.stack(ts) if len(ts) > 1 else ts[0]
            host = _host_empty(src.shape, src.dtype)
            host.copy_(src, non_blocking=True)
            self.copies.append((host, slots))
            if device not in devices:
                devices.append(device)
        self.events = [_record_event(d) for d in devices]
        self.n = len(tensors)

    def _copy_vector(self, slot: int, t: Any, devices: list[int]) -> None:
        """One vector's copy: pinned and non-blocking from a device, a clone on the CPU."""
        flat = t.detach().reshape(-1)
        if t.is_cuda:
            host = _host_empty(flat.shape, flat.dtype)
            host.copy_(flat, non_blocking=True)
            device = t.get_device()
            if device not in devices:
                devices.append(device)
        elif flat.device.type == "cpu":
            host = flat.clone()
        else:  # MPS, XPU, ...: read now, which waits for that device (as .item() does)
            host = flat.cpu()
        self.copies.append((host, [slot, _VECTOR]))

    def ready(self) -> bool:
        """True once every copy has landed (never blocks); then the values are read."""
        if self.values is not None:
            return True
        for event in self.events:
            if not event.query():
                return False
        values: list[Any] = [None] * self.n
        for host, slots in self.copies:
            if len(slots) == 2 and slots[1] == _VECTOR:
                values[slots[0]] = Vector(host.to(torch.float64).numpy())
                continue
            for slot, v in zip(slots, host.reshape(-1).tolist(), strict=True):
                values[slot] = v
        self.values = values
        self.copies = []  # give the pinned buffers and events back
        self.events = []
        return True


class CudaValue(Placeholder):
    """One value of a :class:`CudaCall`, known once the call's copies have landed."""

    __slots__ = ("call", "slot")

    def __init__(self, call: CudaCall, slot: int) -> None:
        self.call = call
        self.slot = slot

    def ready(self) -> bool:
        return self.call.ready()

    def value(self) -> Any:
        values = self.call.values
        if values is None:
            raise RuntimeError("aoff: CUDA value read before its copy completed")
        return values[self.slot]

    def __repr__(self) -> str:
        return f"<aoff pending CUDA value #{self.slot}>"
