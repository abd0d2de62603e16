"""What is logged between steps and joins a step's record: episodes, histograms, the
system sample and aoff's own scalars; and the end's tail.

One part of the fold (``_fold.py`` owns it, the step's fold in ``_fold_step.py`` reads
and empties it): ``log_episodes``, ``log_histogram`` and the samples do not make records
of their own; their values wait here and join the next ``log_step``'s record. At the end
of the run there is no next step, so whatever still waits then (a histogram or episodes
logged after the last ``log_step``) becomes one more record at the last step, written
and counted like the others instead of vanishing.
"""

from __future__ import annotations

from ._fold_checks import Checks
from ._histogram import summarize
from ._histogram_data import Histogram, histogram_scalars
from ._records import StepRecord
from ._state import State

__all__ = ["Pending"]


class Pending:
    """What waits for the next step's record."""

    __slots__ = ("_checks", "collector_reward", "episodes", "histograms", "state", "system")

    def __init__(self, state: State, checks: Checks) -> None:
        self.state = state
        self._checks = checks
        #: episodes that ended since the last step: return sum, count, length sum, count
        self.episodes: list[float] = [0.0, 0.0, 0.0, 0.0]
        #: the last distribution per tag since the last step (log_histogram)
        self.histograms: dict[str, Histogram] = {}
        #: the latest system sample and aoff's own scalars, for the next step
        self.system: dict[str, float] | None = None
        #: the reward history's last point is a log_collector(mean_reward=) since the last
        #: step: that step's own reward takes its place (one point per iteration)
        self.collector_reward = False

    def add_episodes(self, returns: object, lengths: object) -> None:
        """Episodes that ended: the dashboard's reward and length now, their sums and
        counts for the next step's record."""
        where = "log_episodes"
        checks = self._checks
        acc = self.episodes
        for values, at in ((returns, 0), (lengths, 2)):
            if not isinstance(values, tuple):
                checks.bad(where, at, f"{where}: a malformed event; skipped")
                continue
            total, n = 0.0, 0
            for v in values:
                f = checks.num_or_skip(where, "returns" if at == 0 else "lengths", v)
                if f is not None:
                    total += f
                    n += 1
            if not n:
                continue
            acc[at] += total
            acc[at + 1] += n
            if at == 0:
                self.state.reward_history.append(total / n)
            else:
                self.state.ep_length = total / n

    def add_histogram(self, key: object, payload: object) -> None:
        """Reduce (or take) one distribution; the last one per key before a step wins.
        ``None``: a device distribution that turned out empty (``EpisodeStats`` when no
        episode ended): nothing to draw, nothing lost."""
        if payload is None:
            return
        try:
            h = payload if isinstance(payload, Histogram) else summarize(str(key), payload)
        except Exception as exc:  # the call checked the input: only a bug lands here
            where = "log_histogram"
            msg = f"{where}: {key!r:.60}: {type(exc).__name__}: {exc}; skipped"
            self._checks.bad(where, key, msg)
            return
        self.histograms[h.tag] = h

    def add_system(self, samples: dict[str, float]) -> None:
        """Newer values for the sample's keys; aoff's own tags attached meanwhile stay."""
        self.system = {**self.system, **samples} if self.system else samples

    def tail(self, wall: float) -> StepRecord | None:
        """At the end of the run: what was logged after the last step, as a record at that
        step; ``None`` when nothing waits. It holds only the waiting values (the axis and
        timing scalars were in the step's own record)."""
        histograms, acc = self.histograms, self.episodes
        self.histograms, self.episodes = {}, [0.0, 0.0, 0.0, 0.0]
        if not histograms and not acc[1]:
            return None
        out: list[tuple[str, float]] = []
        if acc[1]:
            out += (("episode/return", acc[0] / acc[1]), ("episode/count", acc[1]))
        for h in histograms.values():
            out += histogram_scalars(h)
        s = self.state
        step = s.total_steps if s.total_steps > 0 else s.iteration
        return StepRecord(step, s.iteration, wall, tuple(out), tuple(histograms.values()))
