"""Every constructor argument of both faces, validated once, as one frozen value.

Why a frozen dataclass: the pump may run in another process (the agent), and what it
needs to rebuild the run there is exactly this value, pickled. Both faces build it in
one place (:meth:`Options.of`, from the public constructor's arguments), so the two
faces cannot drift apart and no list of arguments is written twice.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from .._backends._base import Backend
from .._backends._wandboptions import DEFAULT_WANDB_PROJECT
from .._core._buffer import DEFAULT_CAPACITY, OVERFLOW_POLICIES, Overflow
from .._core._config import ConfigValue, flatten_config
from .._core._records import RunConfig, SeedDefault
from .._core._rules import DEFAULT_RULES, Rule, check_rules
from .._media._calls import DEFAULT_MEDIA_BUDGET, check_media_budget
from . import _registry
from ._ranks import RANK_MODES, RankMode
from ._registry import NamedBackend
from ._sysmetrics import DEFAULT_INTERVAL as DEFAULT_SYSTEM_INTERVAL

if TYPE_CHECKING:
    from rich.console import Console

    from .._display._api import Display

BackendSpec = str | Backend
PumpMode = Literal["process", "thread"]
PUMP_MODES: tuple[PumpMode, ...] = ("process", "thread")
#: the keywords that are one backend's own option: the original logger's W&B keywords
#: (``WandbOptions``), ``wandb_project="p"`` is ``backend_options={"wandb": {"project":
#: "p"}}``, and ``SummaryWriter``'s TensorBoard ones (``TensorBoardOptions``), a
#: conversion documented on the faces; one given both ways with two values is an error
SEED_BACKEND_KEYWORDS: dict[str, tuple[str, str]] = {
    "wandb_project": ("wandb", "project"),
    "wandb_entity": ("wandb", "entity"),
    "wandb_name": ("wandb", "name"),
    "wandb_group": ("wandb", "group"),
    "wandb_job_type": ("wandb", "job_type"),
    "wandb_tags": ("wandb", "tags"),
    "wandb_notes": ("wandb", "notes"),
    "wandb_x": ("wandb", "x"),
    "tb_filename_suffix": ("tensorboard", "filename_suffix"),
    "tb_purge_step": ("tensorboard", "purge_step"),
}
#: ``log_backend=`` values that open no backend: ``"none"`` the dashboard only (the seed
#: took any unknown name so; aoff refuses a misspelt one), ``"no_print"`` nothing at all
DISPLAY_ONLY = ("none", "no_print")
#: the agent's niceness above the training process's (``agent_nice=``). A niced agent
#: leaves the training loop the CPU under contention (the flood benchmark's tail: p99
#: +48/+105 % at 10 against +209/+385 % at 0), but it falls behind a flood on a busy
#: machine: its receiver can fall behind a flat-out loop, whose buffer then drops by its
#: policy (docs/reference/performance.md, "The agent's priority"). So 0 by default; 10
#: is the user's choice
DEFAULT_AGENT_NICE = 0
#: the most a process can be niced (Linux: 19); raising priority (< 0) needs privileges
MAX_NICE = 19


#: ``display=`` by name (picklable: the agent builds it): no dashboard, plain status
#: lines, the Rich panel (plain lines where the output is not a terminal, as by default)
DisplayName = Literal["none", "plain", "rich"]
DISPLAY_NAMES: tuple[DisplayName, ...] = ("none", "plain", "rich")


def _is_null_display(display: object) -> bool:
    from .._display._api import NullDisplay

    return type(display) is NullDisplay


#: what keeps the pump in this process, as the line says it
_WHAT = {
    "console=": "the Console given as console=",
    "display=": "the display= object",
    "clock=": "the clock= function",
}
#: how to keep the pump in the agent, for each argument that keeps it in this process
_AVOID = {
    "console=": "use display='rich' or 'plain' instead of a Console",
    "display=": "use display='none', 'plain' or 'rich' instead of an object",
    "clock=": "leave it out: an injected clock is for tests",
    "__main__": "register it from a module the agent can import (not the script itself)",
    "backends=": "name it ({names}) with its options in the constructor, or pass an "
    "unopened aoff backend",
}


@dataclass(frozen=True, kw_only=True)
class Options:
    """The validated arguments (see ``OffPolicyLogger`` for what each means)."""

    #: the seed's run description (algo, env, sizes): what the dashboard and backends show
    config: RunConfig = field(default_factory=RunConfig)
    refresh_per_second: float = 4.0
    log_dir: str = ""
    log_backend: str = "tensorboard"
    wandb_project: str = DEFAULT_WANDB_PROJECT
    wandb_entity: str | None = None
    wandb_name: str = ""
    wandb_group: str | None = None
    wandb_job_type: str | None = None
    wandb_tags: tuple[str, ...] | None = None
    wandb_notes: str | None = None
    #: the axis W&B charts every metric on (``WandbBackend(x=)``); None: W&B's step
    wandb_x: str | None = None
    backends: tuple[BackendSpec, ...] = ()
    #: each named backend's own options, by its name (``{"wandb": {"project": "p"}}``):
    #: built here into its registry entry's ``options`` type (with the W&B keywords
    #: above converted into W&B's), read by its ``build`` through :meth:`options_of`
    backend_options: Mapping[str, Any] | None = None
    capacity: int = DEFAULT_CAPACITY
    overflow: Overflow = "drop_oldest"
    finish_timeout: float = 10.0
    flush_secs: float = 2.0
    console: Console | None = field(default=None, compare=False)
    display: Display | DisplayName | None = field(default=None, compare=False)
    clock: Callable[[], float] | None = field(default=None, compare=False)
    handle_sigterm: bool = True
    pump: PumpMode = "process"
    #: which torchrun ranks log (``_ranks.py``): rank 0 only, or each in ``rank<N>``
    ranks: RankMode = "zero"
    #: the constructor's ``config=``, flattened and JSON-safe (see ``_core/_config.py``)
    hparams: dict[str, ConfigValue] = field(default_factory=dict)
    #: values of ``config=`` stored as ``str()``: ``(key, type name)``, for the one warning
    hparams_converted: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    #: continue the run in ``log_dir`` after this step (see ``_resume.py``)
    resume_step: int | None = None
    #: seconds between system-metric samples (``_sysmetrics.py``); 0 turns them off
    system_interval: float = DEFAULT_SYSTEM_INTERVAL
    #: the process whose CPU/memory/GPU use is sampled: the one that built these options
    #: (pickled as is to the agent, which watches it from there)
    training_pid: int = field(default_factory=os.getpid, compare=False)
    #: ``aoff.tensorboard.SummaryWriter``'s ``filename_suffix`` and ``purge_step``: the
    #: TensorBoard backend's own options (``TensorBoardOptions``), converted into them
    tb_filename_suffix: str = ""
    tb_purge_step: int | None = None
    #: bytes of image/video frames accepted but not yet encoded (``_media/_calls.py``)
    media_budget: int = DEFAULT_MEDIA_BUDGET
    #: how much nicer than the training process the agent runs (``pump="process"``)
    agent_nice: int = DEFAULT_AGENT_NICE
    #: the registry's entries for the names given, resolved here: the agent builds the
    #: backends from these (``_registry.py``), so one registered in this process is known
    named: tuple[NamedBackend, ...] = field(default=(), compare=False)
    #: each step record has the original logger's scaffolding tags (done rates, learner
    #: times, ``perf/iter_ms``) whether or not they were logged: the faces' parity with
    #: it. The adapters (``aoff.sb3``) turn it off: they write only what their calls carry
    seed_tags: bool = True
    #: the rules the run watches itself with (``aoff.rules``; None: the defaults)
    rules: tuple[Rule, ...] | None = DEFAULT_RULES
    #: the run description's fields left at the original logger's defaults (not given)
    unset: tuple[str, ...] = ()
    #: the face wrote the run description itself (``SummaryWriter``: algo
    #: ``"SummaryWriter"``, the folder as env): a backend that takes only what the user
    #: configured (trackio) takes none of it
    own_description: bool = False
    #: where each alert is POSTed as JSON, and the command run with it on stdin
    webhook: str | None = field(default=None, repr=False)  # a hook's URL is its secret
    command: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        """Each field checked (a clear error naming the first bad one) and put in its one
        form: what and where the run writes, how its buffer and pump run, what it
        watches, where it resumes."""
        self._check_run()
        self._check_outputs()
        self._check_running()
        self._check_watching()
        n = self.resume_step
        if n is not None:
            if isinstance(n, bool) or not isinstance(n, int):
                got = type(n).__name__
                raise ValueError(f"resume_step must be an int step (or None), got {n!r} ({got})")
            if n < 0:
                raise ValueError(f"resume_step must be >= 0, got {n}")
        given = [self.log_backend, *(b.lower() for b in self.backends if isinstance(b, str))]
        known = [_registry.entry(g) for g in dict.fromkeys(given) if g in _registry.names()]
        self._fix("named", tuple(known))

    def _fix(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)  # frozen: the one form, set once

    def _check_run(self) -> None:
        """The run description's types: a string where a name goes, an int where a count
        goes (``max_iterations="100"`` fails here, not in the dashboard's formatting)."""
        for f in fields(RunConfig):
            value = getattr(self.config, f.name)
            got = type(value).__name__
            if f.type == "str" and not isinstance(value, str):
                raise TypeError(f"{f.name} must be a str, got {value!r} ({got})")
            if f.type == "int":
                if isinstance(value, bool) or not hasattr(value, "__index__"):
                    raise TypeError(f"{f.name} must be an int, got {value!r} ({got})")
                if operator.index(value) < 0:
                    raise ValueError(f"{f.name} must be >= 0, got {value!r}")
                if isinstance(value, SeedDefault):  # not given: kept, never shown
                    self._fix("unset", (*self.unset, f.name))
                setattr(self.config, f.name, operator.index(value))  # a NumPy int as int

    def _check_outputs(self) -> None:
        """The display rate, the backends and where they write."""
        r = self.refresh_per_second
        if isinstance(r, bool) or not isinstance(r, int | float) or not r > 0:
            raise ValueError(f"refresh_per_second must be > 0, got {r!r}")
        self._fix("refresh_per_second", float(r))
        if not isinstance(self.log_backend, str):
            got = type(self.log_backend).__name__
            raise TypeError(f"log_backend must be a str, got {got}")
        self._fix("log_backend", self.log_backend.lower())
        if self.log_backend not in (*_registry.names(), *DISPLAY_ONLY):
            known = ", ".join(repr(n) for n in (*_registry.names(), *DISPLAY_ONLY))
            raise ValueError(f"unknown log_backend {self.log_backend!r}: use {known}")
        self._fix("log_dir", os.fspath(self.log_dir) if self.log_dir else "")
        if isinstance(self.backends, str | bytes):
            raise TypeError("backends must be a sequence, e.g. backends=('jsonl',)")
        self._fix("backends", tuple(self.backends))
        for spec in self.backends:
            if not isinstance(spec, str | Backend):
                raise TypeError(f"backends: {spec!r} is neither a name nor a Backend")
        if self.wandb_tags is not None:
            self._fix("wandb_tags", tuple(self.wandb_tags))
        self._fix("backend_options", self._own_options())

    def _own_options(self) -> dict[str, Any]:
        """``backend_options=`` checked and built, by backend name: a name registered,
        whose entry takes options, and a dict of them (or its options object already);
        the W&B keywords (:data:`SEED_BACKEND_KEYWORDS`) go in as W&B's own."""
        given = {} if self.backend_options is None else self.backend_options
        if not isinstance(given, Mapping):
            raise TypeError(
                "backend_options must be a dict by backend name, e.g. "
                f"backend_options={{'wandb': {{'project': 'p'}}}}, got {given!r:.60}"
            )
        raw: dict[str, Any] = {}
        for name, value in given.items():
            e = _registry.entry(name) if isinstance(name, str) else None
            if e is None or e.options is None:
                takers = _registry.said(
                    tuple(n for n in _registry.names() if _registry.entry(n).options)
                )
                raise ValueError(f"backend_options: {name!r} takes no options (these do: {takers})")
            if not isinstance(value, Mapping | e.options):
                raise TypeError(
                    f"backend_options[{name!r}] must be a dict of its options or a "
                    f"{e.options.__name__}, got {value!r:.60}"
                )
            raw[name] = value
        for keyword, (name, option) in SEED_BACKEND_KEYWORDS.items():
            value = getattr(self, keyword)
            if value == _DEFAULTS[keyword]:
                continue
            mine = raw.get(name)
            if isinstance(mine, Mapping):
                if option in mine and mine[option] != value:
                    raise ValueError(
                        f"{keyword}={value!r} and backend_options={{{name!r}: {{{option!r}: "
                        f"{mine[option]!r}}}}} disagree: give it one way"
                    )
                raw[name] = {**mine, option: value}
            elif mine is None:
                raw[name] = {option: value}
            elif getattr(mine, option) != value:
                raise ValueError(
                    f"{keyword}={value!r} and backend_options[{name!r}].{option}="
                    f"{getattr(mine, option)!r} disagree: give it one way"
                )
        out: dict[str, Any] = {}
        for name, value in raw.items():
            kind = _registry.entry(name).options
            assert kind is not None  # checked above
            if isinstance(value, kind):
                out[name] = value
                continue
            try:
                out[name] = kind(**value)
            except TypeError as exc:  # an option it does not have
                known = ", ".join(f.name for f in fields(kind))
                raise ValueError(
                    f"backend_options[{name!r}]: {exc}; its options are {known}"
                ) from None
        return out

    def options_of(self, name: str) -> Any:
        """Backend ``name``'s own options (its entry's ``options`` type; see
        :attr:`backend_options`): as given, else its defaults."""
        got = self.backend_options.get(name) if self.backend_options else None
        if got is not None:
            return got
        kind = self._entry(name).options
        return None if kind is None else kind()

    def _check_running(self) -> None:
        """The buffer, the display, the pump and its rates, the media budget."""
        c = self.capacity
        if not isinstance(c, int) or isinstance(c, bool) or c < 1:
            raise ValueError(f"capacity must be a positive int, got {c!r}")
        if self.overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {OVERFLOW_POLICIES}, got {self.overflow!r}")
        if isinstance(self.display, str) and self.display not in DISPLAY_NAMES:
            raise ValueError(
                f"display must be one of {DISPLAY_NAMES} or a Display, got {self.display!r}"
            )
        if self.pump not in PUMP_MODES:
            raise ValueError(f"pump must be one of {PUMP_MODES}, got {self.pump!r}")
        if self.ranks not in RANK_MODES:
            raise ValueError(f"ranks must be one of {RANK_MODES}, got {self.ranks!r}")
        for name in ("finish_timeout", "flush_secs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float):
                got = type(v).__name__
                raise TypeError(f"{name} must be a number of seconds, got {v!r} ({got})")
            if not v >= 0:
                raise ValueError(f"{name} must be >= 0 seconds, got {v!r}")
            self._fix(name, float(v))
        si = self.system_interval
        if isinstance(si, bool) or not isinstance(si, int | float) or not si >= 0:
            raise ValueError(f"system_interval must be a number of seconds >= 0, got {si!r}")
        self._fix("system_interval", float(si))
        check_media_budget(self.media_budget)
        nice = self.agent_nice
        if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= MAX_NICE:
            raise ValueError(f"agent_nice must be an int from 0 to {MAX_NICE}, got {nice!r}")

    def _check_watching(self) -> None:
        """The rules, and where their alerts go (a webhook, a command)."""
        self._fix("rules", check_rules(self.rules))
        hook = self.webhook
        if hook is not None and (
            not isinstance(hook, str) or not hook.startswith(("http://", "https://"))
        ):
            # not echoed: a hook's URL is its secret, and a mistyped one may be as well
            got = "a str" if isinstance(hook, str) else type(hook).__name__
            raise ValueError(f"webhook must be an http:// or https:// URL, got {got} that is not")
        cmd = self.command
        if cmd is not None:
            if isinstance(cmd, str | bytes):
                raise TypeError("command must be a list of strings, e.g. command=['notify', '-u']")
            cmd = tuple(cmd)
            if not cmd or not all(isinstance(c, str) for c in cmd):
                raise TypeError(f"command must be a non-empty list of strings, got {cmd!r}")
            self._fix("command", cmd)

    @classmethod
    def of(cls, args: Mapping[str, Any]) -> Options:
        """From a face constructor's ``locals()``: the names are the fields' names, and
        :class:`RunConfig`'s for the run description."""
        config = RunConfig(**{f.name: args[f.name] for f in fields(RunConfig) if f.name in args})
        # ``config=`` is the user's hyperparameters; the field named ``config`` is the run
        # description, so the user's goes to ``hparams``
        skip = ("config", "hparams", "hparams_converted")
        kw = {f.name: args[f.name] for f in fields(cls) if f.name in args and f.name not in skip}
        hparams, converted = flatten_config(args.get("config"), "config")
        return cls(config=config, hparams=hparams, hparams_converted=tuple(converted), **kw)

    # -- derived -----------------------------------------------------------------------------
    def shown_config(self) -> RunConfig:
        """The run description as the dashboard, the summary and ``aoff show`` tell it: a
        field the user did not give is 0 there (not known), not the original's default."""
        shown = dataclasses.replace(self.config)
        for name in self.unset:
            setattr(shown, name, 0)
        return shown

    @property
    def now(self) -> Callable[[], float]:
        """The wall clock for events and records."""
        return self.clock or time.time

    @property
    def monotonic(self) -> Callable[[], float]:
        """The clock for throttling: ``time.monotonic``, or the injected test clock."""
        return self.clock or time.monotonic

    def in_process_only(self) -> str | None:
        """Why the pump cannot run in the agent process (None: it can).

        Objects given to the constructor (a console, a display, a clock, Backend
        objects) live in this process; the agent rebuilds everything else from names.
        """
        if self.console is not None:
            return "console="
        d = self.display
        if d is not None and not isinstance(d, str) and not _is_null_display(d):
            return "display="  # a name or NullDisplay holds nothing: the agent makes its own
        if self.clock is not None:
            return "clock="
        # a backend that is plain data until opened (``portable``: MlflowBackend, aoff's
        # own file backends unopened) is pickled to the agent with these options
        for b in self.backends:
            if not isinstance(b, str) and not getattr(b, "portable", False):
                return f"a {type(b).__name__} object in backends="
        # the agent unpickles a registered backend's build function by its module's
        # name: the training script's own ``__main__`` is not one it can import
        for e in self.named:
            if getattr(e.build, "__module__", None) == "__main__":
                return f"the build function of backend {e.name!r}, defined in __main__"
            if e.format is not None and type(e.format).__module__ == "__main__":
                return f"the format of backend {e.name!r}, defined in __main__"
        return None

    def in_process_line(self) -> str | None:
        """The one line that says why ``pump="process"`` runs the pump in this process,
        and how to avoid it (None: it does not)."""
        why = self.in_process_only() if self.pump == "process" else None
        if why is None:
            return None
        names = ", ".join(repr(n) for n in _registry.names())
        avoid = _AVOID[why.rsplit(" ", 1)[-1]].format(names=names)
        what = _WHAT.get(why, why.replace(" object in", " in"))
        return (
            f"aoff: the pump runs in this process, not in its agent: {what} lives here. "
            f"To run it in the agent, {avoid} (pump='thread' picks this mode without "
            "this line)"
        )

    def stop_rules(self) -> bool:
        """Whether a rule may stop the loop (``stop=True``): the training process then
        hears alerts within a few hundredths of a second, not a second."""
        return any(r.stop for r in self.rules or ())

    def custom_display(self) -> bool:
        """Whether ``display=`` replaces the default dashboard (no live panel to forward
        printed text to)."""
        return self.display is not None and self.display != "rich"

    def backend_names(self) -> list[str]:
        """The seed's ``log_backend`` rule plus the ``backends=`` names, deduplicated."""
        if self.log_backend == "no_print":
            return []
        wanted: list[str] = []
        lb = self.log_backend
        # the seed's rule: TensorBoard only with a log_dir; any other registered name too
        if lb not in DISPLAY_ONLY and (lb != "tensorboard" or self.log_dir):
            wanted.append(lb)
        wanted.extend(b.lower() for b in self.backends if isinstance(b, str))
        out: list[str] = []
        for name in wanted:
            self._entry(name).check(self)
            if name not in out:
                out.append(name)
        return out

    def _entry(self, name: str) -> NamedBackend:
        """The registered backend ``name`` (as resolved when these options were made)."""
        for e in self.named:
            if e.name == name:
                return e
        return _registry.entry(name)  # the error lists the registered names

    def writes_files(self) -> bool:
        """Whether a named backend of this run writes its files into ``log_dir``."""
        return bool(self.log_dir) and any(
            self._entry(n).needs_log_dir for n in self.backend_names()
        )

    def backend_objects(self) -> list[Backend]:
        """The backend objects given in ``backends=`` (none under the seed's ``no_print``)."""
        if self.log_backend == "no_print":
            return []
        return [b for b in self.backends if not isinstance(b, str)]

    def build_backends(self) -> list[Backend]:
        """The backends of this run, in order (named ones first, then objects)."""
        return [self._backend_from_name(n) for n in self.backend_names()] + self.backend_objects()

    def reported_names(self) -> tuple[str, ...]:
        """The names the run's report counts its backends under, in :meth:`build_backends`'
        order, known before any is built."""
        return (*self.backend_names(), *(b.name for b in self.backend_objects()))

    def _backend_from_name(self, name: str) -> Backend:
        return self._entry(name).make(self)

    def build_display(self) -> Display:
        if self.display is not None and not isinstance(self.display, str):
            return self.display
        if self.log_backend == "no_print" or self.display == "none":
            from .._display._api import NullDisplay

            return NullDisplay()
        from .._display._dashboard import Dashboard
        from ._turns import bounded

        # frames in pieces while a training loop shares the GIL (``_turns``)
        live = False if self.display == "plain" else None
        return Dashboard(self.console, live=live, pacing=bounded)


#: the W&B keywords' defaults: a keyword at its default was not given
_DEFAULTS = {f.name: f.default for f in fields(Options) if f.name in SEED_BACKEND_KEYWORDS}
