"""Named backends: one table of name → how to build it, and what the run folder must know.

Why a table: ``backends=("jsonl", ...)`` and ``log_backend=`` name backends, and the
options check the names, build the backends in the agent, decide whether the run gets
a summary file, and refuse ``resume_step=`` where a backend cannot continue a run. Each
of those reads the same entry, so a new named backend is its module plus one line here
(docs/architecture.md, "Adding a named backend"); the errors list the names registered.

A :class:`NamedBackend` is plain data: its ``build`` is a module-level function (pickled
by reference), so the options that carry the entries they use rebuild the same
backends in the agent process, including one registered by the user's own module.
``format`` points at the run folder format it writes (``_runfolder/_format.py``):
registering the entry adds it to the format table the readers, resume and run discovery
iterate, and an append-only format needs no ``build`` (aoff's format file backend writes
it). The format object is pickled with the entry, by reference to its class's module, so
the agent imports the module that registered it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .._backends._base import Backend, Takes
from .._backends._tensorboardoptions import TensorBoardOptions
from .._backends._wandboptions import WandbOptions
from .._runfolder._format import AppendFormat, RunFormat
from .._runfolder.lines._csv import CSV_NAME
from .._runfolder.lines._formats import CSV, JSONL
from .._runfolder.lines._jsonl import JSONL_NAME
from .._runfolder.reading._formats import add_format, remove_format
from .._runfolder.tensorboard._format import TENSORBOARD

__all__ = [
    "BackendOptions",
    "NamedBackend",
    "entry",
    "names",
    "register",
    "said",
    "takers",
    "unregister",
]


class BackendOptions(Protocol):
    """What a named backend's ``build`` may read: the run's validated options."""

    @property
    def log_dir(self) -> str: ...
    @property
    def resume_step(self) -> int | None: ...
    def options_of(self, name: str) -> Any:
        """Backend ``name``'s own options: its entry's ``options`` type, built from
        ``backend_options={name: {...}}`` (its defaults when not given)."""
        ...


@dataclass(frozen=True)
class NamedBackend:
    """One registered backend."""

    #: the name in ``backends=`` (lower case)
    name: str
    #: builds the backend from the run's options (a module-level function: picklable);
    #: None: aoff's own backend of its append-only ``format``
    build: Callable[[BackendOptions], Backend] | None = None
    #: why it needs ``log_dir`` (the error says it), or None when it does not
    needs_log_dir: str | None = None
    #: the run folder format it writes in ``log_dir`` (read back by every reader)
    format: RunFormat | None = None
    #: whether ``resume_step=`` can continue a run with it
    resumable: bool = False
    #: the module it imports, checked (not imported) when the name is given
    requires: str | None = None
    #: the extra that installs ``requires``
    extra: str | None = None
    #: its own options' type (a frozen dataclass, checked when built), built from
    #: ``backend_options={name: {...}}``; ``build`` reads it as ``options_of(name)``.
    #: None: it takes none
    options: type[Any] | None = None
    #: what it writes besides steps: its class's ``takes``, known here before it is built
    #: (for the messages that name the backends taking a kind; ``tests/test_registry.py``
    #: checks that each entry says what its backend says)
    takes: Takes = Takes.NOTHING

    def __post_init__(self) -> None:
        if self.build is None and not isinstance(self.format, AppendFormat):
            raise ValueError(
                f"backend {self.name!r}: give build=, or format= an append-only format "
                "(file_name and encode)"
            )

    def make(self, options: BackendOptions) -> Backend:
        """The backend, built from the run's options."""
        if self.build is not None:
            return self.build(options)
        from .._backends._formatfile import FormatFileBackend

        assert isinstance(self.format, AppendFormat)  # checked when made
        return FormatFileBackend(options.log_dir, self.format)

    def check(self, options: BackendOptions) -> None:
        """Raise the clear error when this backend cannot run with these options."""
        if self.needs_log_dir and not options.log_dir:
            raise ValueError(f"backends=({self.name!r}, ...) needs log_dir ({self.needs_log_dir})")
        if self.requires and importlib.util.find_spec(self.requires) is None:
            extra = self.extra or self.name
            raise ImportError(f"backends=({self.name!r}, ...) needs: pip install 'aoff[{extra}]'")
        if options.resume_step is not None and not self.resumable:
            raise ValueError(
                f"resume_step={options.resume_step}: the {self.name!r} backend cannot "
                "continue a run; leave it out of backends= to resume"
            )


def _tensorboard(o: BackendOptions) -> Backend:
    from .._backends._tensorboard import TensorBoardBackend

    t: TensorBoardOptions = o.options_of("tensorboard")
    purge = o.resume_step
    if purge is None and t.purge_step is not None:
        purge = t.purge_step - 1
    return TensorBoardBackend(o.log_dir, filename_suffix=t.filename_suffix, purge_after=purge)


def _jsonl(o: BackendOptions) -> Backend:
    from .._backends._jsonl import JsonlBackend

    return JsonlBackend(os.path.join(o.log_dir, JSONL_NAME))


def _csv(o: BackendOptions) -> Backend:
    from .._backends._csv import CsvBackend

    return CsvBackend(os.path.join(o.log_dir, CSV_NAME))


def _mlflow(o: BackendOptions) -> Backend:
    # where to: MLflow's environment variables (see _mlflow.py)
    from .._backends._mlflow import MlflowBackend

    return MlflowBackend(dir=o.log_dir or None, resume=o.resume_step is not None)


def _wandb(o: BackendOptions) -> Backend:
    from .._backends._wandb import WandbBackend

    w: WandbOptions = o.options_of("wandb")
    return WandbBackend(
        project=w.project,
        entity=w.entity,
        name=w.name,
        group=w.group,
        job_type=w.job_type,
        tags=list(w.tags) if w.tags is not None else None,
        notes=w.notes,
        dir=o.log_dir or None,
        x=w.x,
        resume=o.resume_step is not None,
    )


def _trackio(o: BackendOptions) -> Backend:
    from .._backends._trackio import TrackioBackend

    # trackio's ``init`` is W&B's: the W&B project, run name and group name the trackio run
    w: WandbOptions = o.options_of("wandb")
    return TrackioBackend(project=w.project, name=w.name, group=w.group)


#: the registered backends, by name, in the order the errors list them
_TABLE: dict[str, NamedBackend] = {}


def register(backend: NamedBackend) -> None:
    """Add a named backend (a name registered twice is an error, not a silent swap)."""
    name = backend.name
    if not name or name != name.lower():
        raise ValueError(f"a backend name is lower case and not empty, got {name!r}")
    if name in _TABLE and _TABLE[name] != backend:
        raise ValueError(f"a backend named {name!r} is registered already")
    if backend.format is not None:
        add_format(backend.format)
    _TABLE[name] = backend


def unregister(name: str) -> None:
    """Take a registered name out (a test's throwaway backend), and its format unless
    another entry writes it too."""
    gone = _TABLE.pop(name, None)
    fmt = None if gone is None else gone.format
    if fmt is not None and all(e.format != fmt for e in _TABLE.values()):
        remove_format(fmt.name)


def names() -> tuple[str, ...]:
    """The registered names, in order."""
    return tuple(_TABLE)


def takers(kind: Takes) -> tuple[str, ...]:
    """The registered names whose backend takes ``kind``, in order."""
    return tuple(n for n, e in _TABLE.items() if e.takes & kind)


def said(names: tuple[str, ...]) -> str:
    """Names as a message lists them: ``'a', 'b' and 'c'``."""
    quoted = [repr(n) for n in names]
    if len(quoted) < 2:
        return "".join(quoted) or "none"
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def entry(name: str) -> NamedBackend:
    """The registered backend of this name; the error lists every name there is."""
    found = _TABLE.get(name)
    if found is None:
        known = ", ".join(repr(n) for n in _TABLE)
        raise ValueError(f"unknown backend {name!r}: use {known} or a Backend object")
    return found


register(
    NamedBackend(
        "tensorboard",
        _tensorboard,
        "TensorBoard files go into it",
        TENSORBOARD,
        resumable=True,
        options=TensorBoardOptions,
        takes=Takes.TEXTS | Takes.MEDIA | Takes.HPARAMS,
    )
)
register(
    NamedBackend(
        "jsonl",
        _jsonl,
        f"writes log_dir/{JSONL_NAME}",
        JSONL,
        True,
        takes=Takes.TEXTS | Takes.MEDIA,
    )
)
register(NamedBackend("csv", _csv, f"writes log_dir/{CSV_NAME}", CSV, True, takes=Takes.MEDIA))
register(
    NamedBackend(
        "wandb",
        _wandb,
        resumable=True,
        options=WandbOptions,
        takes=Takes.ALERTS | Takes.MEDIA | Takes.HPARAMS,
    )
)
register(
    NamedBackend(
        "mlflow",
        _mlflow,
        resumable=True,
        requires="mlflow",
        takes=Takes.MEDIA | Takes.HPARAMS,
    )
)
register(NamedBackend("trackio", _trackio, requires="trackio", takes=Takes.MEDIA | Takes.HPARAMS))
