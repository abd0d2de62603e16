"""The logger's own cost on record: ``aoff/...`` tags every few seconds.

Why in the pump: the hot path's share comes in sampled (``_core/_hotcost.py``); what the
loop cannot see is measured here, where it happens: the agent's lag (seconds between a
step's call and its fold, from which its records go to the backends) and, in the agent
process, its CPU share. Every ``COST_INTERVAL`` they join the next step's record (beside
the system sample) and ``State.cost`` (the dashboard's footer and summary).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from .._core._fold import Folder
from .._core._records import Record, StepRecord
from .._core._state import State

__all__ = ["COST_INTERVAL", "CostKeeper"]

#: seconds between two writes of the ``aoff/...`` tags
COST_INTERVAL = 5.0


class CostKeeper:
    """On the pump's loop: :meth:`see` each slice's records, :meth:`tick` each tick.

    ``in_agent``: the pump has a process of its own, whose CPU time is the logger's."""

    def __init__(
        self,
        state: State,
        folder: Folder,
        *,
        clock: Callable[[], float],
        monotonic: Callable[[], float],
        in_agent: bool,
    ) -> None:
        self.state = state
        self.folder = folder
        self._clock = clock
        self._monotonic = monotonic
        self._in_agent = in_agent
        self._lag = 0.0
        self._lag_known = False
        self._last = monotonic()
        self._cpu = time.process_time()

    def see(self, records: Sequence[Record]) -> None:
        """The lag of the newest own step of a slice, as it is folded."""
        for rec in reversed(records):
            if type(rec) is StepRecord and rec.producer is None:
                self._lag = max(self._clock() - rec.wall_time, 0.0)
                self._lag_known = True
                return

    def tick(self, *, final: bool = False) -> None:
        """Every ``COST_INTERVAL``: the tags, for the next step and the state; ``final``
        (the run's end): for the summary, now, whatever the interval."""
        now = self._monotonic()
        span = now - self._last
        if span < COST_INTERVAL and not (final and span > 0):
            return
        tags = dict(self.state.hot_path)
        if self._lag_known:
            tags["aoff/agent_lag_s"] = self._lag
        if self._in_agent:
            cpu = time.process_time()
            tags["aoff/agent_cpu_percent"] = 100.0 * (cpu - self._cpu) / span
            self._cpu = cpu
        self._last = now
        if tags:
            self.state.cost = tags
            self.folder.attach(tags)
