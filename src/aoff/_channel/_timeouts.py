"""How long a connection on the run's socket may wait, and the kernel-side timeouts that
hold it to that.

Why kernel-side: a connection is served on its own daemon thread with blocking reads and
writes; a socket timeout makes a peer that never answers, or a viewer that stops reading,
fail that one thread with an ``OSError`` instead of holding it for ever. Apart from the
server so that each role's handler (``_server.py``, ``_produce.py``) can set its own.
"""

from __future__ import annotations

import os
import socket
import struct
from multiprocessing.connection import Connection

__all__ = ["HANDSHAKE_TIMEOUT", "SEND_TIMEOUT", "set_timeouts"]

#: seconds a peer may take to prove the key and name its role
HANDSHAKE_TIMEOUT = 5.0
#: seconds a send may block on a viewer that stopped reading before it is dropped
SEND_TIMEOUT = 10.0


def set_timeouts(conn: Connection, recv: float, send: float) -> None:
    """Receives on ``conn`` fail after ``recv`` seconds and sends after ``send`` (0: never)."""
    sock = socket.socket(fileno=os.dup(conn.fileno()))
    try:
        for opt, secs in ((socket.SO_RCVTIMEO, recv), (socket.SO_SNDTIMEO, send)):
            whole = int(secs)
            sock.setsockopt(
                socket.SOL_SOCKET, opt, struct.pack("ll", whole, int((secs - whole) * 1e6))
            )
    finally:
        sock.close()
