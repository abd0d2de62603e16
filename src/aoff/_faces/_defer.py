"""Hold Ctrl+C and SIGTERM back while a producer ships a round on the main thread.

A shipping round (``_side.AgentSide.put``) runs inside a logging call, on whatever thread
made it. On the main thread, a Python signal handler (``KeyboardInterrupt``, aoff's
``SystemExit(143)`` for SIGTERM, or yours) may raise between any two bytecodes: between
draining the buffer and queueing the batch (events lost), or between a partial socket
send and the bookkeeping of how much was sent (the agent's stream corrupted). So the
round runs with the handlers of SIGINT and SIGTERM swapped for one that only notes the
signal; the signal is raised again as soon as the round is over, and its real handler runs -
at most a few milliseconds later, still inside the logging call, so the caller sees the
exception where it would have anyway. Other threads' rounds need none of this (Python
runs signal handlers on the main thread only), and neither does a round that only
pickles a slice of events (``_transport/_batches.Slices.pickle_from``: each of its steps
leaves every event in exactly one place), the round most calls that ship make.

The async face's own tasks (the shipper, the in-process pump) run on the caller's event
loop. asyncio turns Ctrl+C into a cancellation, delivered at an ``await``; trio raises
``KeyboardInterrupt`` at once, in whatever code is running, unless it is marked
protected. So on trio those tasks are started KI-protected (:func:`ki_protected`): trio
then delivers the interrupt to the caller's main task at its next checkpoint, and the
task that holds a round's events finishes the round and the drain.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _c_half() -> tuple[Callable[[int], Any], Callable[[int, Any], Any]]:
    """``signal``'s C module's ``getsignal`` and ``signal``: the same handlers in and out,
    without the ``signal`` module's enum conversion (it tries ``Handlers(handler)`` and
    catches the ``ValueError`` for every function handler): ~3 and ~4 us a call less
    on the test machine, with 6 calls a round (a backed-up round every 16 logging calls
    paid ~20 us for this alone: ``benchmarks/bench_burst.py``)."""
    try:
        c: Any = importlib.import_module("_signal")  # CPython's; no typeshed stub
        return c.getsignal, c.signal
    except (ImportError, AttributeError):  # pragma: no cover - another interpreter
        return signal.getsignal, signal.signal


_getsignal, _setsignal = _c_half()
_MAIN = threading.main_thread()


class signals_deferred:  # a function to its callers: ``with signals_deferred():``
    """Run the body with SIGINT/SIGTERM handlers deferred (main thread; elsewhere a no-op).

    A class rather than a generator-based context manager: it is entered once a
    shipping round (every few logging calls of a flat-out loop), where the generator,
    its closure and the re-raise bookkeeping cost ~1-2 us of a ~15 us round beside the
    handlers' swap itself (one ``sigaction`` each way)."""

    __slots__ = ("caught", "saved")

    def __init__(self) -> None:
        self.caught: list[tuple[int, types.FrameType | None]] = []
        self.saved: list[tuple[int, Callable[[int, types.FrameType | None], Any]]] = []

    def _note(self, signum: int, frame: types.FrameType | None) -> None:
        self.caught.append((signum, frame))

    def __enter__(self) -> None:
        if threading.current_thread() is not _MAIN:
            return
        note = self._note
        for sig in _SIGNALS:
            handler = _getsignal(sig)
            if callable(handler):  # SIG_DFL/SIG_IGN: nothing runs Python code
                self.saved.append((sig, handler))
                _setsignal(sig, note)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved:
            _setsignal(sig, handler)
        if not self.caught:
            return
        # raised again, as if they came now, all of them before any handler can run
        # (blocked while raised, delivered together when unblocked): Python then runs
        # each real handler, and one that raises (KeyboardInterrupt) leaves the rest
        # pending for its next check
        pending = list(dict.fromkeys(signal.Signals(s) for s, _ in self.caught))
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, pending)
        try:
            for sig in pending:
                signal.raise_signal(sig)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def ki_protected(task: _F) -> _F:
    """``task`` marked KI-protected when this runs inside ``trio.run`` (trio's own
    ``enable_ki_protection``: no cost per call); else ``task`` itself."""
    trio: Any = sys.modules.get("trio")
    if trio is None:  # not imported: not running it either
        return task
    import sniffio  # trio depends on it

    if sniffio.current_async_library() != "trio":
        return task
    return trio.lowlevel.enable_ki_protection(task)  # type: ignore[no-any-return]
