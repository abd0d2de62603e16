"""Stop rules judged in the training process while the agent starts.

Why: the agent is a fresh interpreter that imports aoff, its pump and numpy before it
reads a byte (~0.5-1 s on a quiet machine, 2 s at a load of 11 on two cores: spawn and
``import aoff`` ~45 %, the pump's imports ~40 %, building and starting it the rest). A
1 ms loop is at step ~500 by then, so a rule made with ``stop=True`` could stop it only
hundreds of steps after its first NaN. Until the agent first answers, the sync face's
shipper thread (never the training thread: it only hands over the list of events it
shipped, ``Shipper.tap``) folds a copy of those events with a :class:`Folder` of its own
and judges the stop rules on the records, as the agent's pump will. Its first answer
ends this: the agent folds every event from the first, so from then on it judges alone.

An alert here is the agent's own, early: the same events folded the same way in the same
order make the same records, and a rule fires on the same step (the face keeps one of
each, the agent's, whose time ``alerts.jsonl`` has). Where the two could differ, this
gives up instead: at a value still on a device (the agent reads it; this side never
waits) and past ``EARLY_EVENTS`` events (a flood: folding it here would take the loop's
CPU; the agent is up soon).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .._core import _events as ev
from .._core._fold import Folder
from .._core._records import Record
from .._core._rules import Alert, Rule
from .._core._state import State
from .._core._watch import Watch

__all__ = ["EARLY_EVENTS", "EarlyWatch", "NoteAlert"]

#: the most events folded here before the agent answers; a 1 ms loop's first seconds are
#: a few thousand (each ~5-10 us of the shipper thread's CPU, which the loop shares)
EARLY_EVENTS = 20_000


class NoteAlert(Protocol):
    """The face's ``_note_alert``: an alert, and whether it was found here (early)."""

    def __call__(self, alert: Alert, early: bool = False) -> None: ...


class EarlyWatch:
    """The stop rules of ``rules`` on a private fold of the events shipped so far."""

    def __init__(
        self,
        rules: Sequence[Rule],
        on_alert: Callable[[Alert], None],
        *,
        seed_tags: bool,
        clock: Callable[[], float],
    ) -> None:
        self.folder = Folder(State(), seed_tags=seed_tags)
        self.watch = Watch([r for r in rules if r.stop and r.kind != "stalled"], clock=clock)
        self.on_alert = on_alert
        self.folded = 0

    def judge(self, events: Sequence[ev.Event]) -> bool:
        """Fold ``events`` (in the order shipped) and tell ``on_alert`` what the stop rules
        saw; False once this side gives up (see the module's doc)."""
        self.folded += len(events)
        if self.folded > EARLY_EVENTS:  # a flood: not folded here at all
            return False
        records: list[Record] = []
        going = True
        for event in events:
            if type(event) is not tuple:  # a PendingEvent: values on a device
                going = False
                break
            if event[0] == ev.MEDIA:  # frames make no scalar
                continue
            rec = self.folder.apply(event)
            if rec is not None:
                records.append(rec)
        for alert in self.watch.see(records):  # those before a device value, in order
            self.on_alert(alert)
        return going
