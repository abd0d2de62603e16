"""Where an alert goes: the state (dashboard, summary, report), ``alerts.jsonl``, the
backends that take texts or alerts (a text record each, ``Takes``), the training
process, and the actions.

Why one part: a rule that fires (``_core/_watch.py``) must reach every place the run
is read from, in the same order and once; the pump hands this desk each slice's records
and its ticks and knows nothing of the rules. Everything here runs on the pump's loop
and never waits: the file line is one small append, the actions have their own thread.

A producer's own rules (``RemoteLogger(rules=...)``, a Ray producer's) come with its
hello, on its connection's thread (:meth:`AlertDesk.watch_producer`), before its first
event: each gets a :class:`Watch` of its own that sees only that producer's records.
Their alerts are the run's, like any other (``"<producer>:<tag>"``).
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._backends._base import takes_alerts
from .._core._columns import Spans
from .._core._records import Record, TextRecord
from .._core._rules import ALERT_TAG, ALERTS_NAME, Alert, Rule
from .._core._state import State
from .._core._watch import Watch
from ._actions import Actions
from ._runner import BackendRunner

__all__ = ["AlertDesk"]


@dataclass(frozen=True)
class AlertPlan:
    """The run's rules and where their alerts go, from its options: what the pump builds
    its :class:`AlertDesk` from (the desk also needs the pump's runners, ``say`` and
    screen). ``on_alert``: told each alert as it fires (the agent sends it to the training
    process; in thread mode the face notes it)."""

    rules: tuple[Rule, ...]
    log_dir: str = ""
    webhook: str | None = None
    command: Sequence[str] | None = None
    on_alert: Callable[[Alert], None] | None = None


class AlertDesk:
    """Evaluates the run's rules (:meth:`see`, :meth:`tick`) and delivers what fires:
    the ``plan``'s file, webhook, command and ``on_alert``, the text-taking ``runners``,
    ``say``; ``on_change``: the state changed (the screen redraws)."""

    def __init__(
        self,
        plan: AlertPlan,
        state: State,
        *,
        runners: Sequence[BackendRunner],
        say: Callable[[str], None],
        on_change: Callable[[], None],
        clock: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        self.watch = Watch(plan.rules, clock=clock, monotonic=monotonic)
        self._clocks = (clock, monotonic)
        #: producers' own rules: a watch each, by live name, and those not taken in yet
        #: (appended on a connection's thread, taken on the loop: a deque does both safely)
        self.producers: dict[str, Watch] = {}
        self._incoming: deque[tuple[str, tuple[Rule, ...]]] = deque()
        self.state = state
        self.path = os.path.join(plan.log_dir, ALERTS_NAME) if plan.log_dir else ""
        self.say = say
        self.actions = (
            Actions(plan.webhook, plan.command, say) if plan.webhook or plan.command else None
        )
        self.runners = runners
        self.on_alert = plan.on_alert
        self.on_change = on_change
        self._file_failed = False

    def watch_producer(self, live: str, rules: tuple[Rule, ...]) -> None:
        """Producer ``live``'s own rules (any thread: taken in on the loop, before the
        first slice that holds its events, which the pump's buffer gets after this)."""
        self._incoming.append((live, rules))

    def see(self, records: Sequence[Record], spans: Spans | None = None) -> None:
        """A slice's records (the intake, after offering them to the runners; ``spans``:
        their row spans, walked once for the loop's readers)."""
        if self._incoming:
            self._take_incoming()
        alerts = self.watch.see(records, spans)
        for live, w in self.producers.items():
            alerts += w.see([r for r in records if r.producer == live])
        self._count_errors()
        if alerts:
            self._deliver(alerts)

    def _count_errors(self) -> None:
        """A rule that raised: its first error said, every one counted in the state (and
        so in ``FinishReport.rule_errors``)."""
        total: dict[str, int] = {}
        for w in (self.watch, *self.producers.values()):
            for line in w.take_lines():
                self.say(line)
            for name, n in w.errors.items():
                total[name] = total.get(name, 0) + n
        if total:
            self.state.rule_errors = total

    def tick(self) -> None:
        """The pump's tick: rules on the clock (``stalled``)."""
        if self._incoming:
            self._take_incoming()
        alerts = self.watch.tick()
        for w in self.producers.values():
            alerts += w.tick()
        self._count_errors()
        if alerts:
            self._deliver(alerts)

    def _take_incoming(self) -> None:
        clock, monotonic = self._clocks
        while self._incoming:
            live, rules = self._incoming.popleft()
            self.producers[live] = Watch(rules, clock=clock, monotonic=monotonic)

    def close(self, timeout: float) -> None:
        """The run ended: the actions get up to ``timeout`` to finish what is queued."""
        if self.actions is not None:
            self.actions.close(timeout)
            self.state.alerts_undelivered = dict(self.actions.why)

    def _deliver(self, alerts: list[Alert]) -> None:
        self.state.alerts += tuple(alerts)
        self._append(alerts)
        # a text record, in order with the steps, to each backend that takes texts or alerts
        texts = [r for r in self.runners if takes_alerts(r.takes)]
        for a in alerts:
            self.say(f"aoff: alert: {a.message} [{a.rule}]")
            if texts:
                rec = TextRecord(max(a.step, 0), a.time, ((ALERT_TAG, a.message),))
                for r in texts:
                    r.offer((rec,))
            if self.actions is not None:
                self.actions.submit(a)
            if self.on_alert is not None:
                self.on_alert(a)
        self.on_change()

    def _append(self, alerts: list[Alert]) -> None:
        if not self.path or self._file_failed:
            return
        lines = "".join(json.dumps(a.as_dict()) + "\n" for a in alerts)
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(lines)
        except OSError as exc:
            self._file_failed = True
            self.say(f"aoff: could not write {self.path} ({exc}); alerts go on elsewhere")
