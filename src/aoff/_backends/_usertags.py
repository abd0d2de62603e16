"""Which of a record's scalars the user logged, for a backend that keeps only those.

The original logger's face puts scaffolding on every step record (``seed_tags``): the
done rates and the learner's four times (0 until logged), ``perf/iter_ms`` (their sum)
and the record's own clocks ``axis/iteration`` and ``axis/env_steps_total``. TensorBoard
and W&B keep them for parity with that logger; a backend the original never had
(trackio) should show what the user logged and nothing else. Kept apart from any one
backend because the rule is the fold's (``_core/_fold_step.SCAFFOLDING``), not trackio's.

The rule: the two clocks never (the record's step is the backend's x; an axis the user
named with ``axes=`` is kept); a scaffolding group from the first record in which one of
its values is not 0 (the fold's own test of "logged" for the learner's times; a done
rate logged as exactly 0 until then reads as not logged, and the group is then kept from
its first non-zero value on).
"""

from __future__ import annotations

from .._core._fold_step import CLOCK_TAGS, SCAFFOLDING
from .._core._records import StepRecord, WriterRecord

__all__ = ["UserTags"]

_CLOCKS = frozenset(CLOCK_TAGS)


class UserTags:
    """The user's scalars of each record, in order (one instance a run: it remembers
    which scaffolding groups each logger, the run's own and each producer, logged)."""

    __slots__ = ("_logged", "seed_tags")

    def __init__(self, seed_tags: bool) -> None:
        #: the records carry scaffolding (the original logger's face); False: the fold
        #: already wrote only what was logged, and only the clocks are left out
        self.seed_tags = seed_tags
        #: per logger (None: the run's own), its groups logged so far; "" always is
        self._logged: dict[str | None, set[str]] = {}

    def of(self, rec: StepRecord | WriterRecord) -> list[tuple[str, float]]:
        """``rec``'s scalars without the scaffolding nobody logged. A ``SummaryWriter``'s
        record has none: all its scalars are the user's."""
        if isinstance(rec, WriterRecord):
            return list(rec.scalars)
        scaffolding = SCAFFOLDING if self.seed_tags else {}
        logged = self._logged.get(rec.producer)
        if logged is None:
            logged = self._logged[rec.producer] = {""}
        for tag, value in rec.scalars:
            group = scaffolding.get(tag)
            if group is not None and value != 0:
                logged.add(group)
        return [
            (tag, value)
            for tag, value in rec.scalars
            if tag not in _CLOCKS and scaffolding.get(tag, "") in logged
        ]
