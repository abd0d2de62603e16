"""``probe_remote(r)``: a read-only view of a producer's insides, for tests.

Why: a producer (``log.remote()``'s ``RemoteLogger``, or ``aoff.ray``'s far logger)
keeps its buffer and its connection to the run private, yet the tests of what happens
behind a stuck or gone run must see them (how much waits on the link, when an image
left the buffer). As with :func:`aoff.testing.probe`, this is the one documented place
that reaches in, so a rename of those parts is fixed here, once.

Every property reads the producer *now*; nothing here changes it. Before its first
call a producer has no connection: the counts are 0 and ``connected`` is False.
aoff's own, for its tests: not exported from ``aoff.testing``, may change with any release.
"""

from __future__ import annotations

from typing import Any

from .._faces._producer import ProducerLogger

__all__ = ["RemoteProbe", "probe_remote"]


class RemoteProbe:
    """A live, read-only view of one producer (see :func:`probe_remote`)."""

    def __init__(self, remote: object) -> None:
        if not isinstance(remote, ProducerLogger):
            raise TypeError(
                "probe_remote() takes a RemoteLogger (log.remote()) or an aoff.ray "
                f"producer's logger, not {type(remote).__name__}"
            )
        self._remote: Any = remote

    def _half(self) -> Any:
        """The started half (the sender): a ``RemoteLogger``'s connection, or a Ray
        logger's pusher."""
        return self._remote._sender

    @property
    def started(self) -> bool:
        """Whether the first call started the producer's connection (its thread)."""
        return self._half() is not None

    @property
    def connected(self) -> bool:
        """Whether the producer reached the run and still ships to it (a ``RemoteLogger``:
        connected, neither failed nor saw the run go; a Ray logger: started, its hub not
        gone). A ``RemoteLogger`` that is still looking for the run is not connected."""
        half = self._half()
        if half is None or half.gone or getattr(half, "error", None) is not None:
            return False
        return not hasattr(half, "shipper") or half.shipper is not None

    @property
    def error(self) -> str | None:
        """Why the connection to the run failed or ended (a ``RemoteLogger``), or None."""
        half = self._half()
        return None if half is None else getattr(half, "error", None)

    @property
    def run_gone(self) -> bool:
        """Whether the producer gave up on the run (it closed, died, or never answered):
        from then on its calls are counted as dropped."""
        half = self._half()
        return half is not None and bool(half.gone)

    @property
    def link_pending_bytes(self) -> int:
        """Bytes framed for the run's socket and not yet taken by it (a ``RemoteLogger``;
        0 before it connected). Past ``MAX_PENDING_BYTES`` the shipper stops draining."""
        half = self._half()
        shipper = None if half is None else getattr(half, "shipper", None)
        return 0 if shipper is None else int(shipper.link.pending_out)

    @property
    def buffered(self) -> int:
        """Events in the producer's buffer now."""
        half = self._half()
        return 0 if half is None else len(half.buffer)

    @property
    def buffer_drained(self) -> int:
        """Events taken off the producer's buffer so far (to be sent)."""
        half = self._half()
        return 0 if half is None else int(half.buffer.drained)

    @property
    def buffer_dropped(self) -> int:
        """Events the producer's buffer dropped so far (its overflow policy)."""
        half = self._half()
        return 0 if half is None else int(half.buffer.dropped)

    @property
    def media_in_flight(self) -> int:
        """Bytes of the producer's accepted frames not yet sent or dropped (what its
        ``media_budget`` counts)."""
        return int(self._remote._media_budget.in_flight())


def probe_remote(remote: object) -> RemoteProbe:
    """A live, read-only view of a producer's insides for tests: its connection to the
    run, its buffer and its media bytes. ``remote`` is a ``RemoteLogger`` (from
    ``log.remote()``) or the logger of an ``aoff.ray`` link's ``remote()``."""
    return RemoteProbe(remote)
