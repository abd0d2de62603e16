"""Named backends: one table of name → how to build it, and what the run folder must know.

Why a table: ``backends=("jsonl", ...)`` and ``log_backend=`` name backends, and the
options check the names, build the backends in the agent, decide whether the run gets
a summary file, and refuse ``resume_step=`` where a backend cannot continue a run. Each
of those reads the same entry, so a new named backend is its module plus one line here
(docs/architecture.md, "Adding a named backend"); the errors list the names registered.

A :class:`NamedBackend` is plain data: its ``build`` is a module-level function (pickled
by reference), so the options that carry the entries they use rebuild the same
backends in the agent process, including one registered by the user's own module.
``files`` stays a plain tuple of names in ``log_dir`` that the backend owns, for the
readers of the run folder.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .._backends._base import Backend
from .._runfolder.lines._csv import CSV_NAME
from .._runfolder.lines._jsonl import JSONL_NAME
from .._runfolder.tensorboard._files import EVENTS_PREFIX

__all__ = ["BackendOptions", "NamedBackend", "entry", "names", "register", "unregister"]


class BackendOptions(Protocol):
    """What a named backend's ``build`` may read: the run's validated options."""

    @property
    def log_dir(self) -> str: ...
    @property
    def resume_step(self) -> int | None: ...
    @property
    def tb_filename_suffix(self) -> str: ...
    @property
    def tb_purge_step(self) -> int | None: ...
    @property
    def wandb_project(self) -> str: ...
    @property
    def wandb_entity(self) -> str | None: ...
    @property
    def wandb_name(self) -> str: ...
    @property
    def wandb_group(self) -> str | None: ...
    @property
    def wandb_job_type(self) -> str | None: ...
    @property
    def wandb_tags(self) -> tuple[str, ...] | None: ...
    @property
    def wandb_notes(self) -> str | None: ...


@dataclass(frozen=True)
class NamedBackend:
    """One registered backend."""

    #: the name in ``backends=`` (lower case)
    name: str
    #: builds the backend from the run's options (a module-level function: picklable)
    build: Callable[[BackendOptions], Backend]
    #: why it needs ``log_dir`` (the error says it), or None when it does not
    needs_log_dir: str | None = None
    #: the file names it writes in ``log_dir`` (for the run folder's readers)
    files: tuple[str, ...] = ()
    #: whether ``resume_step=`` can continue a run with it
    resumable: bool = False
    #: the module it imports, checked (not imported) when the name is given
    requires: str | None = None
    #: the extra that installs ``requires``
    extra: str | None = None

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

    purge = o.resume_step
    if purge is None and o.tb_purge_step is not None:
        purge = o.tb_purge_step - 1
    return TensorBoardBackend(
        o.log_dir,
        filename_suffix=o.tb_filename_suffix,
        purge_after=purge,
    )


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

    return WandbBackend(
        project=o.wandb_project,
        entity=o.wandb_entity,
        name=o.wandb_name,
        group=o.wandb_group,
        job_type=o.wandb_job_type,
        tags=list(o.wandb_tags) if o.wandb_tags is not None else None,
        notes=o.wandb_notes,
        dir=o.log_dir or None,
        resume=o.resume_step is not None,
    )


def _trackio(o: BackendOptions) -> Backend:
    from .._backends._trackio import TrackioBackend

    # trackio's ``init`` is W&B's: the W&B project, run name and group name the trackio run
    return TrackioBackend(project=o.wandb_project, name=o.wandb_name, group=o.wandb_group)


#: the registered backends, by name, in the order the errors list them
_TABLE: dict[str, NamedBackend] = {}


def register(backend: NamedBackend) -> None:
    """Add a named backend (a name registered twice is an error, not a silent swap)."""
    name = backend.name
    if not name or name != name.lower():
        raise ValueError(f"a backend name is lower case and not empty, got {name!r}")
    if name in _TABLE and _TABLE[name] != backend:
        raise ValueError(f"a backend named {name!r} is registered already")
    _TABLE[name] = backend


def unregister(name: str) -> None:
    """Take a registered name out (a test's throwaway backend)."""
    _TABLE.pop(name, None)


def names() -> tuple[str, ...]:
    """The registered names, in order."""
    return tuple(_TABLE)


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
        (EVENTS_PREFIX + "*",),
        resumable=True,
    )
)
register(NamedBackend("jsonl", _jsonl, f"writes log_dir/{JSONL_NAME}", (JSONL_NAME,), True))
register(NamedBackend("csv", _csv, f"writes log_dir/{CSV_NAME}", (CSV_NAME,), True))
register(NamedBackend("wandb", _wandb, resumable=True))
register(NamedBackend("mlflow", _mlflow, resumable=True, requires="mlflow"))
register(NamedBackend("trackio", _trackio, requires="trackio"))
