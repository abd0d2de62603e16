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
import os
import signal
import sys
import threading
import time
import types
import weakref
from typing import TYPE_CHECKING, Any

from .._core._checkpoint import no_state_line
from .._core._report import FinishReport, force_quit_line
from .._core._say import say_to_stderr
from ._face import Face
from ._phase import Phase
from ._side import AgentSide
from ._twins import TwinsHidden, add_twins, instance_dir

if TYPE_CHECKING:
    from ._driver import Driver

#: a second Ctrl+C this soon after the first stops finish() from waiting for the drain
FORCE_WINDOW = 2.0


def _say(line: str, *, wait: bool = True) -> None:
    """One line on stderr; a further Ctrl+C while it is being written is ignored."""
    with contextlib.suppress(KeyboardInterrupt):
        say_to_stderr(line, wait=wait)


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
        # best effort at exit; a signal during the drain was already answered there
        with contextlib.suppress(Exception, KeyboardInterrupt, SystemExit):
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

if hasattr(os, "register_at_fork"):  # a forked child's exit hook has nothing to drain
    os.register_at_fork(after_in_child=_live_loggers.clear)


#: the async face's own names, and what the sync face uses instead
_ASYNC_ONLY = {
    "aflush": "flush()",
    "afinish": "finish()",
    "aclose": "close()",
    "astate_dict": "state_dict()",
}


class OffPolicyLogger(Face[None], metaclass=TwinsHidden):
    """Rich dashboard + TensorBoard/W&B/JSONL logger for off-policy RL (the sync logger).

    Every logging call returns at once; the dashboard opens with the first one.
    ``finish()`` (or leaving ``with``) writes everything and prints the summary. Every
    option, with its default, is in docs/reference/arguments.md; by group:

    **The original logger's** (positional, same order and defaults):

    - ``algo_name``, ``env_name``: the header, the summary, the W&B run name;
      ``max_iterations``: the progress and the ETA; ``num_envs``, ``obs_dim``,
      ``action_dim``: stored in the config (``num_envs`` also shown, unless 0).
    - ``refresh_per_second``: dashboard frames per second at most.
    - ``log_dir``: the run's folder; ``log_backend``: ``"tensorboard"`` (the default,
      event files in ``log_dir``), ``"wandb"``, ``"none"`` (the dashboard only) or
      ``"no_print"`` (nothing at all).
    - ``wandb_project``, ``wandb_entity``, ``wandb_name``, ``wandb_group``,
      ``wandb_job_type``, ``wandb_tags``, ``wandb_notes``: passed to ``wandb.init``;
      each is one of W&B's own options (``wandb_project="p"`` is
      ``backend_options={"wandb": {"project": "p"}}``; given both ways with two values,
      an error).

    **Backends** (keyword-only, as all that follow):

    - ``backends``: more outputs, by a registered name (``"jsonl"``, say; an unknown
      name's error lists them all) or :class:`~aoff.Backend` objects, besides
      ``log_backend``; ``backend_options``: a backend's own options, by its name
      (``{"wandb": {"project": "p", "tags": ["sac"]}}``; W&B's are ``project``,
      ``entity``, ``name``, ``group``, ``job_type``, ``tags``, ``notes``).
    - ``flush_secs``: backends flush at least this often; ``config``: the run's
      hyperparameters (a dict).

    **Overload**: ``capacity`` (events the buffer holds) and ``overflow``:
    ``"drop_oldest"`` (the default; never waits), ``"drop_newest"`` or ``"block"``.

    **Exits**: ``finish_timeout`` (how long ``finish()`` waits for a slow backend),
    ``handle_sigterm`` (SIGTERM drains, then exits 143), ``resume_step`` (continue the
    run in ``log_dir`` after this step).

    **Display**: ``display`` (``"rich"``, ``"plain"``, ``"none"`` or a
    :class:`~aoff.Display`), ``console`` (a Rich console), ``clock`` (a time source for
    tests), ``system_interval`` (seconds between CPU/memory/GPU samples; 0: none).

    **Where it runs**: ``pump`` (``"process"``: aoff's agent process; ``"thread"``),
    ``agent_nice``, ``ranks`` (``"zero"`` or ``"each"`` under torchrun).

    **Media**: ``media_budget``, the bytes of image/video frames waiting to be encoded.

    **Rules**: ``rules`` (what the run watches itself with, evaluated in the agent:
    :mod:`aoff.rules`; None: NaN/inf and a stall; ``[]``: none), ``webhook`` (a URL each
    alert is POSTed to as JSON) and ``command`` (run once per alert, the alert as JSON on
    its stdin). :attr:`alerts` and :attr:`should_stop` tell the loop what they saw.
    """

    _closed_result = None

    def _setup_face(self) -> None:
        self._init_recorder(self._buffer.put, self._options.now)
        self._drain_lock = threading.Lock()
        self._drain_over: threading.Event | None = None  # set when the final drain ended
        self._drain_result: list[FinishReport] = []
        self._drain_failure: list[BaseException] = []
        self._caught: BaseException | None = None  # a signal during the drain, raised after
        self._caught_at = 0.0
        #: what runs the pump: a thread of this process, or the agent (through its link)
        self._driver: Driver
        if self._process_mode():
            self._driver = side = AgentSide(
                self._options,
                self._buffer,
                self._build_core,
                pool=self._media_budget.pool,
                on_alert=self._note_alert,
            )
            self._put = side.put()  # producers ship a round themselves now and then
        else:
            from .._pump._thread import PumpThread  # the pump in this process (see Face)

            self._driver = PumpThread(self._build_core())
        _live_loggers.add(self)
        if self._options.handle_sigterm:
            _install_sigterm()
        self._to(Phase.OPEN)

    # -- the calls that wait ---------------------------------------------------------------
    def start(self, *, status: str = "Warming up...") -> None:
        """Open the dashboard (and start its clock) now, showing ``status``; without it
        the first logging call does that. Once the run has started, only sets the status."""
        self._start_event(status)

    def flush(self) -> None:
        """Block until everything logged so far is written and flushed by every backend."""
        remote = self._fork_remote  # a forked child: what it logged, into the parent's run
        if remote is not None and not remote._closed:
            remote.flush()
        if self._phase is not Phase.OPEN:  # stopping, or nothing of the run lives here
            return
        self._driver.flush(self._idle_timeout())

    def state_dict(self) -> dict[str, Any]:
        """aoff's own counters, for your checkpoint: the elapsed time behind the ETA, the
        reward history and best mean reward, the dropped total (``_core/_checkpoint.py``).
        Flushes first, so they cover every call made before this one. A plain dict of
        built-ins: ``torch.save`` it with your model; give it to
        :meth:`load_state_dict` in the resumed run (with ``resume_step``)."""
        if self._inert:
            return self._empty_state_dict()
        got = self._driver.state_dict(self._idle_timeout())
        if got is None:
            raise RuntimeError(no_state_line(self._options.finish_timeout))
        return got

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
        """The one stop path: the first caller queues the closing event; every caller
        (another thread, the exit hook) waits for the same drain and gets its report."""
        if self._inert:  # nothing of the run lives in this process (fork, muted rank)
            return self._inert_report()
        try:
            self._begin_stop(
                title=title, extra_summary=extra_summary, interrupted=bool(interrupted)
            )
            self._ensure_drain(summary)
        except (KeyboardInterrupt, SystemExit) as exc:
            # a signal before the wait began counts as one during it (raised after)
            self._note_signal(exc)
            self._ensure_drain(summary)
        return self._wait_for_drain()

    def _note_signal(self, exc: BaseException) -> bool:
        """Remember a signal that came during the drain; True if it is a second Ctrl+C
        within ``FORCE_WINDOW`` seconds (stop waiting now)."""
        now = time.monotonic()
        first = self._caught
        if (
            isinstance(exc, KeyboardInterrupt)
            and isinstance(first, KeyboardInterrupt)
            and now - self._caught_at < FORCE_WINDOW
        ):
            return True
        self._caught, self._caught_at = first or exc, now
        if first is None:  # queued, not waited for: a second Ctrl+C may come any moment
            _say(
                "aoff: still writing the rest of the run; it stops within "
                f"finish_timeout ({self._options.finish_timeout:g}s) of a stuck "
                f"backend. Ctrl+C again within {FORCE_WINDOW:g}s to stop now.",
                wait=False,
            )
        return False

    def _ensure_drain(self, summary: bool) -> None:
        """Start the final drain on a helper thread (once). A caller interrupted before
        it got here is covered by the next caller (the exit hook at the latest)."""
        with self._drain_lock:
            if self._drain_over is not None:
                return
            over = self._drain_over = threading.Event()
        driver = self._driver
        idle = self._idle_timeout()

        def drain() -> None:
            try:
                self._drain_result.append(driver.stop(summary, idle))
            except BaseException as exc:  # pragma: no cover - reported by the waiter
                self._drain_failure.append(exc)
            finally:
                _live_loggers.discard(self)
                over.set()

        threading.Thread(target=drain, name="aoff-finish", daemon=True).start()

    def _wait_for_drain(self) -> FinishReport:
        """Wait for the drain here, so that Ctrl+C or SIGTERM arriving meanwhile does
        not cut it short (supervisors often send SIGTERM twice): the signal is raised
        again once the drain is over. A second Ctrl+C within ``FORCE_WINDOW`` seconds
        stops waiting at once, after one line that says exactly how many steps each
        backend did not get; later stops (the exit hook) then return at once too."""
        over = self._drain_over
        assert over is not None
        while not over.is_set() and self._phase is not Phase.ABANDONED:
            try:
                over.wait(0.05)  # not Thread.join: a signal inside join can corrupt it
            except (KeyboardInterrupt, SystemExit) as exc:
                if self._note_signal(exc):
                    self._to(Phase.ABANDONED)
                    _say(force_quit_line(self._driver.unwritten()))
                    raise
        if self._phase is not Phase.ABANDONED:  # the drain is over
            self._to(Phase.CLOSED)
        if self._drain_result:
            self._end_media()  # the run ended: nothing reads the frames' blocks now
        if self._drain_failure:
            raise self._drain_failure[0]
        if self._drain_result:
            self._report = self._drain_result[0]
        else:  # forced out earlier: what is known now
            self._report = FinishReport(interrupted=True, partial=True)
        caught, self._caught = self._caught, None
        if caught is not None:
            raise caught
        return self._report

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

    def __dir__(self) -> list[str]:
        return instance_dir(self)


add_twins(OffPolicyLogger, _ASYNC_ONLY)
