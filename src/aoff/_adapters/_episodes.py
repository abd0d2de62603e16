"""``aoff.torch.EpisodeStats``: per-environment episode bookkeeping that stays on the device.

Why: a GPU-simulated loop steps thousands of environments a call, and the usual
bookkeeping (rsl_rl's ``Logger.process_env_step``, skrl's trackers) finds the finished
episodes with a ``nonzero`` and copies them with ``.cpu()`` every env step: a host sync
that stalls the device queue. Here :meth:`EpisodeStats.update` only enqueues device work
of a fixed shape (no data-dependent size, no read), and :meth:`EpisodeStats.log_to`
copies what an iteration recorded to the host once, without waiting (pinned memory, a
non-blocking copy and a CUDA event, as ``_core/_tensors.py`` does for values); the
finished episodes are picked out of that copy where the events are drained, off the
training thread.

What each update keeps
    the running return (float32, as rsl_rl's) and length of every environment, and a
    row per env step: each environment's return and length as they stand after the step,
    and whether its episode ended (``terminated | truncated``). Rows wait on the device
    until ``log_to``; at most ``max_steps`` of them (then ``update`` raises, naming
    ``log_to``: a loop that never hands them over would fill the device's memory).

What reaches the run (``log_to``)
    the episodes that ended since the last ``log_to``, in the order they ended (step by
    step, environments in index order), exactly as :meth:`aoff.OffPolicyLogger.log_episodes`
    would take them: the next ``log_step``'s record gets ``episode/return`` (the mean
    return), ``episode/length`` and ``episode/count``, the dashboard's reward and episode
    length follow; and, where there was at least one, their returns' distribution as the
    histogram ``episode/returns`` (buckets where the backend takes them, ``/min``,
    ``/max``, ``/mean``, percentiles as scalars everywhere).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._core import _events as ev
from .._core._pending import PendingEvent, Placeholder

__all__ = ["HISTOGRAM_TAG", "EpisodeRows", "EpisodeStats"]

#: the histogram of the returns of the episodes that ended before a step
HISTOGRAM_TAG = "episode/returns"


def _positive(name: str, value: object) -> int:
    if type(value) is not int:
        raise TypeError(f"EpisodeStats: {name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"EpisodeStats: {name} must be at least 1, got {value}")
    return value


def _logger(target: Any) -> Any:
    """The aoff logger behind ``target``: a logger itself, or a writer's engine."""
    engine = getattr(target, "_engine", target)
    if not callable(getattr(engine, "_put", None)) or not callable(getattr(engine, "_clock", None)):
        raise TypeError(
            "EpisodeStats.log_to: expected an aoff logger (OffPolicyLogger, "
            f"AsyncOffPolicyLogger, RemoteLogger), got {type(target).__name__}"
        )
    return engine


class EpisodeStats:
    """Episode returns and lengths of ``num_envs`` environments, kept on ``device``.

    Call :meth:`update` after every env step and :meth:`log_to` once an iteration, before
    that iteration's ``log_step``. Neither reads a device value. ``returns`` and
    ``lengths`` are the running (unfinished) episodes' values, on the device.
    """

    def __init__(
        self, num_envs: int, device: str | torch.device = "cpu", *, max_steps: int = 4096
    ) -> None:
        self.num_envs = _positive("num_envs", num_envs)
        self.max_steps = _positive("max_steps", max_steps)
        self.returns = torch.zeros(num_envs, dtype=torch.float32, device=device)
        self.lengths = torch.zeros(num_envs, dtype=torch.int64, device=device)
        self.device = self.returns.device
        self._zeros = (self.returns.new_zeros(()), self.lengths.new_zeros(()))
        # the rows since the last log_to: returns, lengths and done flags, one row a step,
        # written in place into buffers that grow (doubling) to the longest iteration
        # seen and are then reused: no allocation a step once an iteration has run
        self._k = 0
        self._rows: tuple[Any, Any, Any] = self._buffers(min(8, max_steps))
        self._spares: list[tuple[Any, Any, Any]] = []

    def _buffers(self, capacity: int) -> tuple[Any, Any, Any]:
        self._capacity = capacity  # the rows a set holds (every set has one size)
        n, dev = self.num_envs, self.device
        return (
            torch.empty((capacity, n), dtype=torch.float32, device=dev),
            torch.empty((capacity, n), dtype=torch.int64, device=dev),
            torch.empty((capacity, n), dtype=torch.bool, device=dev),
        )

    def _grow(self) -> None:
        capacity = self._capacity
        if capacity >= self.max_steps:
            raise RuntimeError(
                f"EpisodeStats: {self.max_steps} env steps recorded since the last log_to(); "
                "call stats.log_to(logger) once an iteration (or raise max_steps=)"
            )
        bigger = self._buffers(min(2 * capacity, self.max_steps))
        for old, new in zip(self._rows, bigger, strict=True):
            new[:capacity].copy_(old)  # a device copy, ordered on the stream: no wait
        self._rows = bigger
        self._spares.clear()  # of the old size

    def _checked(self, name: str, t: Any) -> Any:
        """``t`` as a flat tensor of this object's size and device (metadata only)."""
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"EpisodeStats.update: {name} must be a tensor, got {type(t).__name__}")
        if t.numel() != self.num_envs:
            raise ValueError(
                f"EpisodeStats.update: {name} has shape {tuple(t.shape)}; "
                f"expected {self.num_envs} values (one per environment)"
            )
        if t.device != self.device:
            raise ValueError(
                f"EpisodeStats.update: {name} is on {t.device}, the statistics on {self.device}"
            )
        if t.is_complex():
            raise TypeError(f"EpisodeStats.update: {name} is {t.dtype}, not a real dtype")
        return t.detach().reshape(-1)

    def update(self, rewards: Any, terminated: Any, truncated: Any = None) -> None:
        """One env step: ``rewards`` of every environment, and which episodes ended
        (``terminated``, ``truncated``: bool or numeric tensors, non-zero is done;
        ``truncated=None`` when ``terminated`` already says both, as rsl_rl's ``dones``).

        Enqueues five or six element-wise device ops writing into buffers it owns;
        reads nothing back."""
        r = self._checked("rewards", rewards)
        term = self._checked("terminated", terminated)
        trunc = None if truncated is None else self._checked("truncated", truncated)
        k = self._k
        if k == self._capacity:
            self._grow()
        rows = self._rows
        returns, lengths, done = rows[0][k], rows[1][k], rows[2][k]
        torch.ne(term, 0, out=done)
        if trunc is not None:
            done.logical_or_(trunc)
        torch.add(self.returns, r, out=returns)
        torch.add(self.lengths, 1, out=lengths)
        torch.where(done, self._zeros[0], returns, out=self.returns)
        torch.where(done, self._zeros[1], lengths, out=self.lengths)
        self._k = k + 1

    def take(self) -> EpisodeRows:
        """The rows since the last ``take``/``log_to``, on their way to the host (for an
        adapter that writes them itself; ``log_to`` is this plus two events)."""
        k, self._k = self._k, 0
        buffers = self._rows
        on_device = self.device.type == "cuda"
        if k and not on_device:
            # handed over as they are (the values' one copy): the next rows go into a
            # spare set, which the copy gives back once read (so two or three sets
            # take turns, whatever the number of iterations)
            while self._spares:
                spare = self._spares.pop()
                if spare[0].shape[0] == self._capacity:  # not a set from before a _grow
                    break
            else:
                spare = self._buffers(self._capacity)
            self._rows = spare
        return EpisodeRows(buffers, k, None if on_device else self._spares.append)

    def log_to(self, logger: Any) -> Any:
        """Hand the episodes that ended since the last call to ``logger`` (an aoff
        logger, sync or async, or a :class:`~aoff.RemoteLogger`): they join its next
        ``log_step``. Launches one device-to-host copy per kind of row and returns at once
        (what the logger's calls return: ``None``, or an awaitable for the async face)."""
        log = _logger(logger)
        copy = self.take()
        wall = log._clock()
        episodes = (ev.EPISODES, wall, _Returns(copy), _Lengths(copy))
        first = log._put(PendingEvent(episodes, (copy,)))
        if hasattr(first, "close"):  # the async face's wait for room: the last call's
            first.close()
        histogram = (ev.HISTOGRAM, wall, HISTOGRAM_TAG, _ReturnsArray(copy))
        return log._put(PendingEvent(histogram, (copy,)))


class EpisodeRows(Placeholder):
    """An iteration's rows, copied to the host without waiting; read once landed."""

    __slots__ = ("_back", "_buffers", "_event", "_host", "_picked")

    def __init__(
        self,
        buffers: tuple[Any, Any, Any],
        k: int,
        give_back: Callable[[tuple[Any, Any, Any]], None] | None,
    ) -> None:
        """The first ``k`` rows of ``buffers``; a CPU copy reads the buffers themselves
        and hands them to ``give_back`` once read."""
        self._picked: tuple[Any, Any] | None = None
        self._event: Any = None
        self._back: Callable[[tuple[Any, Any, Any]], None] | None = None
        self._buffers: tuple[Any, Any, Any] | None = None
        self._host: tuple[Any, ...] = ()
        if not k:
            return
        rows = tuple(b[:k] for b in buffers)
        if give_back is None:  # a CUDA device: pinned copies, in order on the stream
            hosts = []
            for t in rows:
                host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
                host.copy_(t, non_blocking=True)  # before the next update overwrites t
                hosts.append(host)
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record(torch.cuda.current_stream(rows[0].device))
            self._event = event
            self._host = tuple(hosts)
        else:
            self._host = rows
            self._back = give_back
            self._buffers = buffers

    def ready(self) -> bool:
        return self._event is None or bool(self._event.query())

    def value(self) -> tuple[Any, Any]:
        """The finished episodes' returns (float64) and lengths (int64), NumPy, in order."""
        if self._picked is None:
            import numpy as np

            if not self._host:
                self._picked = (np.zeros(0), np.zeros(0, dtype=np.int64))
            else:
                returns, lengths, done = (h.numpy() for h in self._host)
                self._picked = (returns[done].astype(np.float64), lengths[done])
            self._host = ()
            self._event = None
            if self._back is not None and self._buffers is not None:
                self._back(self._buffers)  # the selections above are copies
                self._back = self._buffers = None
        return self._picked


class _Returns(Placeholder):
    """The returns of an iteration's finished episodes, as ``log_episodes`` takes them."""

    __slots__ = ("copy",)

    def __init__(self, copy: EpisodeRows) -> None:
        self.copy = copy

    def ready(self) -> bool:
        return self.copy.ready()

    def value(self) -> tuple[float, ...]:
        return tuple(self.copy.value()[0].tolist())


class _Lengths(_Returns):
    """Their lengths."""

    __slots__ = ()

    def value(self) -> tuple[float, ...]:
        return tuple(self.copy.value()[1].tolist())


class _ReturnsArray(_Returns):
    """Their returns for the histogram: ``None`` when no episode ended (no histogram)."""

    __slots__ = ()

    def value(self) -> Any:
        returns = self.copy.value()[0]
        return returns if returns.size else None
