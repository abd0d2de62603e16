"""``OffPolicyLogger``: the synchronous drop-in for the seed's logger.

Same constructor arguments, same methods, same tags and dashboard. Logging calls are
fire-and-forget: they append an event and return (the hot path in ``_recorder.py``).
The pump runs on a private asyncio event loop in a daemon thread ("aoff-pump"); the
only calls that wait are :meth:`flush`, :meth:`finish` and :meth:`close`, which talk to
that loop through anyio's thread bridge.

What is lost if ``finish()``/``close()`` is never called: nothing on a normal interpreter
exit, an uncaught exception, Ctrl+C or SIGTERM — an exit hook drains and closes
everything (SIGTERM is turned into ``SystemExit(143)`` while the default handler is in
place, so ``finally`` blocks and the hook run). ``os._exit`` and SIGKILL lose what the
backends had not flushed (at most ``flush_secs`` of records); the files stay readable.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
import types
import weakref
from typing import Any, NoReturn

import anyio
import anyio.from_thread
import anyio.lowlevel

from ._face import Face
from ._report import FinishReport, gave_up_line

#: how long finish() waits, beyond ``finish_timeout``, for a pump that makes no progress
FINISH_GRACE = 10.0


class _SigtermExit(SystemExit):
    """Raised in the main thread on SIGTERM so ``finally`` blocks and exit hooks run."""


_live_loggers: weakref.WeakSet[OffPolicyLogger] = weakref.WeakSet()
_prev_sigterm: Any = None
_sigterm_seen = False


def _on_sigterm(signum: int, frame: types.FrameType | None) -> None:
    global _sigterm_seen
    _sigterm_seen = True
    raise _SigtermExit(128 + signum)


def _install_sigterm() -> None:
    global _prev_sigterm
    if _prev_sigterm is not None or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            _prev_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter
        pass


def _exit_hook() -> None:
    """Drain every logger still open at interpreter exit."""
    interrupted = _sigterm_seen or getattr(sys, "last_type", None) is KeyboardInterrupt
    for logger in list(_live_loggers):
        with contextlib.suppress(Exception):  # best effort at exit
            logger._stop(summary=True, interrupted=interrupted or None)


def _register_exit_hook() -> None:
    # threading's own exit hooks run before non-daemon threads are joined and before
    # atexit, while new threads may still be started (the backends need worker threads).
    reg = getattr(threading, "_register_atexit", None)
    if reg is not None:
        # These hooks run last-registered-first. concurrent.futures.thread registers one
        # that forbids new executor jobs (asyncio's run_in_executor, hence aiofiles) when
        # it is first imported; importing it now makes ours run before it, so the final
        # drain can still write.
        import concurrent.futures.thread  # noqa: F401

        reg(_exit_hook)
    else:  # pragma: no cover
        import atexit

        atexit.register(_exit_hook)


_register_exit_hook()


class OffPolicyLogger(Face[None]):
    """Rich dashboard + TensorBoard/W&B/JSONL logger for off-policy RL (sync face).

    Arguments up to ``wandb_notes`` are the seed logger's, with the same defaults (the
    W&B project defaults to ``"aoff"``). aoff's own options are keyword-only:

    backends
        extra backends by name (``"tensorboard"``, ``"jsonl"``, ``"wandb"``) or
        :class:`~aoff.Backend` objects, in addition to ``log_backend``.
    capacity, overflow
        the event buffer's bound (events) and policy: ``"drop_oldest"`` (default,
        never blocks), ``"drop_newest"`` or ``"block"``.
    finish_timeout
        how long ``finish()`` waits for a slow or hung backend before giving up on it.
    flush_secs
        backends are flushed at least this often.
    console, display, clock
        a Rich console to draw on, a replacement display, and the time source
        (``time.time`` by default; tests pass :class:`aoff.testing.ManualClock`).
    """

    _closed_result = None

    def _setup_face(self) -> None:
        self._stopped = True  # until the pump thread runs
        buf = self._core.buffer
        self._init_recorder(buf.put, self._options.now)
        self._token: Any = None
        self._ready = threading.Event()
        self._done = threading.Event()  # set once the stop in progress has its report
        self._crashed: BaseException | None = None
        self._thread = threading.Thread(target=self._thread_main, name="aoff-pump", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._crashed is not None:
            raise RuntimeError("aoff: the pump thread failed to start") from self._crashed
        self._stopped = False
        _live_loggers.add(self)
        if self._options.handle_sigterm:
            _install_sigterm()

    # -- the pump thread ---------------------------------------------------------------------
    def _thread_main(self) -> None:
        try:
            anyio.run(self._main, backend="asyncio")
        except BaseException as exc:  # pragma: no cover - reported to the constructor
            self._crashed = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = anyio.lowlevel.current_token()
        self._ready.set()
        await self._core.pump.run(self._core.context)

    # -- the calls that wait ---------------------------------------------------------------
    def start(self, *, status: str = "Warming up...") -> None:
        """Record the start time and open the dashboard; a second call updates the status."""
        self._start_event(status)

    def flush(self) -> None:
        """Block until everything logged so far is written and flushed by every backend."""
        if self._stopped or not self._thread.is_alive():
            return
        anyio.from_thread.run(self._core.pump.flush, token=self._token)

    def finish(self, *, title: str = "Training Summary", extra_summary: str = "") -> FinishReport:
        """Drain everything, close the backends, print the summary. Idempotent."""
        return self._stop(summary=True, title=title, extra_summary=extra_summary)

    def close(self) -> FinishReport:
        """Drain everything and close the backends, without a summary. Idempotent."""
        return self._stop(summary=False)

    def _stop(
        self,
        *,
        summary: bool,
        title: str = "Training Summary",
        extra_summary: str = "",
        interrupted: bool | None = None,
    ) -> FinishReport:
        if not self._begin_stop(
            title=title, extra_summary=extra_summary, interrupted=bool(interrupted)
        ):
            # another thread (or the exit hook) is stopping: its report is ours too
            self._done.wait()
            assert self._report is not None
            return self._report
        self._stopped = True
        pump = self._core.pump
        with contextlib.suppress(RuntimeError):  # the loop is already gone
            anyio.from_thread.run_sync(
                lambda: pump.request_stop(summary=summary), token=self._token
            )
        finished = self._join_pump()
        _live_loggers.discard(self)
        if finished and pump.result is not None:
            self._report = pump.result
        else:
            self._report = pump.report(partial=True)
            left = self._report.dropped_events - pump.dropped()
            with contextlib.suppress(Exception):
                print(gave_up_line(left), file=sys.stderr, flush=True)
        self._done.set()
        return self._report

    def _join_pump(self) -> bool:
        """Wait for the pump's final drain; False if it stopped making progress.

        Folding a full buffer is CPU work that can take seconds (100,000 events of a
        10,000-key dict take minutes on a slow machine); cutting it short would lose
        those events at interpreter exit. So this waits as long as events are folded or
        records written, and gives up only after ``finish_timeout + FINISH_GRACE`` s
        without either (the pump itself waits at most ``finish_timeout`` for a hung
        backend; a display that blocks, e.g. on a full stdout pipe, is what this catches).
        """
        pump = self._core.pump
        grace = self._options.finish_timeout + FINISH_GRACE
        last: tuple[int, int, int] | None = None
        still_since = time.monotonic()
        while True:
            self._thread.join(0.25)
            if not self._thread.is_alive():
                return True
            # progress = events drained, steps folded (one slice of big steps can take
            # seconds to fold) or records written
            mark = (
                pump.buffer.drained,
                pump.state.steps_logged,
                sum(r.written + r.lost for r in pump.runners),
            )
            now = time.monotonic()
            if mark != last:
                last, still_since = mark, now
            elif now - still_since > grace:
                return False

    # -- conveniences ------------------------------------------------------------------------
    def __enter__(self) -> OffPolicyLogger:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self._stop(summary=True, interrupted=exc_type is not None)

    async def __aenter__(self) -> NoReturn:
        raise TypeError(
            "OffPolicyLogger is the sync face: use `with OffPolicyLogger(...)`, "
            "or `async with AsyncOffPolicyLogger(...)` in async code"
        )

    async def __aexit__(self, *exc: object) -> None:  # pragma: no cover - never entered
        pass

    # -- the wrong twins: NoReturn, so a type checker marks what follows a call unreachable
    async def aflush(self) -> NoReturn:
        raise TypeError("OffPolicyLogger.aflush(): the sync face flushes with flush()")

    async def afinish(self, **kwargs: Any) -> NoReturn:
        raise TypeError("OffPolicyLogger.afinish(): the sync face finishes with finish()")

    async def aclose(self) -> NoReturn:
        raise TypeError("OffPolicyLogger.aclose(): the sync face closes with close()")
