"""``Core``: one pump's parts (buffer, state, display, pump, backend context), wired from
:class:`~aoff._pump._options.Options`, in whichever process pumps.

Why beside the pump and not in the faces: the agent process builds the same parts, and
it must not import the faces (nor install their fork hook) to do so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING

from .._backends._base import BackendContext
from .._core._buffer import EventBuffer
from .._core._config import HParams
from .._core._rules import Alert
from .._core._state import State
from ._alerts import AlertPlan
from ._options import Options
from ._pump import Pump, PumpSettings
from ._sysmetrics import SystemSampler
from ._turns import in_pieces

if TYPE_CHECKING:
    from .._runfolder.summary._writer import RunSummary

__all__ = ["Core"]


class Core:
    """Buffer + state + pump, wired from :class:`Options` (in whichever process pumps)."""

    def __init__(
        self,
        options: Options,
        *,
        buffer: EventBuffer | None = None,
        on_tick: Callable[[], object] | None = None,
        on_media_freed: Callable[[int], None] | None = None,
        on_alert: Callable[[Alert], None] | None = None,
    ) -> None:
        self.options = options
        self.buffer = (
            buffer if buffer is not None else EventBuffer(options.capacity, options.overflow)
        )
        self.state = State(
            config=options.shown_config(),
            hparams=HParams(options.hparams),
            labels_as_written=not options.seed_tags,  # an adapter's keys, as its caller's
        )
        self.display = options.build_display()
        in_agent = os.getpid() != options.training_pid
        settings = PumpSettings(
            refresh_per_second=options.refresh_per_second,
            clock=options.now,
            monotonic=options.monotonic,
            finish_timeout=options.finish_timeout,
            flush_interval=options.flush_secs,
            live_dir=options.log_dir,  # `aoff attach` (src/aoff/_channel)
            overflow_label=(options.capacity, options.overflow),
            seed_tags=options.seed_tags,
            in_agent=in_agent,
        )
        self.pump = Pump(
            self.buffer,
            self.state,
            options.build_backends(),
            self.display,
            settings,
            on_tick=on_tick,
            on_media_freed=on_media_freed,  # the media budget, when it is in this process
            system=(
                SystemSampler(options.training_pid, options.system_interval)
                if options.system_interval > 0
                else None
            ),
            run_summary=_run_summary(options),
            alerts=_alert_plan(options, on_alert),
        )
        self.context = BackendContext(
            config=options.config,
            unset=frozenset(
                [f.name for f in fields(options.config)] if options.own_description else ()
            ).union(options.unset),
            seed_tags=options.seed_tags,
            say=self.pump.say,
            hparams=self.state.hparams,
            pieces=in_pieces,  # encodings in pieces while a training loop shares the GIL
            writes_on_loop=in_agent,  # the agent's loop is its own
        )


def _alert_plan(options: Options, on_alert: Callable[[Alert], None] | None) -> AlertPlan | None:
    """The run's rules and where their alerts go; None when ``rules=[]``."""
    if not options.rules:
        return None
    return AlertPlan(
        tuple(options.rules), options.log_dir, options.webhook, options.command, on_alert
    )


def _run_summary(options: Options) -> RunSummary | None:
    """``log_dir/aoff-summary.json`` for ``aoff ls``/``show`` when the run writes files
    there. A resumed run gets none (its history is cut; the readers use the files) and
    an earlier session's is removed."""
    from .._runfolder.reading._formats import data_files
    from .._runfolder.summary._writer import SUMMARY_NAME, RunSummary, remove_stale

    if not options.writes_files():
        return None
    if options.resume_step is not None:
        remove_stale(options.log_dir)
        return None
    return RunSummary(
        os.path.join(options.log_dir, SUMMARY_NAME),
        max_iterations=options.shown_config().max_iterations,
        data_files=data_files,
    )
