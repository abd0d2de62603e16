"""The fold of a ``log_step``: the hot path of the fold, one call a step.

One part of the fold (``_fold.py`` owns it and hands it the checks and what waits for a
step) because a step is where the fold spends its time: its record's tags and values are
built as two columns (tags cached per sequence of a dict's keys, values taken from the
dicts as they are) and zipped once into :class:`~._records.Scalars`, whose shared
``tags`` tuple lets the TensorBoard encoder and the run summary reuse their work per tag
sequence. :class:`StepFold` holds what a step needs of the fold's memory.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _events as ev
from ._fold_axes import AxesFold
from ._fold_checks import _FLOAT_ONLY, Checks
from ._fold_pending import Pending
from ._histogram_data import Histogram, histogram_scalars
from ._keys import drop_aliases, metric_tag, reward_tag
from ._records import Scalars, StepRecord, scalars_of, step_record
from ._state import State
from ._vectors import ENVS_SUFFIX, Vector, mean

Times = tuple[float, float, float, float]

__all__ = ["CLOCK_TAGS", "SCAFFOLDING", "StepFold", "collector_tag"]

#: a STEP event's length: (kind, wall_time, *FIELDS[STEP])
_STEP_FIELDS = 2 + len(ev.KINDS[ev.STEP].fields)
#: the tags every step has after its rewards and episodes, in the seed's order
STEP_TAIL = (
    "episode/timeout_rate",
    "episode/terminated_rate",
    "timing/learner_wait_ms",
    "timing/learner_incremental_h2d_ms",
    "timing/learner_train_ms",
    "timing/learner_weight_sync_ms",
)
#: the original logger's scaffolding tags on every step record (``seed_tags``), logged or
#: not, and the call that logs each group (``State.logged``): the done rates
#: (``update_done_rates``) and the learner's times (``log_step``'s timings)
SCAFFOLDING = {
    **dict.fromkeys(STEP_TAIL[:2], "done_rates"),
    **dict.fromkeys((*STEP_TAIL[2:], "perf/iter_ms"), "learner"),
}
#: the record's own clocks as tags, on every step record: its iteration and its step
CLOCK_TAGS = ("axis/iteration", "axis/env_steps_total")
#: no dict argument: nothing, no tags
_NOTHING: tuple[dict[str, float], tuple[str, ...]] = ({}, ())
#: a dict holds a per-env vector (a step's dicts rarely do)
_VECTOR_ONLY = frozenset((Vector,))
#: tag sequences shared at most (more: the cache starts over)
_TAG_SEQS_MAX = 1024


def collector_tag(key: str) -> str:
    return "timing/collector_" + key


def _tag_names(
    cache: dict[tuple[str, ...], tuple[str, ...]],
    keys: tuple[str, ...],
    spell: Callable[[str], str],
) -> tuple[str, ...]:
    """The tags of a dict's ``keys`` (spelled by ``spell``), kept in ``cache`` per key
    sequence: a run logs the same few dicts every step (tag spelling is pure)."""
    if len(cache) >= _TAG_SEQS_MAX:
        cache.clear()
    names = cache[keys] = tuple(map(spell, keys))
    return names


class StepFold:
    """The fold of a step (:meth:`fold`) and the fold's memory a step reads: tag caches,
    the last step's tags, the loss charted, the dropped total it stamps."""

    __slots__ = (
        "_checks",
        "_last_tags",
        "_loss_keys",
        "_pending",
        "_tag_seqs",
        "axes",
        "collector_tags",
        "dropped",
        "last_step",
        "metric_tags",
        "reward_tags",
        "seed_tags",
        "state",
    )

    def __init__(
        self, state: State, checks: Checks, pending: Pending, *, seed_tags: bool = True
    ) -> None:
        self.state = state
        self._checks = checks
        self._pending = pending
        #: the run's axes (``axes=``), on every record once given
        self.axes = AxesFold(state, checks)
        #: the original logger's scaffolding tags on every step (see ``_scaffolding``)
        self.seed_tags = seed_tags
        #: events dropped before the fold so far, as the pump counts them (``aoff/...``)
        self.dropped = 0
        # tag spelling is pure, so it is cached per sequence of keys (a step's dicts have
        # the same keys step after step; ~30 keys a step)
        # (a dict lookup in C here, not PerTags: these keys are a new tuple every step)
        self.metric_tags: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.reward_tags: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.collector_tags: dict[tuple[str, ...], tuple[str, ...]] = {}
        # one tags tuple per tag sequence, shared by the records that have it (Scalars)
        self._tag_seqs: dict[tuple[str, ...], tuple[str, ...]] = {}
        # the step of the run's last step record: a record below it is late (counted)
        self.last_step = -(2**63)
        # the last step's tags (as built) and their shared tuple: most steps repeat them
        self._last_tags: tuple[list[str], tuple[str, ...]] = ([], ())
        # the loss a step's metrics would chart (first loss key, sorted), per key sequence
        self._loss_keys: dict[tuple[str, ...], str | None] = {}

    def fold(self, event: ev.Event) -> StepRecord:
        """One ``log_step``: the state updated, the seed's record returned. The hot path
        (one a step): the columns of its record are built apart (tags, values) and zipped
        once, in C; see Scalars."""
        (
            _,
            wall,
            iteration_in,
            metrics_in,
            reward_in,
            reward_metrics_in,
            components_in,
            train_time,
            wait_time,
            h2d_time,
            weight_sync_time,
            extra_info,
        ) = event if len(event) == _STEP_FIELDS else event[:_STEP_FIELDS]
        where = "log_step"
        checks = self._checks
        if len(event) > _STEP_FIELDS:  # log_step(axes=...)
            self.axes.note("log_step(axes)", event[ev.S_AXES])
        iteration = checks.integer(where, "iteration", iteration_in)
        tagged = self.tagged
        metrics, metric_tags = (
            _NOTHING
            if metrics_in is None
            else tagged("log_step(metrics)", metrics_in, self.metric_tags, metric_tag, True)
        )
        if type(reward_in) is Vector:  # per-env values: the mean, and their spread
            reward_in = self._vector("reward", reward_in)
        reward = None if reward_in is None else checks.num_or_skip(where, "reward", reward_in)
        reward_metrics, reward_metric_tags = (
            _NOTHING
            if reward_metrics_in is None
            else tagged("log_step(reward_metrics)", reward_metrics_in, self.reward_tags, reward_tag)
        )
        components, component_tags = (
            _NOTHING
            if components_in is None
            else tagged("log_step(reward_components)", components_in, self.reward_tags, reward_tag)
        )
        raw = (train_time, wait_time, h2d_time, weight_sync_time)
        s, times = self._note(iteration, raw, metrics, reward, components, extra_info)

        step = s.total_steps if s.total_steps > 0 else iteration
        if step < self.last_step:  # late or out of order: written at its step, counted
            s.late_records += 1
        self.last_step = step
        tags: list[str] = ["axis/iteration", "axis/env_steps_total"]  # CLOCK_TAGS
        values: list[float] = [float(iteration), float(step)]
        axes = self.axes
        if axes.values or axes.staleness is not None:  # only once a call gave axes
            axes.extend(tags, values)
        if metrics:
            tags += metric_tags
            values += metrics.values()
        if reward is not None:
            tags.append("reward/mean")
            values.append(reward)
        if reward_metrics:
            tags += reward_metric_tags
            values += reward_metrics.values()
        if components:
            tags += component_tags
            values += components.values()
        histograms = self._tail(tags, values, times)
        return step_record(step, iteration, wall, self._scalars(tags, values), histograms)

    def _note(
        self,
        iteration: int,
        raw: tuple[object, object, object, object],
        metrics: dict[str, float],
        reward: float | None,
        components: dict[str, float],
        extra_info: object,
    ) -> tuple[State, Times]:
        """What the dashboard keeps of a step (its four times checked here); returns the
        state and the times."""
        s = self.state
        s.iteration = iteration
        where = "log_step"
        num = self._checks.num
        times = (
            num(where, "train_time", raw[0]),
            num(where, "wait_time", raw[1]),
            num(where, "learner_incremental_h2d_time", raw[2]),
            num(where, "weight_sync_time", raw[3]),
        )
        s.train_time, s.wait_time, s.h2d_time, s.weight_sync_time = times
        if times[0] or times[1] or times[2] or times[3]:
            s.logged.add("learner")
        # the recorder reduces extra_info to its throughput (None: not given)
        s.throughput_known = extra_info is not None
        if extra_info:
            s.throughput_steps = self._checks.integer(
                where, "extra_info['throughput_steps']", extra_info
            )
        else:
            s.throughput_steps = 0
        if metrics:
            s.latest_metrics.update(metrics)
            self._chart_loss(metrics)
        pending = self._pending
        if reward is not None:
            history = s.reward_history
            if pending.collector_reward and history:
                history[-1] = reward
            else:
                history.append(reward)
            s.hparams.reward(reward)
        pending.collector_reward = False
        if components:
            s.reward_components = components
        s.status = "Training"
        s.training_started = True
        s.steps_logged += 1
        return s, times

    def _tail(self, tags: list[str], values: list[float], times: Times) -> tuple[Histogram, ...]:
        """The record's columns after the step's own dicts: what waited for it (episodes,
        the sample, histograms: taken, so the next step starts empty), the seed's tail,
        collector timings, throughput, the dropped total. Returns the histograms."""
        s = self.state
        pending = self._pending
        acc = pending.episodes
        if acc[1] or acc[3]:  # episodes ended since the previous step (log_episodes)
            if acc[1]:
                tags += ("episode/return", "episode/count")
                values += (acc[0] / acc[1], acc[1])
            if acc[3]:
                s.ep_length = acc[2] / acc[3]
            pending.episodes = [0.0, 0.0, 0.0, 0.0]
        if s.ep_length > 0:
            tags.append("episode/length")
            values.append(s.ep_length)
        train_time, wait_time, h2d_time, weight_sync_time = times
        if self.seed_tags:
            tags += STEP_TAIL
            values += (
                s.timeout_rate,
                s.terminated_rate,
                wait_time * 1000,
                h2d_time * 1000,
                train_time * 1000,
                weight_sync_time * 1000,
            )
        else:
            self._scaffolding(tags, values)
        timing = s.collector_timing
        if timing:
            keys = tuple(timing)
            cache = self.collector_tags
            tags += cache.get(keys) or _tag_names(cache, keys, collector_tag)
            values += timing.values()
        # State.steps_per_sec() and pipeline_time(), from the locals (one a step)
        pipeline = h2d_time + train_time + weight_sync_time
        if s.throughput_steps > 0 and pipeline > 0:  # throughput_steps is 0 when not known
            tags.append("perf/steps_per_sec")
            values.append(s.throughput_steps / pipeline)
        if self.seed_tags or "learner" in s.logged:
            tags.append("perf/iter_ms")
            values.append(pipeline * 1000)
        if self.dropped:
            tags.append("aoff/dropped_events")
            values.append(float(self.dropped))
        if pending.system is None and not pending.histograms:  # most steps: nothing waits
            return ()
        return self._attached(pending, tags, values)

    @staticmethod
    def _attached(pending: Pending, tags: list[str], values: list[float]) -> tuple[Histogram, ...]:
        """The sample and the histograms that waited for this step, appended and taken."""
        system = pending.system
        if system is not None:
            tags += system
            values += system.values()
            pending.system = None
        if not pending.histograms:
            return ()
        histograms = tuple(pending.histograms.values())
        pending.histograms = {}
        for h in histograms:
            for tag, value in histogram_scalars(h):
                tags.append(tag)
                values.append(value)
        return histograms

    def _chart_loss(self, metrics: dict[str, float]) -> None:
        """One point of the charted loss for this step: the loss charted so far while
        the step has it, else the first loss key of the step (the chart starts over)."""
        s = self.state
        name = s.loss_name
        if name is None or name not in metrics:
            keys = tuple(metrics)
            cache = self._loss_keys
            if keys not in cache:
                if len(cache) >= _TAG_SEQS_MAX:
                    cache.clear()
                cache[keys] = min((k for k in keys if "loss" in k.lower()), default=None)
            new = cache[keys]
            if new is None:
                return
            if new != name:
                s.loss_name = name = new
                s.loss_history.clear()
        s.loss_history.append(metrics[name])

    def _scaffolding(self, tags: list[str], values: list[float]) -> None:
        """The seed's step tail, without ``seed_tags``: the done rates once
        ``update_done_rates`` was called, the learner times once a step carried one (what
        the calls carried, never a 0 that nobody logged)."""
        s = self.state
        if "done_rates" in s.logged:
            tags += STEP_TAIL[:2]
            values += (s.timeout_rate, s.terminated_rate)
        if "learner" in s.logged:
            tags += STEP_TAIL[2:]
            values += (
                s.wait_time * 1000,
                s.h2d_time * 1000,
                s.train_time * 1000,
                s.weight_sync_time * 1000,
            )

    def tagged(
        self,
        where: str,
        values: object,
        cache: dict[tuple[str, ...], tuple[str, ...]],
        spell: Callable[[str], str],
        aliases: bool = False,
    ) -> tuple[dict[str, float], tuple[str, ...]]:
        """A dict argument, checked (:meth:`Checks.mapping`), and its tags. ``cache`` holds the
        tags of key sequences already checked (valid keys, no legacy alias beside its
        canonical key): a dict of such keys and plain floats, the usual step, costs a
        key tuple and a lookup, not the checks (~0.8 instead of ~2.2 us for 12 keys)."""
        if type(values) is dict and _FLOAT_ONLY.issuperset(map(type, values.values())):
            tags = cache.get(tuple(values))
            if tags is not None:
                return values, tags
        if type(values) is dict and _VECTOR_ONLY & set(map(type, values.values())):
            values = {
                k: self._vector(spell(k), v) if type(v) is Vector and type(k) is str else v
                for k, v in values.items()
            }
        clean = self._checks.mapping(where, values)
        if aliases:
            clean = drop_aliases(clean)
        keys = tuple(clean)
        return clean, cache.get(keys) or _tag_names(cache, keys, spell)

    def _vector(self, tag: str, v: Vector) -> float:
        """A per-env vector at ``tag``: its distribution joins this step's record as the
        histogram ``<tag>/envs``; its mean is the tag's value (``_vectors.py``)."""
        self._pending.add_histogram(tag + ENVS_SUFFIX, v.values)
        return mean(v)

    def shared_tags(self, tags: list[str]) -> tuple[str, ...]:
        """The one tuple of this tag sequence the records share (see :meth:`_scalars`)."""
        return self._scalars(tags, [0.0] * len(tags)).tags

    #: the charted loss's point for a step's metrics (the run fold's too)
    chart_loss = _chart_loss

    def _scalars(self, tags: list[str], values: list[float]) -> Scalars:
        """The record's pairs, with one ``tags`` tuple per tag sequence (see Scalars)."""
        last = self._last_tags
        if tags == last[0]:  # the previous step's tags: equal item by item, by identity
            return scalars_of(last[1], tuple(values))
        key = tuple(tags)
        seen = self._tag_seqs
        shared = seen.get(key)
        if shared is None:
            if len(seen) >= _TAG_SEQS_MAX:
                seen.clear()
            shared = seen[key] = key
        self._last_tags = (tags, shared)
        return scalars_of(shared, tuple(values))
