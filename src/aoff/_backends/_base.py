"""The backend protocol the pump drives, and what a backend takes (:class:`Takes`).

A backend receives batches of records in order: the tagged union :data:`~aoff.Record`
(a :class:`~aoff.StepRecord`, a ``SummaryWriter`` call's :class:`~aoff.WriterRecord`, a
:class:`~aoff.TextRecord`), which its ``write`` ``match``es on. Every method is
``async`` so a backend can do its blocking work in a worker thread
(``anyio.to_thread.run_sync(..., abandon_on_cancel=True)``) or through aiofiles, and
never on the event loop that runs the pump (which, for the async face, is the training
runner's own loop). The pump isolates each backend: a raise or a hang in one never
reaches training or the other backends (see ``_runner.py``).

Media (``log_image``/``log_video``/``log_figure``) are optional: a backend that writes
them has ``media_formats`` (``{"image": "png", "video": "gif"}``: what the media encoder
makes for it) and ``async def write_media(items)``, which receives
:class:`~aoff._core._records.MediaRecord` s (key, step, wall time, shape and the encoded
bytes), one call an item, in order with its ``write`` calls. A backend without them is
never offered media.

What a backend takes besides steps is its ``takes`` (a :class:`Takes` flag set, a class
attribute): the pump reads it to route the run's alerts and media, and the registry's
entry repeats it so that a message can name the backends that take a kind before any is
built. Why flags and not names: a new backend says what it takes where it is written,
and nothing that routes or lists them is edited.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .._core._config import HParams
from .._core._records import Record, RunConfig
from .._runfolder._pieces import Pieces, whole


class Takes(enum.Flag):
    """What a backend writes besides step records (its ``takes``)."""

    NOTHING = 0
    #: ``SummaryWriter.add_text``'s texts (:class:`~aoff.TextRecord`), and so the run's
    #: alerts, which are text records too
    TEXTS = enum.auto()
    #: the run's alerts (``aoff.rules``): a text record of tag ``aoff/alerts`` each,
    #: for a backend that keeps them but no other texts (W&B's summary and notification)
    ALERTS = enum.auto()
    #: images and videos: ``media_formats`` and ``write_media``
    MEDIA = enum.auto()
    #: the run's config and ``add_hparams``' hyperparameters
    HPARAMS = enum.auto()


def takes_of(backend: object) -> Takes:
    """What ``backend`` takes: its ``takes``; one without it (a user's own backend written
    before there were flags) takes media exactly when it has ``write_media``."""
    got = getattr(backend, "takes", None)
    if isinstance(got, Takes):
        return got
    return Takes.MEDIA if callable(getattr(backend, "write_media", None)) else Takes.NOTHING


def takes_alerts(takes: Takes) -> bool:
    """Whether a backend that takes ``takes`` is given the run's alerts."""
    return bool(takes & (Takes.TEXTS | Takes.ALERTS))


def _discard(_: str) -> None:
    pass


@dataclass(frozen=True, slots=True)
class BackendContext:
    """What a backend may use while opening: the run's config and a console line printer.

    ``say`` takes one line of Rich markup and prints it above the live dashboard (or to
    the console when there is none); it is thread-safe.

    ``hparams`` is the run's live hyperparameters (``config=`` and ``log_config``) and
    final metrics, kept by the fold. Why a live view rather than a record type or a new
    protocol method: config changes are rare and have no step, so a backend compares
    ``hparams.version`` once per ``write`` (and at ``close``) on the pump's loop and writes
    what changed; records stay scalar-only, and backends that ignore config (a user's own)
    need no new method. Read it on the event loop only (not in a worker thread).

    ``pieces`` paces a long encoding (see :data:`Pieces`); by default it does nothing.

    ``unset`` names the fields of ``config`` the user did not give (the original logger's
    defaults, or a description the face wrote itself); ``seed_tags`` says each record
    carries the original logger's scaffolding tags whether or not they were logged. A
    backend that keeps only what the user logged or configured (trackio) reads both.

    ``writes_on_loop`` says the loop that calls the backend is aoff's own (the agent
    process: no training loop shares its GIL, no user's loop waits on it), so a file
    backend may write a batch right there instead of in a worker thread
    (``_lockedfile.py``); by default it does not.
    """

    config: RunConfig = field(default_factory=RunConfig)
    say: Callable[[str], None] = _discard
    hparams: HParams = field(default_factory=HParams)
    pieces: Pieces = whole
    unset: frozenset[str] = frozenset()
    seed_tags: bool = False
    writes_on_loop: bool = False


@runtime_checkable
class Backend(Protocol):
    """Where step records go. Implementations must be safe to close without open.

    Optional: ``takes``, a :class:`Takes` (without it, :func:`takes_of` says what the
    backend takes); ``media_formats`` and ``write_media`` (images and videos)."""

    #: short name shown in the dashboard and in error reports, e.g. ``"tensorboard"``
    name: str

    async def open(self, ctx: BackendContext) -> None:
        """Acquire resources; print the original logger's one-line notice through ``ctx.say``."""

    async def write(self, records: Sequence[Record]) -> None:
        """Persist (or buffer) a batch of records, in order (``match`` on their type)."""

    async def flush(self) -> None:
        """Make everything written so far durable/visible (called every ~2 s and at end)."""

    async def close(self) -> None:
        """Flush and release resources. Called once, also after a failure."""
