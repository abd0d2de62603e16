"""SIGTERM for the async face: a watcher task instead of a handler.

Why apart from the face: it is the one part of ``AsyncOffPolicyLogger`` that deals with
the process (the main thread, the signal's handler), and its rules are easy to break: it
watches only while SIGTERM has its default handler, it keeps watching (shielded) after
the first signal, because supervisors often send SIGTERM twice and the default handler
would kill the drain, and where signals cannot be watched (not the main thread) SIGTERM
keeps its default. The sync face turns SIGTERM into ``SystemExit(143)`` instead
(``_sync.py``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

import anyio
import anyio.abc

from .._core._say import say_to_stderr

__all__ = ["sigterm_is_default", "watch_sigterm"]


def sigterm_is_default() -> bool:
    """Whether this is the main thread and SIGTERM still has its default handler."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    except (ValueError, OSError):  # pragma: no cover - no signals here
        return False


async def watch_sigterm(
    scope: anyio.CancelScope,
    on_first: Callable[[int], None],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Until ``scope`` is cancelled (the run is over): ``on_first(signum)`` on the first
    SIGTERM; a later one only says that the drain goes on."""
    started = False
    seen = False
    try:
        with scope, anyio.open_signal_receiver(signal.SIGTERM) as signals:
            task_status.started()
            started = True
            async for signum in signals:
                if seen:  # a second SIGTERM: the drain goes on
                    say_to_stderr("aoff: still writing the rest of the run", wait=False)
                    continue
                seen = True
                on_first(int(signum))
                # watching on (shielded) until the run is over: supervisors often send
                # SIGTERM twice, and the default handler would kill the drain
    except (NotImplementedError, RuntimeError, ValueError, OSError):
        if started:
            raise
        # no signal support here (e.g. not the main thread): SIGTERM keeps its default
    finally:
        if not started:
            task_status.started()
