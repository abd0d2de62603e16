"""What a producer logger asks of whatever ships its events, and the report it ends with.

Why apart: a producer in another process logs through one logger
(``_faces/_producer.py``) whether its events go over the run folder's socket
(:class:`~aoff._channel._sender.Conn`, ``log.remote()``) or as Ray calls to the run's hub
(``_ray/_pusher.py``, ``link.remote()``). Both shippers implement :class:`Sender`; the
logger's hot path, fork rule, pickling and close are written once over it. It sits in
``_channel`` because the socket's sender, below the faces, builds the report.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from .._core._buffer import EventBuffer
from .._media._freed import FreedBytes

__all__ = ["RemoteReport", "Sender"]


@dataclass
class RemoteReport:
    """What :meth:`RemoteLogger.close` returns.

    ``sent``: events handed to the run; ``dropped``: events that never reached it (the
    buffer's overflow policy, or the run was gone, refused this producer, or could not be
    reached: ``error`` says which); ``received``: events the run confirmed, ``None`` when
    it could not confirm (no connection, or lost before the end); ``name``: the name the
    run knows this producer by.
    """

    name: str
    sent: int = 0
    dropped: int = 0
    received: int | None = None
    error: str | None = None

    @property
    def complete(self) -> bool:
        """True when the run confirmed every event this producer sent, none was dropped
        and no error came."""
        return not self.dropped and self.error is None and self.received == self.sent


RemoteReport.__module__ = "aoff"


class Sender(Protocol):
    """One process's buffer and shipping thread behind a producer logger.

    The logger appends to ``buffer`` (``offer`` for a ``MEDIA`` event, whose bytes
    ``freed`` counts back as they leave); once ``gone`` (the run ended, refused the
    producer or could not be reached) it counts each later event on ``late`` instead.
    """

    @property
    def buffer(self) -> EventBuffer: ...
    @property
    def freed(self) -> FreedBytes: ...
    @property
    def late(self) -> Iterator[int]: ...
    @property
    def gone(self) -> bool: ...

    def start(self) -> None:
        """Start the shipping thread."""

    def flush(self) -> None:
        """Wait (bounded by the producer's timeout) until the run has what was logged."""

    def finish(self) -> RemoteReport:
        """Ship what is left, wait (bounded) for the run's word, and say what reached it."""
