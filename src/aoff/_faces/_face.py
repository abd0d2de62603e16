"""What both faces share: the public constructor, the fork and rank rules, and the stop path.

The sync and async faces differ only in how they run the pump and in the methods that
wait (httpx's rule: share logic, not I/O). Everything decided from the constructor's
arguments is decided once, in :class:`~aoff._pump._options.Options`; the closing event, the
after-close warning and "who owns the stop" are decided here, once. Where a face is in
its life is one value, ``_phase`` (``_phase.py``), changed only by :meth:`Face._to`.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Self

from .._backends._wandboptions import DEFAULT_WANDB_PROJECT
from .._core import _events as ev
from .._core._buffer import DEFAULT_CAPACITY, EventBuffer, Overflow
from .._core._checkpoint import to_state_dict
from .._core._config import format_converted
from .._core._recorder import R, Recorder
from .._core._records import SEED_MAX_ITERATIONS, SEED_NUM_ENVS
from .._core._report import FinishReport
from .._core._rules import Alert, Rule
from .._core._say import say_to_stderr
from .._core._state import State
from .._core._warning import AoffWarning
from .._display._api import Display
from .._media._calls import DEFAULT_MEDIA_BUDGET, MediaBudget, MediaCalls
from .._media._shm import ShmPool
from .._pump._options import (
    DEFAULT_AGENT_NICE,
    BackendSpec,
    DisplayName,
    Options,
    PumpMode,
)
from .._pump._ranks import RankMode, muted_line, rank_dir, this_rank
from .._pump._sysmetrics import DEFAULT_INTERVAL as DEFAULT_SYSTEM_INTERVAL
from ._forkhook import track
from ._keywords import check_keywords, public_signature
from ._phase import CLOSING, INERT, NEXT, Phase, stopped

if TYPE_CHECKING:
    from rich.console import Console

    from .._pump._wiring import Core
    from ._remote import RemoteLogger

__all__ = ["Face"]


#: how long finish() waits, beyond ``finish_timeout``, for a pump that makes no progress
FINISH_GRACE = 10.0

#: the lines that said why a pump stays in this process (each is said once a process)
_said_in_process: set[str] = set()


def _logging_methods() -> list[str]:
    """The public calls a muted rank turns into no-ops: the recorder's, and ``start``."""
    names = [n for n in {*dir(Recorder), *dir(MediaCalls)} if not n.startswith("_")]
    return [*names, "start"]


class Face(Recorder[R], MediaCalls[R], Generic[R]):
    """The constructor both faces share, so their arguments cannot drift apart.

    Arguments up to ``wandb_notes`` are the original logger's, with the same defaults (the
    W&B project defaults to ``"aoff"``); the rest are aoff's own, keyword-only. A face
    finishes its own set-up in :meth:`_setup_face` (how it runs the pump, signals).
    """

    # the seed logger's public attributes, set from the run description
    algo_name: str
    max_iterations: int
    num_envs: int
    env_name: str
    obs_dim: int
    action_dim: int

    #: what a logging call returns once the logger is closed (None, or a done awaitable)
    _closed_result: R
    _closed_when = "finish()/close()"

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        # a misspelt keyword names the class called, not the shared ``Face.__init__``
        check_keywords(cls, len(args), tuple(kwargs))
        return super().__new__(cls)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # help() and the docs show __init__'s signature, not the checking __new__'s
        setattr(cls, "__signature__", public_signature(cls))  # noqa: B010

    def __init__(
        self,
        algo_name: str = "RL",
        max_iterations: int = SEED_MAX_ITERATIONS,
        num_envs: int = SEED_NUM_ENVS,
        env_name: str = "",
        obs_dim: int = 0,
        action_dim: int = 0,
        refresh_per_second: int = 4,
        log_dir: str | os.PathLike[str] = "",
        log_backend: str = "tensorboard",
        wandb_project: str = DEFAULT_WANDB_PROJECT,
        wandb_entity: str | None = None,
        wandb_name: str = "",
        wandb_group: str | None = None,
        wandb_job_type: str | None = None,
        wandb_tags: list[str] | None = None,
        wandb_notes: str | None = None,
        *,
        backends: Sequence[BackendSpec] = (),
        backend_options: Mapping[str, Mapping[str, Any]] | None = None,
        capacity: int = DEFAULT_CAPACITY,
        overflow: Overflow = "drop_oldest",
        finish_timeout: float = 10.0,
        flush_secs: float = 2.0,
        console: Console | None = None,
        display: Display | DisplayName | None = None,
        clock: Callable[[], float] | None = None,
        handle_sigterm: bool = True,
        pump: PumpMode = "process",
        config: Mapping[str, Any] | None = None,
        resume_step: int | None = None,
        system_interval: float = DEFAULT_SYSTEM_INTERVAL,
        ranks: RankMode = "zero",
        media_budget: int = DEFAULT_MEDIA_BUDGET,
        agent_nice: int = DEFAULT_AGENT_NICE,
        rules: Sequence[Rule] | None = None,
        webhook: str | None = None,
        command: Sequence[str] | None = None,
    ) -> None:
        self._options = Options.of(locals())
        self._options.backend_names()  # bad names and a missing log_dir fail here, in any mode
        muted = self._take_rank()
        if muted:
            self._mute(muted)
            return
        if self._options.hparams_converted:
            msg = format_converted("config", list(self._options.hparams_converted))
            warnings.warn(msg, AoffWarning, stacklevel=2)
        if self._options.resume_step is not None:
            from ._resume import prepare_resume

            prepare_resume(self._options)  # checks the run folder, cuts JSONL/CSV rows
        self._make_buffer()
        line = self._options.in_process_line()
        if line is not None and line not in _said_in_process:  # once a process, per reason
            _said_in_process.add(line)
            say_to_stderr(line)
        self._setup_face()
        track(self)  # the fork hook (_forkhook.py)

    def _take_rank(self) -> int | None:
        """Apply this process's rank to the options (``ranks="each"``: a folder of its
        own) and set the seed's public attributes (a muted rank has them too); the rank
        when it is one that does not log (``ranks="zero"``, not rank 0), else None."""
        rank = this_rank()
        if rank is not None and self._options.ranks == "each" and self._options.log_dir:
            self._options = dataclasses.replace(
                self._options, log_dir=rank_dir(self._options.log_dir, rank)
            )
        for name, value in dataclasses.asdict(self._options.config).items():
            setattr(self, name, value)
        return rank if rank and self._options.ranks == "zero" else None

    def _make_buffer(self) -> None:
        """The hot path's buffer and the media budget beside it (a logging rank only)."""
        self._stop_lock = threading.Lock()
        self._report: FinishReport | None = None
        self._buffer = EventBuffer(self._options.capacity, self._options.overflow)
        self._media_budget = MediaBudget(self._options.media_budget)
        self._forked_dropped = 0
        if self._process_mode():  # frames go to the agent in shared memory (_media/_shm.py)
            self._media_budget.pool = ShmPool(self._options.media_budget)
        self._buffer.on_refused = lambda e: self._media_budget.unread(e)  # drop_newest

    _core: Core  # the in-process pump's parts (thread mode, or after the agent is lost)
    _phase = Phase.NEW
    _alerts: tuple[Alert, ...] = ()
    _should_stop = False
    #: the early alerts (``_note_alert``) the agent has not confirmed yet: where they are
    _early_at: dict[tuple[str, str, int], int] = {}  # noqa: RUF012 - replaced, never mutated

    @property
    def alerts(self) -> tuple[Alert, ...]:
        """What the run's rules saw so far (``rules=``, :mod:`aoff.rules`), oldest first:
        one attribute read, no system call and no lock (the agent's alerts come in with
        the shipper's reading of its answers; in thread mode the pump notes them)."""
        return self._alerts

    @property
    def should_stop(self) -> bool:
        """True once a rule made with ``stop=True`` fired: the loop decides what to do
        (``if log.should_stop: save(); break``). As cheap as :attr:`alerts`."""
        return self._should_stop

    def _note_alert(self, alert: Alert, early: bool = False) -> None:
        """An alert reached this process (the shipper's thread or round, or the pump's
        thread): two plain stores, read by the loop without a lock. An ``early`` one was
        found here while the agent started (``_early.py``); the agent's word on it, the
        same rule, tag and step, replaces it: one of each, the agent's (the time
        ``alerts.jsonl`` has)."""
        seen = self._alerts
        key = (alert.rule, alert.tag, alert.step)
        at = self._early_at
        i = at.pop(key, None) if at and not early else None
        if i is not None:
            self._alerts = (*seen[:i], alert, *seen[i + 1 :])
        else:
            if early:
                self._early_at = {**at, key: len(seen)}
            self._alerts = (*seen, alert)
        if alert.stop:
            self._should_stop = True

    def _to(self, phase: Phase) -> None:
        """The one place a face's phase changes; the move must be one :data:`NEXT` lists."""
        assert phase is self._phase or phase in NEXT[self._phase], (self._phase, phase)
        self._phase = phase

    @property
    def _inert(self) -> bool:
        """Nothing of the run lives in this process (a muted rank, a forked child's copy):
        the waiting methods return at once."""
        return self._phase in INERT

    def _process_mode(self) -> bool:
        """Whether the pump goes to the agent (``pump="process"`` and nothing that must
        stay in this process was given)."""
        return self._options.pump == "process" and self._options.in_process_only() is None

    def _build_core(self) -> Core:
        # imported here: the pump and what it draws and writes with (Rich, numpy, the
        # backends' modules) are needed in this process only in thread mode or after a
        # lost agent; ``import aoff`` stays light without them
        from .._pump._wiring import Core

        # the encoder in this process gives the media budget back as it frees frames
        self._core = Core(
            self._options,
            buffer=self._buffer,
            on_tick=self._refresh_capture,
            on_media_freed=self._media_budget.note_freed,
            on_alert=self._note_alert,
        )
        return self._core

    def _setup_face(self) -> None:
        raise NotImplementedError

    def _end_media(self) -> None:
        """The run ended: free the frames' shared-memory blocks (process mode)."""
        pool = self._media_budget.pool
        if pool is not None:
            pool.close()

    def _idle_timeout(self) -> float:
        """How long a wait for the pump may see no progress before it gives up."""
        return self._options.finish_timeout + FINISH_GRACE

    # -- the one stop path's shared half --------------------------------------------------
    def _begin_stop(self, *, title: str, extra_summary: str, interrupted: bool) -> bool:
        """Close the hot path and queue the closing event; True for the first caller only
        (later callers wait for the same drain and report)."""
        with self._stop_lock:
            if stopped(self._phase):
                return False
            self._to(Phase.STOPPING)
        self._buffer.append_final(ev.finish_event(self._clock(), title, extra_summary, interrupted))
        self._put = self._after_close
        return True

    def _mute(self, rank: int) -> None:
        """A rank that does not log (``_ranks.py``): every logging call is a no-op bound
        on the instance (no event, no buffer: ~0.1 us a call), no agent, no threads."""
        result = self._closed_result

        def noop(*args: object, **kwargs: object) -> R:
            return result

        for name in _logging_methods():
            setattr(self, name, noop)
        self._to(Phase.MUTED)
        self._report = FinishReport()
        say_to_stderr(muted_line(rank))

    _fork_remote: RemoteLogger | None = None
    _fork_steps: list[int]

    def _forked_in_child(self) -> None:
        """This process is a child forked from the one that made this face (see
        ``_forkhook.py``): become a forked copy."""
        self._report = FinishReport(interrupted=True, partial=True)
        if self._options.log_dir and self._phase not in CLOSING:
            from ._remote import RemoteLogger

            self._to(Phase.FORKED)
            pid = os.getpid()
            self._fork_remote = remote = RemoteLogger(
                self._options.log_dir,
                f"fork-{pid}",
                capacity=self._options.capacity,
                overflow=self._options.overflow,
                owner_pid=os.getppid(),
            )
            # media go pickled through the remote, bounded by its budget: the parent's
            # shared-memory pool is the parent's alone
            self._media_budget = remote._media_budget
            result = self._closed_result
            put = remote._put_via_face
            steps = self._fork_steps = [0]  # log_step calls handed over, for the report

            def put_remote(event: ev.Event) -> R:
                put(event)
                if event[0] == ev.STEP:
                    steps[0] += 1
                return result

            self._put = put_remote
        else:
            self._to(Phase.FORKED_DROPPED)
            self._media_budget = MediaBudget(self._options.media_budget)  # not the pool
            self._put = self._put_forked

    def _empty_state_dict(self) -> dict[str, Any]:
        """``state_dict()`` where nothing of the run lives in this process."""
        return to_state_dict(State(), self._options.now())

    def _inert_report(self) -> FinishReport:
        """``finish()``/``close()`` where nothing of the run lives in this process: a
        forked child's remote is closed (what it sent is the parent's run's)."""
        assert self._report is not None
        remote = self._fork_remote
        if remote is not None:
            got = remote.close()
            self._put = self._after_close
            # what this child delivered into the parent's run (its steps are written
            # there); partial when the run did not confirm every event
            self._report = FinishReport(
                dropped_events=got.dropped, steps=self._fork_steps[0], partial=not got.complete
            )
        return self._report

    async def _ainert_report(self) -> FinishReport:
        if self._fork_remote is None:
            return self._inert_report()
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self._inert_report)

    _remote_names: itertools.count[int] | None = None

    def remote(
        self,
        name: str | None = None,
        *,
        timeout: float = 10.0,
        media_budget: int | None = None,
        rules: Sequence[Rule] | None = None,
    ) -> RemoteLogger:
        """A picklable :class:`~aoff.RemoteLogger` for another process (spawned,
        forkserver'd or forked) to log into this run (see docs/guides/producers.md).

        ``name`` names its records (default ``remote0``, ``remote1``, ...); ``timeout``
        bounds how long it tries to reach the run, and its ``flush()``/``close()``;
        ``media_budget``: bytes of frames it may hold until sent (default the run's);
        ``rules``: its own rules, judged in this run on its events only (see
        :class:`~aoff.RemoteLogger`). Needs ``log_dir`` (its socket is how producers
        reach the run): ``ValueError`` without one; ``RuntimeError`` after
        ``finish()``/``close()``."""
        from ._remote import RemoteLogger

        opts = self._options
        if not opts.log_dir:
            raise ValueError(
                "remote() needs a log_dir: producers reach the run through the socket in its folder"
            )
        if self._phase in CLOSING:
            raise RuntimeError(f"remote() called after {self._closed_when}")
        if name is None:
            self._remote_names = self._remote_names or itertools.count()
            name = f"remote{next(self._remote_names)}"
        budget = opts.media_budget if media_budget is None else media_budget
        return RemoteLogger(
            opts.log_dir,
            name,
            capacity=opts.capacity,
            overflow=opts.overflow,
            timeout=timeout,
            media_budget=budget,
            rules=rules,
        )

    def _put_forked(self, event: ev.Event) -> R:
        if not self._forked_dropped:
            warnings.warn(
                f"aoff: {ev.name_of(event)}() in a process forked from the one that made "
                "this logger: calls here are not recorded (counted as dropped); make a "
                "logger in the child, or log from the parent",
                AoffWarning,
                stacklevel=3,
            )
        self._forked_dropped += 1
        assert self._report is not None
        self._report.dropped_events = self._forked_dropped
        return self._closed_result

    def _after_close(self, event: ev.Event) -> R:
        warnings.warn(
            f"aoff: {ev.name_of(event)}() called after {self._closed_when}; "
            "the event was not recorded",
            AoffWarning,
            stacklevel=3,  # this method, the logging method: the user's call
        )
        return self._closed_result
