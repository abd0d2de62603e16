"""The wire between the training process and the agent: framed pickles on a socket.

Frames are ``multiprocessing.connection``'s (a 4-byte big-endian length, then the
payload), so the agent reads them with a plain blocking ``Connection`` while the
training process writes them without ever blocking (a non-blocking socket and an
outgoing byte buffer, drained by whoever drives the shipper: a thread or an anyio task).

Each frame holds one message of ``_messages.py`` (the same frames carry a producer's
events to a run, after the channel's handshake).
"""

from __future__ import annotations

import itertools
import signal
import socket
import struct
from collections import deque
from collections.abc import Callable
from typing import Any

_LEN = struct.Struct("!i")
#: what the agent ignores (``_agent/_serve.main``): Ctrl+C and a supervisor's SIGTERM reach
#: the whole process group. The training process starts it with both blocked
#: (``_faces/_spawn``), the agent unblocks them once it ignores them.
AGENT_IGNORES = (signal.SIGINT, signal.SIGTERM)
#: stop taking new events while this many bytes wait for the socket (backpressure)
MAX_PENDING_BYTES = 8 << 20
#: the socket's send buffer the training process asks for (``SO_SNDBUF``; the kernel caps
#: it at ``net.core.wmem_max``, 208 KiB by default on Linux, and doubles it). Each
#: shipping round moves at most this much into the socket, and with several threads
#: logging flat out a round waits for the GIL: with the default 208 KiB, 4 threads of
#: the standard workload flat out lost 35,000-107,000 of 400,000 events (the agent
#: keeping up, its backlog half empty), with 4 MiB 0-460 (``bench_agent_cpu.py``)
#: The sync face's only: see ``_faces/_spawn.start_agent`` for why not the async face's
SEND_BUFFER_BYTES = 4 << 20
#: frames one ``sendmsg`` carries at most (Linux's ``IOV_MAX`` is 1,024)
SEND_FRAMES = 64


class AgentGone(Exception):
    """The agent closed its end (it exited or was killed)."""


class Link:
    """One end of the socket pair, non-blocking, with framed send and receive buffers.

    Each queued frame keeps its ``meta`` (the events it carries) until the kernel has
    taken the whole frame: if the agent goes away, :meth:`unsent` gives back exactly the
    events that were never handed over, so the in-process fallback can fold them.
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self._out: deque[tuple[memoryview, Any]] = deque()
        self._offset = 0  # bytes of the first frame already sent
        self.pending_out = 0
        self._in = bytearray()
        self._gone: str | None = None  # end of file seen: why
        self.closed = False
        self.on_sent: Callable[[Any], None] | None = None

    def queue(self, payload: bytes, meta: Any = None) -> None:
        frame = memoryview(_LEN.pack(len(payload)) + payload)
        self._out.append((frame, meta))
        self.pending_out += len(frame)

    def send_some(self, limit: int | None = None) -> bool:
        """Write what the socket takes now, or about ``limit`` bytes of it (whole frames,
        at least one); raise :class:`AgentGone` if it is closed. True when it stopped at
        ``limit`` with frames left (more could go now), False otherwise.

        Up to ``SEND_FRAMES`` frames go in one ``sendmsg``: a producer ships small frames
        (a bounded slice of events each, ``_faces/_cadence.py``) and sends them together,
        where one ``send`` a frame cost ~6 us each on the test machine."""
        out = self._out
        budget = limit
        while out:
            if budget is not None and budget <= 0:
                return True
            views: list[memoryview] = []
            total = 0
            for frame, _ in itertools.islice(out, SEND_FRAMES):
                view = frame[self._offset :] if not views else frame
                views.append(view)
                total += len(view)
                if budget is not None and total >= budget:
                    break
            try:
                n = self.sock.sendmsg(views)
            except BlockingIOError:
                return False
            except OSError as exc:  # EPIPE, ECONNRESET
                raise AgentGone(str(exc)) from None
            self.pending_out -= n
            if budget is not None:
                budget -= n
            sent = n
            while sent:
                frame, meta = out[0]
                rest = len(frame) - self._offset
                if sent < rest:  # the socket took part of this frame: it is full
                    self._offset += sent
                    break
                sent -= rest
                out.popleft()
                self._offset = 0
                if self.on_sent is not None and meta is not None:
                    self.on_sent(meta)
            if n < total:
                return False
        return False

    def unsent(self) -> list[Any]:
        """The metas of frames not wholly sent (a partly sent frame was never read)."""
        return [meta for _, meta in self._out if meta is not None]

    def recv_some(self) -> list[bytes]:
        """Every whole frame readable now. At end of file the frames read before it are
        returned first (the agent's report is often its last word before it exits), and
        :class:`AgentGone` is raised once there are none left."""
        gone = self._gone
        while gone is None:
            try:
                chunk = self.sock.recv(1 << 16)
            except BlockingIOError:
                break
            except OSError as exc:
                gone = str(exc)
                break
            if not chunk:
                gone = "end of file"
                break
            self._in += chunk
        self._gone = gone
        frames: list[bytes] = []
        buf = self._in
        while len(buf) >= 4:
            (n,) = _LEN.unpack_from(buf)
            if len(buf) < 4 + n:
                break
            frames.append(bytes(buf[4 : 4 + n]))
            del buf[: 4 + n]
        if gone is not None and not frames:
            raise AgentGone(gone)
        return frames

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()
