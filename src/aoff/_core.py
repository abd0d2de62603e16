"""What both faces share: argument handling, backend selection, and the pump's parts.

The sync and async faces differ only in how they run the pump and in the methods that
wait; everything decided from the constructor arguments is decided here, once.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Generic

from rich.console import Console

from . import _events as ev
from ._backend import Backend, BackendContext
from ._buffer import DEFAULT_CAPACITY, EventBuffer, Overflow
from ._display_api import Display, NullDisplay
from ._pump import Pump
from ._recorder import R, Recorder
from ._state import RunConfig, State

BackendSpec = str | Backend

DEFAULT_WANDB_PROJECT = "aoff"


def _backend_from_name(name: str, o: Options) -> Backend | None:
    key = name.lower()
    if key == "tensorboard":
        if not o.log_dir:
            raise ValueError(
                "backends=('tensorboard', ...) needs log_dir (TensorBoard files go into it)"
            )
        from ._tensorboard import TensorBoardBackend

        return TensorBoardBackend(o.log_dir, flush_secs=o.flush_secs)
    if key == "jsonl":
        if not o.log_dir:
            raise ValueError("backends=('jsonl', ...) needs log_dir (writes log_dir/metrics.jsonl)")
        from ._jsonl import JsonlBackend

        return JsonlBackend(os.path.join(o.log_dir, "metrics.jsonl"))
    if key == "wandb":
        from ._wandb import WandbBackend

        return WandbBackend(
            project=o.wandb_project,
            entity=o.wandb_entity,
            name=o.wandb_name,
            group=o.wandb_group,
            job_type=o.wandb_job_type,
            tags=o.wandb_tags,
            notes=o.wandb_notes,
            dir=o.log_dir or None,
        )
    raise ValueError(
        f"unknown backend {name!r}: use 'tensorboard', 'jsonl', 'wandb' or a Backend object"
    )


class Options:
    """The constructor arguments of both faces, validated."""

    def __init__(
        self,
        *,
        algo_name: str,
        max_iterations: int,
        num_envs: int,
        env_name: str,
        obs_dim: int,
        action_dim: int,
        refresh_per_second: float,
        log_dir: str | os.PathLike[str],
        log_backend: str,
        wandb_project: str,
        wandb_entity: str | None,
        wandb_name: str,
        wandb_group: str | None,
        wandb_job_type: str | None,
        wandb_tags: list[str] | None,
        wandb_notes: str | None,
        backends: Sequence[BackendSpec],
        capacity: int,
        overflow: Overflow,
        finish_timeout: float,
        flush_secs: float,
        console: Console | None,
        display: Display | None,
        clock: Callable[[], float] | None,
    ) -> None:
        self.config = RunConfig(
            algo_name=algo_name,
            max_iterations=max_iterations,
            num_envs=num_envs,
            env_name=env_name,
            obs_dim=obs_dim,
            action_dim=action_dim,
        )
        if not isinstance(refresh_per_second, int | float) or refresh_per_second <= 0:
            raise ValueError(f"refresh_per_second must be > 0, got {refresh_per_second!r}")
        if not isinstance(log_backend, str):
            raise TypeError(f"log_backend must be a str, got {type(log_backend).__name__}")
        if isinstance(backends, str | bytes):
            raise TypeError("backends must be a sequence, e.g. backends=('jsonl',)")
        self.refresh_per_second = float(refresh_per_second)
        self.log_dir = os.fspath(log_dir) if log_dir else ""
        self.log_backend = log_backend.lower()
        self.wandb_project = wandb_project
        self.wandb_entity = wandb_entity
        self.wandb_name = wandb_name
        self.wandb_group = wandb_group
        self.wandb_job_type = wandb_job_type
        self.wandb_tags = wandb_tags
        self.wandb_notes = wandb_notes
        self.capacity = capacity
        self.overflow: Overflow = overflow
        self.finish_timeout = float(finish_timeout)
        self.flush_secs = float(flush_secs)
        self.clock = clock or time.time
        self.console = console
        self.display = display
        self.extra_backends = tuple(backends)

    def build_backends(self) -> list[Backend]:
        """The seed's ``log_backend`` rule plus any ``backends=`` extras, deduplicated."""
        out: list[Backend] = []
        names: set[str] = set()
        if self.log_backend == "no_print":
            return out
        wanted: list[BackendSpec] = []
        if self.log_backend == "tensorboard" and self.log_dir:
            wanted.append("tensorboard")
        elif self.log_backend == "wandb":
            wanted.append("wandb")
        wanted.extend(self.extra_backends)
        for spec in wanted:
            if isinstance(spec, str):
                if spec.lower() in names:
                    continue
                names.add(spec.lower())
                backend = _backend_from_name(spec, self)
                if backend is not None:
                    out.append(backend)
            elif isinstance(spec, Backend):
                out.append(spec)
            else:
                raise TypeError(f"backends: {spec!r} is neither a name nor a Backend")
        return out

    def build_display(self) -> Display:
        if self.display is not None:
            return self.display
        if self.log_backend == "no_print":
            return NullDisplay()
        from ._dashboard import Dashboard

        return Dashboard(self.console)


class Core:
    """Buffer + state + pump, wired from :class:`Options`."""

    def __init__(self, options: Options, *, report: Callable[[str], None] | None = None) -> None:
        self.options = options
        self.buffer = EventBuffer(options.capacity, options.overflow)
        self.state = State(config=options.config)
        self.display = options.build_display()
        kw: dict[str, Any] = {}
        if report is not None:
            kw["report"] = report
        self.pump = Pump(
            self.buffer,
            self.state,
            options.build_backends(),
            self.display,
            refresh_per_second=options.refresh_per_second,
            clock=options.clock,
            finish_timeout=options.finish_timeout,
            flush_interval=options.flush_secs,
            **kw,
        )
        self.context = BackendContext(config=options.config, say=self.display.say)


class AoffWarning(UserWarning):
    """Misuse that aoff answers without raising (e.g. logging after ``finish()``)."""


def warn_not_recorded(event: ev.Event, when: str) -> None:
    """Warn, at the user's call site, that a call after closing was not recorded.

    ``stacklevel=4``: this function, the face's ``_after_close``, the logging method.
    """
    warnings.warn(
        f"aoff: {ev.name_of(event)}() called after {when}; the event was not recorded",
        AoffWarning,
        stacklevel=4,
    )


class Face(Recorder[R], Generic[R]):
    """The constructor both faces share, so their arguments cannot drift apart.

    Arguments up to ``wandb_notes`` are the seed logger's, with the same defaults (the
    W&B project defaults to ``"aoff"``); the rest are aoff's own, keyword-only. A face
    finishes its own set-up in :meth:`_setup_face` (how it runs the pump, signals).
    """

    def __init__(
        self,
        algo_name: str = "RL",
        max_iterations: int = 1500,
        num_envs: int = 4096,
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
        capacity: int = DEFAULT_CAPACITY,
        overflow: Overflow = "drop_oldest",
        finish_timeout: float = 10.0,
        flush_secs: float = 2.0,
        console: Console | None = None,
        display: Display | None = None,
        clock: Callable[[], float] | None = None,
        handle_sigterm: bool = True,
    ) -> None:
        self._options = Options(
            algo_name=algo_name,
            max_iterations=max_iterations,
            num_envs=num_envs,
            env_name=env_name,
            obs_dim=obs_dim,
            action_dim=action_dim,
            refresh_per_second=refresh_per_second,
            log_dir=log_dir,
            log_backend=log_backend,
            wandb_project=wandb_project,
            wandb_entity=wandb_entity,
            wandb_name=wandb_name,
            wandb_group=wandb_group,
            wandb_job_type=wandb_job_type,
            wandb_tags=wandb_tags,
            wandb_notes=wandb_notes,
            backends=backends,
            capacity=capacity,
            overflow=overflow,
            finish_timeout=finish_timeout,
            flush_secs=flush_secs,
            console=console,
            display=display,
            clock=clock,
        )
        self._core = Core(self._options)
        self.algo_name = algo_name
        self.max_iterations = max_iterations
        self.num_envs = num_envs
        self.env_name = env_name
        self.obs_dim = obs_dim
        self.action_dim = action_dim
        self._setup_face(handle_sigterm=handle_sigterm)

    def _setup_face(self, *, handle_sigterm: bool) -> None:
        raise NotImplementedError
