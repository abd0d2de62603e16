"""The fold of a run's axes (``axes=``): its other clocks, on every record from the step
that first names them, and a collector's staleness.

One part of the fold (``_fold.py`` owns it, the step's fold in ``_fold_step.py`` reads it)
because axes have a memory no other part reads: each axis's latest value (a record
carries every axis known so far, so a file's columns stay the same step after step, and
a point logged by ``log_collector`` lands on the next step's record with the learner's),
whether an axis went down (counted in ``State.axes_back`` and said once per axis; the
value is still written as given, a late point is a point), and the version a collector
acted with against the learner's (``collector/staleness``).

An axis is written as the tag ``axis/<name>``, beside the seed's own ``axis/iteration``
and ``axis/env_steps_total``, so every backend and reader that takes scalars takes it.
The names the record already has a clock for are refused (reported, skipped): ``step``,
``iteration``, ``wall_time``, ``env_steps`` and ``env_steps_total`` come from the
record and ``log_collector``'s ``total_steps``.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Final

from ._fold_checks import Checks
from ._state import State

__all__ = ["AXIS_PREFIX", "POLICY_VERSION", "RESERVED_AXES", "STALENESS_TAG", "AxesFold"]

#: an axis's tag is this prefix and its name (the seed's own axes are spelled so too)
AXIS_PREFIX: Final = "axis/"
#: what the record itself holds a clock for: not an axis a call may set
RESERVED_AXES: Final = frozenset(("step", "iteration", "wall_time", "env_steps", "env_steps_total"))
#: on ``log_collector``: the policy version the collector acted with (not the run's axis:
#: the learner's ``policy_version`` is); the learner's minus it is the staleness
POLICY_VERSION: Final = "policy_version"
#: the tag of the latest staleness, on the next step's record
STALENESS_TAG: Final = "collector/staleness"


class AxesFold:
    """The run's axes as the calls gave them; the tags and values a record carries."""

    __slots__ = ("_checks", "_said", "_tags", "collector_version", "staleness", "state", "values")

    def __init__(self, state: State, checks: Checks) -> None:
        self.state = state
        self._checks = checks
        #: each axis's latest value, in the order the axes were first given
        self.values: dict[str, float] = {}
        #: ``axis/<name>`` for each name in ``values``, in the same order
        self._tags: tuple[str, ...] = ()
        #: the latest ``log_collector(axes={"policy_version": v})`` (None: none yet)
        self.collector_version: float | None = None
        #: the latest staleness, for the next step's record (None: none since)
        self.staleness: float | None = None
        #: the axes whose going down was said (once each)
        self._said: set[str] = set()

    def note(self, where: str, given: object) -> float | None:
        """The axes of one call (``log_step`` or ``log_collector``): each checked (a
        number, finite, a name the record has no clock for) and kept; one that went down
        is counted and said once, and kept as given. Returns the collector's
        ``policy_version`` if this call (a ``log_collector``) gave one."""
        clean = self._checks.mapping(where, given)
        values = self.values
        version = None
        for name, v in clean.items():
            if name in RESERVED_AXES:
                self._checks.bad(
                    where,
                    name,
                    f"{where}: {name!r} is the record's own clock, not an axis to set; skipped",
                )
                continue
            if not math.isfinite(v):
                self._checks.bad(where, name, f"{where}: axis {name!r} is {v}; skipped")
                continue
            if where.startswith("log_collector") and name == POLICY_VERSION:
                self.collector_version = version = v
                continue
            last = values.get(name)
            if last is None:
                self._tags = (*self._tags, AXIS_PREFIX + name)
            elif v < last:
                self._went_down(where, name, last, v)
            values[name] = v
        return version

    def _went_down(self, where: str, name: str, last: float, v: float) -> None:
        s = self.state
        s.axes_back += 1
        if name not in self._said:
            self._said.add(name)
            self._checks.say(
                f"{where}: axis {name!r} went down ({last:g} -> {v:g}); written as given, "
                "and counted (FinishReport.axes_back)"
            )

    def collector_staleness(self, version: float | None) -> None:
        """A collector acted with policy ``version``: the learner's ``policy_version``
        axis minus it is kept for the dashboard (median, max) and the next record."""
        learner = self.values.get(POLICY_VERSION)
        if version is None or learner is None:
            return
        self.staleness = lag = learner - version
        history: deque[float] = self.state.staleness
        history.append(lag)

    def extend(self, tags: list[str], values: list[float]) -> None:
        """The record's axes (and the staleness since the last record) appended."""
        if self._tags:
            tags += self._tags
            values += self.values.values()
        if self.staleness is not None:
            tags.append(STALENESS_TAG)
            values.append(self.staleness)
            self.staleness = None
