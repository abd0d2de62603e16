"""``RunGroup``: one logger for N runs of one program (seeds trained side by side).

Why a class of its own and not ``OffPolicyLogger(runs=N)``: every method of a group takes
batched values (one number per run) and answers per run (``should_stop`` is a tuple), so
a group is not a drop-in for a single run's logger; the name is the one trackers use for
runs that belong together (W&B's ``group``, TensorBoard's runs side by side).

Each run is a whole aoff run in its own folder, ``log_dir/<name>_seed<k>``, which
``aoff compare log_dir`` groups as seeds of one configuration with no flags. The runs'
pumps share one loop (``_pump/_grouppump.py``) in one agent process (``pump="process"``,
the default: ``_faces/_groupside.py`` ships the group's items to it) or in one thread of
this process (``pump="thread"``); the training loop pays one call per group
``log_step``: the batch is checked and copied once (``_core/_groupbatch.py``) and queued
as one item, split into one event per run beside the pumps.
"""

from __future__ import annotations

import contextlib
import os
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._core import _events as ev
from .._core._buffer import DEFAULT_CAPACITY, Overflow
from .._core._events import Event
from .._core._groupbatch import (
    PER_RUN,
    axes_at,
    batch_axes,
    batch_of,
    take_batch,
    take_block,
    take_block_whole,
)
from .._core._groupbuffer import GroupBuffer
from .._core._records import SEED_MAX_ITERATIONS
from .._core._report import FinishReport
from .._core._rules import Alert, Rule
from .._core._say import say_to_stderr
from .._core._view import RunView
from .._core._warning import AoffWarning
from .._pump._options import (
    DEFAULT_AGENT_NICE,
    PUMP_MODES,
    BackendSpec,
    DisplayName,
    Options,
    PumpMode,
)
from .._pump._sysmetrics import DEFAULT_INTERVAL as DEFAULT_SYSTEM_INTERVAL
from ._sync import _install_sigterm

if TYPE_CHECKING:
    from .._pump._grouppump import GroupPump

__all__ = ["BEFORE_STOP", "RunGroup", "run_folder_name"]

_live_groups: weakref.WeakSet[RunGroup] = weakref.WeakSet()


class _GroupDriver(Protocol):
    """What runs a group's pumps, as the group needs it: the agent's training-process
    half (``_groupside.GroupAgentSide``) or the pump thread (``GroupPump``)."""

    def flush(self, idle_timeout: float) -> None: ...

    def stop(self, final: Event, summary: bool, idle_timeout: float) -> list[FinishReport]: ...


#: what runs before a group's ``finish()`` drains: callables each integration adds
#: (``aoff.jax`` adds ``jax.effects_barrier``, so callbacks still in flight arrive first)
BEFORE_STOP: list[Callable[[], object]] = []


def run_folder_name(name: str, seed: int) -> str:
    """A run's folder in its group: ``<name>_seed<k>``, which ``aoff compare`` groups by
    ``<name>`` with no flags (``_cli/_groups.py``)."""
    return f"{name}_seed{seed}"


def _seeds(runs: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(runs, bool):
        raise TypeError("runs must be a number of runs or a sequence of seeds, got a bool")
    if isinstance(runs, int):
        if runs < 1:
            raise ValueError(f"runs must be >= 1, got {runs}")
        return tuple(range(runs))
    seeds = tuple(runs)
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise TypeError(f"runs must be an int or a non-empty sequence of int seeds, got {runs!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"runs: each seed once, got {list(seeds)}")
    return seeds


class RunGroup:
    """N runs of one program, logged with one call per step (see docs/guides/jax.md).

    ``runs``: how many (seeds ``0..N-1``) or the seeds themselves; ``log_dir``: where the
    runs' folders go (``<name>_seed<k>`` each; ``name`` defaults to ``algo_name``).
    Each run's config is ``config`` plus its ``seed``. The other options are
    :class:`~aoff.OffPolicyLogger`'s, given to every run; ``display`` shows the group in
    one table, one line per run (``"rich"``/``"plain"``; ``"none"`` by default).
    ``pump="process"`` (the default) pumps the N runs in one agent process,
    ``"thread"`` in one thread of this process; ``agent_nice`` is the agent's niceness
    above this process's, as for a single run.

    ``log_step(step, metrics, reward, axes=...)``: a value with a leading axis of one
    entry per run (NumPy, torch, JAX, a list) is split across the runs, a plain number
    goes to all; each axis of ``axes=`` (see docs/guides/axes.md) likewise.
    ``max_iterations`` is shown (the progress, the ETA) only when given, as for
    :class:`~aoff.OffPolicyLogger`.
    ``should_stop`` and ``alerts`` answer per run, ``all_stopped`` for the group;
    ``finish()`` returns one :class:`~aoff.FinishReport` per run.
    """

    def __init__(
        self,
        runs: int | Sequence[int],
        log_dir: str | os.PathLike[str],
        *,
        name: str | None = None,
        algo_name: str = "RL",
        env_name: str = "",
        max_iterations: int = SEED_MAX_ITERATIONS,
        num_envs: int = 0,
        log_backend: str = "tensorboard",
        backends: Sequence[BackendSpec] = (),
        config: Mapping[str, Any] | None = None,
        rules: Sequence[Rule] | None = None,
        capacity: int = DEFAULT_CAPACITY,
        overflow: Overflow = "drop_oldest",
        finish_timeout: float = 10.0,
        flush_secs: float = 2.0,
        display: DisplayName = "none",
        refresh_per_second: int = 4,
        system_interval: float = DEFAULT_SYSTEM_INTERVAL,
        pump: PumpMode = "process",
        agent_nice: int = DEFAULT_AGENT_NICE,
    ) -> None:
        if pump not in PUMP_MODES:
            raise ValueError(f"pump must be one of {PUMP_MODES}, got {pump!r}")
        self.seeds = _seeds(runs)
        self.runs = len(self.seeds)
        if not log_dir:
            raise ValueError("RunGroup needs a log_dir: each run gets its folder there")
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        if "seed" in (config or {}):
            raise ValueError("config: the group sets each run's 'seed' itself; leave it out")
        self.name = name if name is not None else (algo_name or "run")
        if not isinstance(self.name, str) or not self.name or os.sep in self.name:
            raise ValueError(f"name must be a non-empty folder name, got {self.name!r}")
        self.log_dir = os.fspath(log_dir)
        self.run_dirs = tuple(
            os.path.join(self.log_dir, run_folder_name(self.name, s)) for s in self.seeds
        )
        options = []
        for k, (seed, run_dir) in enumerate(zip(self.seeds, self.run_dirs, strict=True)):
            opts = Options.of(
                {
                    "algo_name": algo_name,
                    "env_name": env_name,
                    "max_iterations": max_iterations,
                    "num_envs": num_envs,
                    "log_dir": run_dir,
                    "log_backend": log_backend,
                    "backends": backends,
                    "config": {**(config or {}), "seed": seed},
                    "rules": rules,
                    "capacity": capacity,
                    "overflow": "drop_oldest",  # the group's intake applies the policy
                    "finish_timeout": finish_timeout,
                    "flush_secs": flush_secs,
                    "display": "none",
                    "refresh_per_second": refresh_per_second,
                    # one process: its CPU and memory are sampled once, in the first run
                    "system_interval": system_interval if k == 0 else 0.0,
                    "pump": pump,
                    "agent_nice": agent_nice,
                }
            )
            opts.backend_names()  # bad names fail here
            options.append(opts)
        if options[0].hparams_converted:
            names = ", ".join(k for k, _ in options[0].hparams_converted)
            warnings.warn(f"aoff: config values stored as str(): {names}", AoffWarning, 2)
        self._options = options
        self._intake = GroupBuffer(capacity, overflow)
        self._put = self._intake.put
        self._clock = options[0].now
        self._stop_lock = threading.Lock()
        self._reports: tuple[FinishReport, ...] | None = None
        self._stopping = False
        self._alerts: list[tuple[Alert, ...]] = [() for _ in self.seeds]
        self._stopped = [False] * self.runs
        if display not in ("none", "plain", "rich"):
            raise ValueError(f"display must be 'none', 'plain' or 'rich', got {display!r}")
        self._display = display
        self._refresh = refresh_per_second
        line = options[0].in_process_line()
        if line is not None:  # e.g. a Backend object in backends=: it lives here
            say_to_stderr(line)
        #: where the runs' pumps run: "process" (the group's agent) or "thread"
        self.pump: PumpMode = "thread" if pump == "thread" or line is not None else "process"
        self._pump: GroupPump | None = None
        self._driver = self._start()
        _live_groups.add(self)
        _install_sigterm()  # SIGTERM raises SystemExit(143): the exit hook drains the runs

    def _start(self) -> _GroupDriver:
        from .._pump._grouppump import GroupSpec, group_pump

        def on_alert(k: int, alert: Alert) -> None:
            self._alerts[k] = (*self._alerts[k], alert)
            if alert.stop:
                self._stopped[k] = True

        spec = GroupSpec(
            self._options,
            [os.path.basename(d) for d in self.run_dirs],
            f"{self.name}: {self.runs} runs",
            self._display,
            self._refresh,
        )
        if self.pump == "process":
            from ._groupside import GroupAgentSide

            return GroupAgentSide(spec, self._intake, on_alert)
        self._pump = group_pump(spec, self._intake, on_alert).start_thread()
        return _ThreadDriver(self._pump)

    # -- the hot path ---------------------------------------------------------------------------
    def log_step(
        self,
        step: Any,
        metrics: Mapping[str, Any] | None = None,
        reward: Any = None,
        *,
        axes: Mapping[str, Any] | None = None,
    ) -> None:
        """One step of every run: ``step``, each value and each axis one number per run
        (leading axis of length ``runs``) or one for all. Checked and copied here;
        returns at once."""
        self._put(take_batch(self.runs, self._clock(), step, metrics, reward, axes))

    def _log_block(self, steps: Any, metrics: Mapping[str, Any]) -> None:
        """``K`` steps of every run at once, in order: ``steps`` and each metric of shape
        ``(K, runs)`` (row ``j``: the ``j``-th step of every run), as ``K`` calls of
        :meth:`log_step` would log them, checked and copied once a value
        (``aoff.jax.log_many``'s host side). Floats go through the group's buffer as one
        item, which its overflow policy counts as ``K`` steps; other dtypes as ``K``
        items."""
        wall = self._clock()
        whole = take_block_whole(self.runs, wall, steps, metrics)
        if whole is None:
            for item in take_block(self.runs, wall, steps, metrics):
                self._put(item)
        elif self._stopping:
            self._after_close(whole)
        else:
            self._intake.put_block(whole, whole[2].shape[1])

    def log_status(self, status: str) -> None:
        """Every run's status text."""
        self._put((ev.STATUS, self._clock(), str(status)))

    def log_collector(
        self, total_steps: Any, buffer_size: Any = 0, *, axes: Mapping[str, Any] | None = None
    ) -> None:
        """Each run's total env steps, replay-buffer size and ``axes=`` (the collector's
        clocks, e.g. ``policy_version``): one per run, or one for all."""
        steps = batch_of("log_collector: total_steps", total_steps, self.runs)
        size = batch_of("log_collector: buffer_size", buffer_size, self.runs)
        ax = batch_axes("log_collector", axes, self.runs)
        per_run_axes = ax is not None and any(type(v) is list for v in ax.values())
        if type(steps) is not list and type(size) is not list and not per_run_axes:
            event: ev.Event = (ev.COLLECTOR, self._clock(), steps, size, 0.0)
            self._put(event if ax is None else (*event, ax))  # the axes: optional field
            return
        t = self._clock()
        per_run = []  # one item still: its events, one per run, in order with the steps
        for k in range(self.runs):
            event = (
                ev.COLLECTOR,
                t,
                steps[k] if type(steps) is list else steps,
                size[k] if type(size) is list else size,
                0.0,
            )
            per_run.append(event if ax is None else (*event, axes_at(ax, k)))
        self._put((PER_RUN, per_run))

    # -- what the runs' rules saw ------------------------------------------------------------------
    @property
    def alerts(self) -> tuple[tuple[Alert, ...], ...]:
        """Per run, what its rules saw so far, oldest first."""
        return tuple(self._alerts)

    @property
    def should_stop(self) -> tuple[bool, ...]:
        """Per run: True once a rule made with ``stop=True`` fired in that run."""
        return tuple(self._stopped)

    @property
    def all_stopped(self) -> bool:
        """True once every run's ``should_stop`` is."""
        return all(self._stopped)

    def states(self) -> list[RunView]:
        """Each run's live state, as the read-only :class:`~aoff.RunView` (for the
        group's table): only with ``pump="thread"``, where the states live in this
        process."""
        if self._pump is None:
            raise RuntimeError(
                "RunGroup.states(): the runs' states live in the group's agent process; "
                "pump='thread' keeps them in this one"
            )
        return [c.state for c in self._pump.cores]

    # -- the calls that wait ----------------------------------------------------------------------
    def flush(self) -> None:
        """Block until every run wrote and flushed everything logged so far."""
        if not self._stopping:
            self._driver.flush(self._options[0].finish_timeout + 5.0)

    def finish(self) -> tuple[FinishReport, ...]:
        """Drain every run, close their backends; one report per run (idempotent).

        A group step dropped by the overflow policy counts as one dropped event in
        every run's report (a ``log_many`` block dropped whole: its ``K`` steps)."""
        return self._stop(interrupted=False)

    def close(self) -> tuple[FinishReport, ...]:
        """The same as :meth:`finish` (a group prints no summary panel)."""
        return self._stop(interrupted=False)

    def _stop(self, *, interrupted: bool) -> tuple[FinishReport, ...]:
        if self._reports is None:
            for before in BEFORE_STOP:
                before()
        with self._stop_lock:
            if self._reports is not None:
                return self._reports
            self._stopping = True
            self._put = self._after_close
            opts = self._options[0]
            final = ev.finish_event(self._clock(), "Training Summary", "", interrupted)
            reports = self._driver.stop(final, True, opts.finish_timeout + 5.0)
            lost = self._intake.dropped
            for r in reports:
                r.dropped_events += lost
            self._reports = tuple(reports)
            _live_groups.discard(self)
            return self._reports

    def _after_close(self, item: object) -> None:
        warnings.warn(
            "aoff: RunGroup call after finish(); the event was not recorded",
            AoffWarning,
            stacklevel=3,
        )

    def __enter__(self) -> RunGroup:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self._stop(interrupted=exc_type is not None)


class _ThreadDriver:
    """The pump thread as a :class:`_GroupDriver` (it always progresses or ends, so a
    flush needs no bound)."""

    def __init__(self, pump: GroupPump) -> None:
        self.pump = pump

    def flush(self, idle_timeout: float) -> None:
        self.pump.flush()

    def stop(self, final: Event, summary: bool, idle_timeout: float) -> list[FinishReport]:
        return self.pump.stop(final, summary, idle_timeout)


def _exit_hook() -> None:
    """Drain every group still open at interpreter exit."""
    for group in list(_live_groups):
        with contextlib.suppress(Exception, KeyboardInterrupt, SystemExit):
            group._stop(interrupted=True)


_reg = getattr(threading, "_register_atexit", None)
if _reg is not None:  # before worker threads are refused (as the sync face's hook)
    import concurrent.futures.thread  # noqa: F401

    _reg(_exit_hook)
del _reg
