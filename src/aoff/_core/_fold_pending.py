"""What is logged between steps and joins a step's record: episodes, and the end's tail.

Why apart from ``_fold.py``: ``log_episodes`` and ``log_histogram`` do not make records of
their own; their values wait in the fold and join the next ``log_step``'s record. At
the end of the run there is no next step, so whatever still waits then (a histogram or
episodes logged after the last ``log_step``) becomes one more record at the last step,
written and counted like the others instead of vanishing.
"""

from __future__ import annotations

from ._fold_checks import Checks
from ._histogram_data import Histogram, histogram_scalars
from ._records import StepRecord
from ._state import State

__all__ = ["fold_episodes", "tail_record"]


def fold_episodes(folder: Checks, acc: list[float], returns: object, lengths: object) -> None:
    """Episodes that ended: the dashboard's reward and length now, their sums and counts
    in ``acc`` (return sum, count, length sum, count) for the next step's record."""
    where = "log_episodes"
    for values, at in ((returns, 0), (lengths, 2)):
        if not isinstance(values, tuple):
            folder._bad(where, at, f"{where}: a malformed event; skipped")
            continue
        total, n = 0.0, 0
        for v in values:
            f = folder._num_or_skip(where, "returns" if at == 0 else "lengths", v)
            if f is not None:
                total += f
                n += 1
        if not n:
            continue
        acc[at] += total
        acc[at + 1] += n
        if at == 0:
            folder.state.reward_history.append(total / n)
        else:
            folder.state.ep_length = total / n


def tail_record(
    state: State, histograms: dict[str, Histogram], acc: list[float], wall: float
) -> StepRecord | None:
    """At the end of the run: what was logged after the last step (``histograms``, the
    episodes in ``acc``), as a record at that step; ``None`` when nothing waits. It holds
    only the waiting values (the axis and timing scalars were in the step's own record)."""
    if not histograms and not acc[1]:
        return None
    out: list[tuple[str, float]] = []
    if acc[1]:
        out += (("episode/return", acc[0] / acc[1]), ("episode/count", acc[1]))
    for h in histograms.values():
        out += histogram_scalars(h)
    step = state.total_steps if state.total_steps > 0 else state.iteration
    return StepRecord(step, state.iteration, wall, tuple(out), tuple(histograms.values()))
