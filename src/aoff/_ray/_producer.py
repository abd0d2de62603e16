"""The producer's side of a Ray link: :class:`RayLogger` (``link.remote(name)``).

Why its own logger: in a Ray actor or task on another node the run folder's socket is
out of reach; the events go to the hub (``_hub.py``) as Ray actor calls instead. The hot
path is the same as ``log.remote()``'s (the shared :class:`~aoff._core._recorder.Recorder`
builds one tuple and appends it to a bounded :class:`~aoff._core._buffer.EventBuffer`);
one :class:`~aoff._ray._pusher.Pusher` a process (started by the first call, again in a
forked copy) ships the buffer every ``interval`` seconds as one ``push`` call per round
(at most ``batch`` events a call, pickled once), with at most ``max_in_flight`` calls
unanswered. This module names the logger and what it pickles onto other nodes; the hot path,
pickling, the fork rule and ``flush``/``close`` are the shared producer logger's
(``_faces/_producer.py``); ``_pusher`` is the thread, its waits and its accounting.

Backpressure and faults, never blocking the caller (unless ``overflow="block"`` was
chosen): while ``max_in_flight`` calls are unanswered (a slow or unreachable learner)
nothing more is shipped and the buffer's overflow policy applies at ``capacity``, every
drop counted. If the hub is gone (the learner ended or crashed) or refuses this
producer, what is left and what comes later is dropped and counted; :meth:`close` says
so in its :class:`~aoff.RemoteReport`. ``flush()`` and ``close()`` wait at most
``timeout`` (a dead node cannot hold them longer). Every producer also tells the hub it
is alive about once a second (``beat``, answered by the hub's own threads even while
pushes wait), so that a silent producer can be declared lost (see ``_hub.py``).

Media (``log_image``, ``log_video``, ``log_figure``: the shared
:class:`~aoff._media._calls.MediaCalls`, checks and all): as ``log.remote()``'s, the
frames travel as a NumPy copy pickled in the event (no shared memory across nodes), here
in the pusher's batched Ray calls. The link's ``media_budget`` bounds the bytes of frames
this process holds until the hub has taken them; a call over it is refused at once and
counted (a ``MEDIA_REFUSED`` event, the run's ``media_refused``), never a wait. On the
learner's node the hub's ``log.remote(name)`` producer hands them to the run's encoder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from .._channel._producers import check_name
from .._core._rules import Rule, check_rules
from .._faces._producer import ProducerLogger
from ._pusher import LinkSettings, Pusher

__all__ = ["RayLogger"]


@dataclass(frozen=True)
class RaySpec:
    """What a :class:`RayLogger` pickles onto other nodes."""

    link: LinkSettings
    name: str
    rules: tuple[Rule, ...]

    @property
    def media_budget(self) -> int:
        return self.link.media_budget


class RayLogger(ProducerLogger):
    """A logger for a Ray actor or task, on any node, that logs into the run
    (``link.remote(name)``): every logging method of :class:`~aoff.OffPolicyLogger`
    (media included), and ``flush``/``close`` as :class:`~aoff.RemoteLogger`'s. Picklable."""

    _noun: ClassVar[str] = "RayLogger"
    _again: ClassVar[str] = "link.remote()"
    _settings: RaySpec

    def __init__(
        self, link: LinkSettings, name: str, *, rules: Sequence[Rule] | None = None
    ) -> None:
        problem = check_name(name)
        if problem is not None:
            raise ValueError(problem)
        self._settings = RaySpec(link, name, check_rules(rules) if rules is not None else ())
        self._setup()

    def _new_sender(self, on_freed: Callable[[int], object]) -> Pusher:
        s = self._settings
        return Pusher(s.link, s.name, self._refresh_capture, s.rules, on_freed)
