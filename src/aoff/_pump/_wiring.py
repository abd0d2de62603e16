"""``Core``: one pump's parts (buffer, state, display, pump, backend context), wired from
:class:`~aoff._pump._options.Options`, in whichever process pumps.

Why beside the pump and not in the faces: the agent process builds the same parts, and
it must not import the faces (nor install their fork hook) to do so.
"""

from __future__ import annotations

from collections.abc import Callable

from .._backends._base import BackendContext
from .._core._buffer import EventBuffer
from .._core._config import HParams
from .._core._state import State
from ._options import Options
from ._pump import Pump
from ._sysmetrics import SystemSampler

__all__ = ["Core"]


class Core:
    """Buffer + state + pump, wired from :class:`Options` (in whichever process pumps)."""

    def __init__(
        self,
        options: Options,
        *,
        buffer: EventBuffer | None = None,
        on_tick: Callable[[], object] | None = None,
    ) -> None:
        self.options = options
        self.buffer = (
            buffer if buffer is not None else EventBuffer(options.capacity, options.overflow)
        )
        self.state = State(config=options.config, hparams=HParams(options.hparams))
        self.display = options.build_display()
        self.pump = Pump(
            self.buffer,
            self.state,
            options.build_backends(),
            self.display,
            refresh_per_second=options.refresh_per_second,
            clock=options.now,
            monotonic=options.monotonic,
            finish_timeout=options.finish_timeout,
            flush_interval=options.flush_secs,
            on_tick=on_tick,
            overflow_label=(options.capacity, options.overflow),
            live_dir=options.log_dir,  # `aoff attach` (src/aoff/_channel)
            system=(
                SystemSampler(options.training_pid, options.system_interval)
                if options.system_interval > 0
                else None
            ),
        )
        self.context = BackendContext(
            config=options.config, say=self.pump.say, hparams=self.state.hparams
        )
