"""``log.remote()``: a small picklable logger for other processes that log into the run.

Why its own object: a collector process (spawned, forkserver'd or forked) must not
start a run of its own; it sends its events to the run's pump, wherever that runs (the
agent, or the training process in thread mode), over the run folder's socket (see
``_channel/_produce.py``: Unix socket 0600, the run's key proven both ways, so nothing
without the key can inject events).

A :class:`RemoteLogger` holds only the run folder, its name and its buffer's bound and
policy (a :class:`~aoff._channel._sender.Spec`), so it pickles into any process; the
hot path, pickling, the fork rule and ``flush``/``close`` are the shared producer
logger's (``_producer.py``), over the socket's sender. In the process that logs, the
first call starts (lazily, and again in a forked copy: the process id decides) an event
buffer and one daemon thread that connects, retrying while the run's server is not up yet (events
wait in the buffer), and then drives the agent's own
:class:`~aoff._transport._shipper.Shipper` over a non-blocking
:class:`~aoff._transport._wire.Link`. Logging calls never block (unless ``overflow="block"``
was chosen) and never raise for the run's sake: if the run is gone, refused this
producer, or cannot be reached within ``timeout``, events are dropped and counted, and
:meth:`RemoteLogger.close` says so in its :class:`RemoteReport`.

A call whose values cannot be pickled is a ``TypeError`` naming its key; after
:meth:`RemoteLogger.close` every call is a ``RuntimeError``.

One object used from several processes at once: each process starts its own connection
(the process id decides); the run names the second one connected under a taken name
``<name>-<pid>``, so each keeps its own records and its own order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import ClassVar

from .._channel._producers import check_name
from .._channel._sender import Conn, Spec
from .._channel._sending import RemoteReport
from .._core._buffer import DEFAULT_CAPACITY, EventBuffer, Overflow
from .._core._rules import Rule, check_rules
from .._media._calls import DEFAULT_MEDIA_BUDGET, check_media_budget
from ._producer import ProducerLogger

__all__ = ["RemoteLogger", "RemoteReport"]

#: seconds a new producer keeps trying to reach the run (its server may not be up yet),
#: and the most ``flush()``/``close()`` wait
DEFAULT_TIMEOUT = 10.0


class RemoteLogger(ProducerLogger):
    """A logger for another process that logs into this run (``log.remote(name)``).

    Every logging method of :class:`~aoff.OffPolicyLogger`; calls return at once.
    Picklable; usable as ``with``/``async with``. See the module's doc and the "Many producers"
    guide (docs/guides/producers.md) for what the run makes of a producer's calls.

    ``rules``: rules of this producer's own (:mod:`aoff.rules`), added to the run it
    joins and judged there, on this producer's events only, from its first (``stalled``:
    this producer silent). Their alerts are the run's, like any other: its
    ``alerts.jsonl``, dashboard and report, the learner's ``log.alerts``, and with
    ``stop=True`` the learner's ``log.should_stop`` (the learner's loop decides; it
    tells its producers as it always does). Without them (None or ``[]``) the run's own
    rules still watch this producer's steps, as they watch every step.
    """

    _noun: ClassVar[str] = "RemoteLogger"
    _again: ClassVar[str] = "log.remote()"
    _close_at_exit: ClassVar[bool] = True
    _settings: Spec
    _sender: Conn | None

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        name: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        overflow: Overflow = "drop_oldest",
        timeout: float = DEFAULT_TIMEOUT,
        owner_pid: int | None = None,
        media_budget: int = DEFAULT_MEDIA_BUDGET,
        rules: Sequence[Rule] | None = None,
    ) -> None:
        problem = check_name(name)
        if problem is not None:
            raise ValueError(problem)
        if not os.fspath(log_dir):
            raise ValueError("RemoteLogger needs the run's log_dir")
        EventBuffer(capacity, overflow)  # checks both now, not in the producer
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0, got {timeout!r}")
        self._settings = Spec(
            os.path.abspath(os.fspath(log_dir)),
            name,
            capacity,
            overflow,
            float(timeout),
            owner_pid if owner_pid is not None else os.getpid(),
            check_media_budget(media_budget),
            check_rules(rules) if rules is not None else (),
        )
        self._setup()

    def _new_sender(self, on_freed: Callable[[int], object]) -> Conn:
        return Conn(self._settings, self._refresh_capture, on_freed)

    def __repr__(self) -> str:
        return f"RemoteLogger({self._settings.log_dir!r}, {self._settings.name!r})"


RemoteLogger.__module__ = "aoff"
