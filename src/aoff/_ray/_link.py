"""``aoff.ray.serve(log)``: start the hub on the learner's node and hand out a link.

Why a link object: Ray actors and tasks get their arguments pickled, possibly onto
other nodes; :class:`RayLink` is small (the hub's actor handle and the producers'
settings) and pickles anywhere in the cluster, and ``link.remote(name)`` makes a
:class:`~aoff._ray._producer.RayLogger` where it is called. The hub is pinned to the
node this runs on (a hard node-affinity strategy: it must reach the run folder's Unix
socket) and takes no CPU from the cluster's count (``num_cpus=0``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._core._buffer import Overflow
from .._core._rules import Rule
from .._media._calls import DEFAULT_MEDIA_BUDGET, check_media_budget
from ._hub import Hub, HubSpec
from ._producer import RayLogger
from ._pusher import BEAT_INTERVAL

__all__ = ["RayLink", "serve"]

#: threads of the hub's ``ctl`` group (flush, close, beat): producers closing at once
CTL_THREADS = 16


@dataclass(frozen=True)
class RayLink:
    """The picklable handle :func:`serve` returns; ``link.remote(name)`` in any Ray
    actor or task gives a logger with the methods of ``log.remote(name)``.

    ``hub``: the hub actor's handle. The producers' settings: ``capacity`` and
    ``overflow`` (their buffer, as the learner's logger), ``timeout`` (the most
    ``flush()``/``close()`` wait), ``interval`` (seconds between shipping rounds),
    ``batch`` (events a call at most), ``max_in_flight`` (calls unanswered at most) and
    ``media_budget`` (bytes of frames a producer holds until the hub has taken them; a
    media call over it is refused and counted).
    """

    hub: Any
    capacity: int
    overflow: Overflow
    timeout: float
    interval: float
    batch: int
    max_in_flight: int
    media_budget: int = DEFAULT_MEDIA_BUDGET

    def remote(self, name: str, *, rules: Sequence[Rule] | None = None) -> RayLogger:
        """A logger named ``name`` for this process (a Ray actor or task on any node).
        ``rules``: its own, judged in the learner's run on its events only, as
        ``log.remote(name, rules=...)``'s (:class:`~aoff.RemoteLogger`)."""
        return RayLogger(self, name, rules=rules)

    def lost(self) -> list[tuple[str, int]]:
        """``(name, events handed over)`` for each producer the hub declared lost so far
        (its actor killed or its node gone); waits for the hub's answer."""
        import ray

        result: list[tuple[str, int]] = ray.get(
            self.hub.lost_producers.options(concurrency_group="ctl").remote()
        )
        return result


RayLink.__module__ = "aoff.ray"


def serve(
    log: Any,
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    batch: int = 4096,
    max_in_flight: int = 4,
    lost_after: float = 10.0,
    media_budget: int | None = None,
) -> RayLink:
    """Start the hub for ``log`` (an :class:`~aoff.OffPolicyLogger` or
    :class:`~aoff.AsyncOffPolicyLogger` with a ``log_dir``) on this node and return the
    :class:`RayLink` to pass to Ray actors and tasks. Call it after ``ray.init()``.

    ``lost_after``: seconds without a word from a producer (it says it is alive every
    second) after which the hub declares it lost and the run reports it (at least 2).
    ``media_budget``: each producer's (bytes of frames; ``None``: the learner's logger's).
    The other arguments are :class:`RayLink`'s. Waits for the hub to start (a clear
    error if it cannot, e.g. aoff is not importable on the cluster's workers).
    """
    import ray

    if not ray.is_initialized():
        raise RuntimeError("aoff.ray.serve() needs a Ray cluster: call ray.init() first")
    _check(timeout, interval, lost_after, batch, max_in_flight)
    if media_budget is None:
        options = getattr(log, "_options", None)
        media_budget = getattr(options, "media_budget", DEFAULT_MEDIA_BUDGET)
    media_budget = check_media_budget(media_budget)
    proto = log.remote("ray-hub", timeout=timeout)  # checks log_dir and that log is open
    spec = proto._settings
    hub_spec = HubSpec(
        spec.log_dir, spec.capacity, spec.overflow, float(timeout), os.getpid(), float(lost_after)
    )
    hub = _start_hub(hub_spec)
    return RayLink(
        hub,
        spec.capacity,
        spec.overflow,
        float(timeout),
        interval,
        batch,
        max_in_flight,
        media_budget,
    )


def _check(
    timeout: float, interval: float, lost_after: float, batch: int, max_in_flight: int
) -> None:
    """A ``ValueError`` naming the first of :func:`serve`'s arguments that is out of range."""
    for what, value in (("timeout", timeout), ("interval", interval), ("lost_after", lost_after)):
        if not value > 0:
            raise ValueError(f"{what} must be > 0, got {value!r}")
    if lost_after < 2 * BEAT_INTERVAL:
        raise ValueError(
            f"lost_after must be >= {2 * BEAT_INTERVAL:g}s (producers say they are alive "
            f"every {BEAT_INTERVAL:g}s), got {lost_after!r}"
        )
    for what, n in (("batch", batch), ("max_in_flight", max_in_flight)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{what} must be a positive int, got {n!r}")


def _start_hub(hub_spec: HubSpec) -> Any:
    """The hub actor, pinned to this node (it must reach the run folder's socket) and
    taking no CPU of the cluster's count, once it answers."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    decorate: Any = ray.remote  # its typed overloads lack concurrency_groups
    actor = decorate(
        num_cpus=0,
        max_restarts=0,
        concurrency_groups={"ctl": CTL_THREADS},
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    )(Hub)
    hub = actor.remote(hub_spec)
    ray.get(hub.ping.remote(), timeout=120)
    return hub
