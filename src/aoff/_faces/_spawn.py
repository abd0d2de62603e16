"""Starting the agent: ``python -m aoff._agent`` with one end of a socket pair.

Never ``multiprocessing``'s spawn: it re-imports the user's ``__main__``, and many
training scripts have no ``if __name__ == "__main__":`` guard. The agent is aoff's own
entry point, started with ``subprocess`` (fork+exec: nothing of this process's threads
runs in the child), with the socket's descriptor passed on, stdin closed, and stdout and
stderr inherited, so the agent draws on the same terminal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys

from .._pump._options import Options
from .._transport._messages import Hello, encode
from .._transport._wire import AGENT_IGNORES, SEND_BUFFER_BYTES, Link


def start_agent(
    options: Options, *, big_send_buffer: bool = True
) -> tuple[subprocess.Popen[bytes], Link]:
    """Start the agent and queue its options; the first events can be queued at once.

    ``big_send_buffer``: ask for ``SEND_BUFFER_BYTES`` of socket send buffer (the sync
    face: several threads may flood it). The async face floods from one thread, where
    the kernel's default suffices, and the bigger one costs its loop collections: 3 s of
    ``bench_loop_lag.py`` (asyncio, alternated, with the shipper's pacing fixed) ran 34 /
    14 / 28 collections with it, a full one (13-15 ms) among them in two runs of three,
    and 16 / 11 / 4 without, none full; the p99 lateness the same within the noise."""
    proc, ours = spawn_agent(big_send_buffer=big_send_buffer)
    link = Link(ours)
    link.queue(encode(Hello(options)))
    return proc, link


def spawn_agent(*, big_send_buffer: bool = True) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start ``python -m aoff._agent`` on one end of a socket pair; the other end, here,
    waits for the hello (a run's options, or a run group's, ``_faces/_groupside.py``)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    if big_send_buffer:
        with contextlib.suppress(OSError):  # room for bytes in flight (SEND_BUFFER_BYTES)
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # The agent ignores Ctrl+C and SIGTERM, but only once its main() runs, after it
    # imported aoff (seconds on a loaded machine): a Ctrl+C to the process group in that
    # window killed it. Started with both blocked (a blocked mask survives fork and
    # exec), they wait as pending until the agent has ignored them, then vanish.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, AGENT_IGNORES)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aoff._agent", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except BaseException:
        ours.close()
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        theirs.close()
    return proc, ours
