"""The fold of ``aoff.tensorboard.SummaryWriter``'s events: one record a call.

One part of the fold (``_fold.py`` owns it and hands it the checks) because the seed
logger's calls make one record a *step*, with the
seed's tags; ``SummaryWriter``'s calls each make one record of their own, at the tag,
step, wall time and run folder the caller chose, because that is what torch's writer
puts on disk (one ``Event`` a call) and what TensorBoard's reader expects (it drops
points on out-of-order steps per event, so events must not be merged).

The histogram reduction here is torch's, not ``_histogram.py``'s: ``np.histogram`` with
the call's ``bins`` (``"tensorflow"``: the same exponential bucket edges torch uses),
``max_bins`` subsampling, and the same trimming to the buckets that hold values. It runs
where the fold runs (the agent process by default), never on the training thread.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from . import _events as ev
from ._fold_axes import AXIS_PREFIX
from ._fold_checks import Checks
from ._histogram_data import Histogram
from ._pending import ABSENT
from ._records import TextRecord, WriterHParams, WriterRecord
from ._state import State

#: an ``add_scalar`` event's length without ``axes=``: (kind, wall_time, *fields)
_W_SCALAR_FIELDS = 2 + len(ev.KINDS[ev.W_SCALAR].fields)
#: what a writer's record holds a clock for: not an axis ``add_scalar(axes=)`` may set
#: (``global_step`` is its step and iteration; ``env_steps`` is the caller's to give)
WRITER_CLOCKS = frozenset(("step", "iteration", "wall_time", "env_steps_total"))
#: ``bins="tensorflow"`` as the event carries it (the edges are made here, once)
TENSORFLOW_BINS = "tensorflow"


#: the last part of a tag that names an episode's return, as the libraries users port
#: log it: CleanRL ``charts/episodic_return``, SB3 ``rollout/ep_rew_mean`` and
#: ``eval/mean_reward``, rsl_rl ``Train/mean_reward``, TorchRL ``train/reward``,
#: ``train/episode_reward``, ``episode_return``
REWARD_NAMES = frozenset(
    ("episodic_return", "ep_rew_mean", "mean_reward", "episode_reward", "episode_return",
     "reward", "return")
)  # fmt: skip


def is_reward_tag(tag: str) -> bool:
    """Whether ``tag`` is an episode return by :data:`REWARD_NAMES` (case aside)."""
    return tag.rsplit("/", 1)[-1].lower() in REWARD_NAMES


@cache
def tensorflow_bins() -> tuple[float, ...]:
    """TensorBoard's default histogram edges, as torch's ``SummaryWriter`` makes them:
    ±1e-12 growing by 10 % until 1e20, and 0."""
    pos: list[float] = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return (*(-x for x in reversed(pos)), 0.0, *pos)


def torch_histogram(tag: str, values: Any, bins: Any, max_bins: int | None) -> Histogram:
    """The statistics torch's ``add_histogram`` writes for ``values`` (a 1-D float64
    array): min/max/num/sum/sum_squares of all values, and the buckets of
    ``np.histogram(values, bins)`` (subsampled to ``max_bins``), trimmed to the span
    that holds values plus one empty bucket on the left (TensorBoard keeps only right
    edges)."""
    import numpy as np

    if isinstance(bins, str) and bins == TENSORFLOW_BINS:
        bins = tensorflow_bins()
    counts, limits = np.histogram(values, bins=bins)
    n = len(counts)
    if max_bins is not None and n > max_bins:
        sub = n // max_bins
        if n % sub:
            counts = np.pad(counts, (0, sub - n % sub))
        counts = counts.reshape(-1, sub).sum(axis=-1)
        merged = np.empty(counts.size + 1, limits.dtype)
        merged[:-1] = limits[:-1:sub]
        merged[-1] = limits[-1]
        limits = merged
    held = np.cumsum(counts > 0)
    first, last = (int(i) for i in np.searchsorted(held, [0, held[-1] - 1], side="right"))
    end = last + 1
    kept = counts[first - 1 : end] if first > 0 else np.concatenate([[0], counts[:end]])
    edges = limits[first : end + 1]
    if kept.size == 0 or edges.size == 0:
        raise ValueError("the histogram is empty")
    return Histogram(
        tag,
        int(values.size),
        0,
        float(values.min()),
        float(values.max()),
        float(values.sum()),
        float(values.dot(values)),
        tuple(float(x) for x in edges.tolist()),
        tuple(float(x) for x in kept.tolist()),
        (),
    )


class WriterFold:
    """The record of each ``SummaryWriter`` event. The dashboard (``dashboard=True``)
    shows the latest scalar of each main-run tag and the highest step seen as the
    iteration."""

    __slots__ = ("_checks", "state")

    def __init__(self, state: State, checks: Checks) -> None:
        self.state = state
        self._checks = checks

    def _step(self, where: str, raw: object) -> int:
        return 0 if raw is None else self._checks.integer(where, "global_step", raw)

    def _seen(self, step: int) -> None:
        s = self.state
        s.status = "Training"
        s.training_started = True
        if step > s.iteration:
            s.iteration = step

    def _main_scalar(self, tag: str, value: float) -> None:
        """The dashboard's view of a main-run scalar: the reward tag (the first one
        :func:`is_reward_tag` takes) feeds the reward history, any other is a metric,
        shown as written."""
        s = self.state
        s.labels_as_written = True
        if not s.reward_tag and is_reward_tag(tag):
            s.reward_tag = tag
        if tag == s.reward_tag:
            s.reward_history.append(value)
        else:
            s.latest_metrics[tag] = value

    def _axes(self, where: str, given: object) -> tuple[tuple[str, float], ...]:
        """``axes=`` of an ``add_scalar``, checked: each a finite number under a name the
        record has no clock of its own for (reported and skipped otherwise)."""
        where += "(axes)"
        out = []
        for name, v in self._checks.mapping(where, given).items():
            if name in WRITER_CLOCKS or not name:
                msg = f"{where}: {name!r} is the record's own clock, not an axis to set; skipped"
                self._checks.bad(where, name, msg)
            elif not math.isfinite(v):
                self._checks.bad(where, name, f"{where}: axis {name!r} is {v}; skipped")
            else:
                out.append((AXIS_PREFIX + name, v))
        return tuple(out)

    def fold(self, e: ev.Event) -> WriterRecord | TextRecord | None:
        """The record of one ``SummaryWriter`` event (None: its value was skipped,
        reported)."""
        kind = e[0]
        where = ev.KINDS[kind].name
        wall = float(e[1])
        run = e[2]
        checks = self._checks
        if kind == ev.W_HPARAMS:  # (run, hparams, metrics, discrete, step)
            step = self._step(where, e[6])
            self._seen(step)
            metrics = e[4]
            values = checks.mapping(where, metrics)
            hp = WriterHParams(dict(e[3]), tuple(metrics), dict(e[5]))
            return WriterRecord(step, wall, tuple(values.items()), run=run, hparams=hp)
        tag = e[3]
        if type(run) is not str or type(tag) is not str:  # the calls check both
            checks.bad(where, tag, f"{where}: malformed event {e!r:.80}; skipped")
            return None
        step = self._step(where, e[5])
        if kind == ev.W_SCALAR:  # (run, tag, value, step, style)
            if e[4] is ABSENT:  # a device value that turned out to be none: not written
                return None
            value = checks.num_or_skip(where, tag, e[4])
            if value is None:
                return None
            self._seen(step)
            if not run:
                self._main_scalar(tag, value)
            pairs: tuple[tuple[str, float], ...] = ((tag, value),)
            if len(e) > _W_SCALAR_FIELDS:  # add_scalar(axes=...): the point's other clocks
                pairs += self._axes(where, e[_W_SCALAR_FIELDS])
            return WriterRecord(step, wall, pairs, run=run, tensor_style=e[6])
        if kind == ev.W_TEXT:  # (run, tag, text, step)
            self._seen(step)
            texts = ((tag, str(e[4])),)
            return TextRecord(step, wall, texts, run=run)
        # W_HISTOGRAM: (run, tag, values, step, bins, max_bins)
        try:
            # a large input was reduced by the call already (bounded buffered events)
            h = e[4] if isinstance(e[4], Histogram) else torch_histogram(tag, e[4], e[6], e[7])
        except Exception as exc:  # e.g. NaN with automatic bins: torch raises there too
            checks.bad(where, tag, f"{where}: {tag!r:.60}: {type(exc).__name__}: {exc}; skipped")
            return None
        self._seen(step)
        return WriterRecord(step, wall, (), (h,), run=run)
