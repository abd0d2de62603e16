"""The fold of a run of regular iterations at once: shapes checked once, rows written whole.

Why a module of its own: a training loop logs the same iteration again and again (its
collector timings, done rates, ``log_collector`` and a ``log_step`` with the same keys,
plain floats), and the per-event fold (``_fold_step``) pays for that generality every
event: it checks each value, spells each dict's tags, builds the record's tag list and
the state's fields one by one. Here a frame's events are first read as a table: one pass
(:meth:`RunFold.scan`) checks each event's shape against the run's signature (the kinds
above, no axes, each dict with the key sequence the per-event fold already checked and
plain float values, integers that fit int64), and cuts the run where anything changes the
record's tags. The run is then folded as columns: the record's tags once, each step's
row as one tuple (the latest done rates, collector total and timings carried forward),
and the dashboard's state from the run's last values and its histories extended.

The per-event fold stays the definition: whatever the scan refuses (media, histograms,
text, ``SummaryWriter``'s records, producers, axes, a value that is not a float, a
first sight of a key sequence, a step that changes the tags) is folded there, and a test
folds the same adversarial sequences both ways and compares the files and the state.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

from . import _events as ev
from ._columns import ScalarColumns, row_records
from ._fold_pending import Pending
from ._fold_step import STEP_TAIL, StepFold, collector_tag
from ._records import StepRecord
from ._state import State

__all__ = ["RunFold"]

#: steps below which a run is left to the per-event fold (the scan's fixed cost)
MIN_STEPS = 4
_STEP = ev.STEP
_TIMING = ev.COLLECTOR_TIMING
_COLLECTOR = ev.COLLECTOR
_DONE = ev.DONE_RATES
#: each kind's length without its optional fields (axes: the per-event fold's)
_STEP_LENS = {2 + len(ev.KINDS[ev.STEP].fields)}
_COLLECTOR_LENS = {2 + len(ev.KINDS[ev.COLLECTOR].fields)}
_DONE_LENS = {2 + len(ev.KINDS[ev.DONE_RATES].fields)}
_TIMING_LENS = {2 + len(ev.KINDS[ev.COLLECTOR_TIMING].fields)}
_RUN_KINDS = frozenset((_STEP, _TIMING, _COLLECTOR, _DONE))
_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1
_FLOAT_ONLY = {float}
_INT_ONLY = {int}
_NONE_ONLY = {type(None)}
_DICT_ONLY = {dict}
_TUPLE_ONLY = {tuple}
_first = itemgetter(0)
_fifth = itemgetter(4)


def _items(events: Sequence[ev.Event], at: list[int]) -> list[ev.Event]:
    """``events`` at the indices ``at``, in one C-level call."""
    if len(at) < 2:
        return [events[i] for i in at]
    return list(itemgetter(*at)(events))


def _dict_matrix(
    col: Sequence[Any], cache: dict[tuple[str, ...], tuple[str, ...]]
) -> Any | bool | None:
    """A step column of dicts (or of ``None``): ``None`` where the run fold cannot take it
    (not all dicts, or all ``None``; key sequences that differ or that the per-event fold
    never checked; a value that is not a float); ``False`` where it holds no dicts; else
    the dicts' values as a float64 matrix, one row a dict.

    Each pass over the dicts is one C-level call (their keys joined, their values joined,
    the values' types), with no tuple a dict: the joined keys equal ``keys * len(col)``
    exactly when every dict has the key sequence ``keys`` (a dict's keys are distinct, so
    none can be longer than ``keys`` without repeating one)."""
    kinds = set(map(type, col))
    if kinds == _NONE_ONLY:
        return False
    if kinds != _DICT_ONLY:
        return None
    keys = tuple(col[0])
    if keys not in cache or list(chain.from_iterable(col)) != list(keys) * len(col):
        return None
    values = list(chain.from_iterable(map(dict.values, col)))
    if not _FLOAT_ONLY.issuperset(map(type, values)):
        return None
    import numpy as np

    return np.array(values, np.float64).reshape(len(col), len(keys))


def _ints(col: Sequence[Any]) -> bool:
    """Every item an int that fits int64 (``bool`` is not one)."""
    return set(map(type, col)) == _INT_ONLY and min(col) >= _I64_MIN and max(col) <= _I64_MAX


def _all_floats(*cols: Sequence[object]) -> bool:
    return all(set(map(type, c)) == _FLOAT_ONLY for c in cols)


class RunFold:
    """Folds runs of regular iterations (see the module's docstring) into ``state``,
    with the per-event fold's parts (``steps``, ``pending``) as they stand."""

    __slots__ = ("_pending", "_state", "_steps")

    def __init__(self, state: State, steps: StepFold, pending: Pending) -> None:
        self._state = state
        self._steps = steps
        self._pending = pending

    def ready(self) -> bool:
        """Whether the state lets a run be folded at once: started, the original
        logger's step tail, no axes, nothing waiting for the next step."""
        s, steps, p = self._state, self._steps, self._pending
        acc = p.episodes
        return (
            s.started
            and steps.seed_tags
            and not steps.axes.values
            and steps.axes.staleness is None
            and p.system is None
            and not p.histograms
            and not acc[1]
            and not acc[3]
        )

    @staticmethod
    def span(events: Sequence[ev.Event], start: int) -> tuple[int, list[int], int]:
        """The run's candidate span from ``start``: its end (after its last step; only
        the four kinds, plain tuples), its events' kinds, and the index of the first
        event that is not of them (no span starts before it)."""
        part = events[start:]
        kinds: list[int] = list(map(_first, part))
        # the common case, a slice of nothing else, in three C-level passes
        if not (_RUN_KINDS.issuperset(kinds) and _TUPLE_ONLY.issuperset(map(type, part))):
            for i, e in enumerate(part):
                if kinds[i] not in _RUN_KINDS or type(e) is not tuple:
                    del kinds[i:]
                    break
        stop = start + len(kinds)
        try:
            last = len(kinds) - 1 - kinds[::-1].index(_STEP)
        except ValueError:
            return start, [], stop
        del kinds[last + 1 :]
        return start + last + 1, kinds, stop

    def take_halves(
        self, events: Sequence[ev.Event], kinds: list[int], producers: int
    ) -> tuple[list[StepRecord], bool, int]:
        """:meth:`take`, and where a check refuses the span, its first half (cut after a
        step) and so on: a rare change (a periodic evaluation's keys) costs the per-event
        fold a part of the span, not all of it. Its records, whether a collector's reward
        started a point, and the end of what it folded or, nothing folded, of the part
        the per-event fold should take."""
        while True:
            got = self.take(events, kinds, producers)
            if got is not None:
                return got[0], got[1], len(kinds)
            at = [i for i, kind in enumerate(kinds) if kind == _STEP]
            if len(at) < 2 * MIN_STEPS:
                return [], False, len(kinds)
            cut = at[len(at) // 2 - 1] + 1
            del kinds[cut:]
            events = events[:cut]

    def take(
        self, events: Sequence[ev.Event], kinds: list[int], producers: int
    ) -> tuple[list[StepRecord], bool] | None:
        """Fold ``events`` (a span, ``kinds`` its kinds) as columns, ``producers`` the
        producers' part of the run's total steps; its records and whether a collector's
        reward started a new point of the reward history. ``None`` (nothing folded)
        where a check refuses the span: the per-event fold takes it."""
        import numpy as np

        steps = self._steps
        ka = np.array(kinds, np.int64)
        at = (ka == _STEP).nonzero()[0]  # not flatnonzero: its Python wrappers, per call
        n = len(at)
        if n < MIN_STEPS:
            return None
        pick = _items(events, at.tolist())
        if set(map(len, pick)) != _STEP_LENS:
            return None
        cols = tuple(zip(*pick, strict=True))
        _, _, its, ms, rs, rms, cs, ts, ws, hs, wss, extras = cols
        mats = (
            _dict_matrix(ms, steps.metric_tags),
            _dict_matrix(rms, steps.reward_tags),
            _dict_matrix(cs, steps.reward_tags),
        )
        if any(x is None for x in mats) or not _ints(its):
            return None
        if not _all_floats(ts, ws, hs, wss):
            return None
        reward_types = set(map(type, rs))
        if reward_types != _FLOAT_ONLY and reward_types != _NONE_ONLY:
            return None
        extra_types = set(map(type, extras))
        if extra_types == _INT_ONLY:
            if not _ints(extras):
                return None
            extra = np.array(extras, np.int64)
        elif extra_types == _NONE_ONLY:
            extra = np.zeros(n, np.int64)
        else:
            return None
        with np.errstate(all="ignore"):  # inf and NaN as Python's float arithmetic gives
            return self._columns(
                events, kinds, ka, at, pick, cols, producers, reward_types, extra, mats
            )

    def _columns(
        self,
        events: Sequence[ev.Event],
        kinds: list[int],
        ka: Any,
        at: Any,
        pick: list[ev.Event],
        cols: tuple[tuple[Any, ...], ...],
        producers: int,
        reward_types: set[type],
        extra: Any,
        mats: tuple[Any, Any, Any],
    ) -> tuple[list[StepRecord], bool] | None:
        """:meth:`take` past its checks of the steps' columns (``cols``: the steps'
        fields as columns; ``mats``: the metrics',
        reward metrics' and reward components' matrices, ``False`` for a column of
        ``None``)."""
        import numpy as np

        s, steps = self._state, self._steps
        n = len(pick)
        _, walls, its, _, rs, _, _, ts, ws, hs, wss, _ = cols
        # each dict column checked by take(): all dicts of one key sequence, or all None
        m, rm, c = mats
        t, w, h, wsync = (np.array(c, np.float64) for c in (ts, ws, hs, wss))
        pipeline = h + t + wsync
        rate = (extra > 0) & (pipeline > 0)
        if rate.any() and not rate.all():  # steps/s comes and goes: the tags change
            return None
        carried = self._carried(events, kinds, ka, at)
        if carried is None:
            return None
        timeout, terminated, total, timing = carried
        its_a = np.array(its, np.int64)
        total = total + producers
        step = np.where(total > 0, total, its_a)
        # the run's own records below the step before them: written at their step, counted
        # (as the per-event fold counts them)
        before = np.concatenate(([steps.last_step], step[:-1]))
        late = int((step < before).sum())
        parts: list[Any] = [its_a.astype(np.float64), step.astype(np.float64)]
        if m is not False:
            parts.append(m)
        with_reward = reward_types == _FLOAT_ONLY
        if with_reward:
            parts.append(np.array(rs, np.float64))
        if rm is not False:
            parts.append(rm)
        if c is not False:
            parts.append(c)
        if s.ep_length > 0:
            parts.append(np.full(n, s.ep_length))
        parts += (timeout, terminated, w * 1000, h * 1000, t * 1000, wsync * 1000)
        if timing is not None:
            parts.append(timing)
        if rate.all():
            parts.append(extra / pipeline)
        parts.append(pipeline * 1000)
        if steps.dropped:
            parts.append(np.full(n, float(steps.dropped)))
        table = np.column_stack(parts)
        shared = steps.shared_tags(self._tags(pick[0], with_reward, bool(rate.all())))
        if len(shared) != table.shape[1]:  # pragma: no cover - the tags and the columns
            raise AssertionError("the run's tags and columns differ")
        walls_a = np.array(walls, np.float64)
        records = row_records(ScalarColumns(shared, step, walls_a, table), its)
        s.late_records += late
        steps.last_step = int(step[-1])
        new_point = self._histories(events, ka, pick, with_reward)
        learner = bool((t != 0).any() or (w != 0).any() or (h != 0).any() or (wsync != 0).any())
        self._settle(events, kinds, pick, learner, n)
        if _COLLECTOR in kinds:
            s.total_steps = s.own_total_steps + producers
        return records, new_point

    def take_block(
        self, walls: Sequence[float], its: Any, names: tuple[str, ...], values: Any, producers: int
    ) -> list[StepRecord] | None:
        """A group's block (``STEP_BLOCK``: ``K`` steps of metrics only, plain floats, one
        key sequence ``names``; ``its`` int64, ``values`` a ``K x keys`` float64 array)
        folded as :meth:`take` folds the same steps' events, straight from its columns:
        no event, no dict a step. ``None`` (nothing folded) where the state or the key
        sequence is not one the run fold takes: the per-event fold takes the steps."""
        import numpy as np

        s, steps = self._state, self._steps
        n = len(walls)
        if n < MIN_STEPS or not names or names not in steps.metric_tags or not self.ready():
            return None
        first = dict(zip(names, values[0].tolist(), strict=True))
        total = s.own_total_steps + producers
        step = np.full(n, total, np.int64) if total > 0 else np.asarray(its, np.int64)
        before = np.concatenate(([steps.last_step], step[:-1]))
        late = int((step < before).sum())
        zeros = np.zeros(n)
        parts: list[Any] = [np.asarray(its, np.float64), step.astype(np.float64), values]
        if s.ep_length > 0:
            parts.append(np.full(n, s.ep_length))
        parts += (np.full(n, s.timeout_rate), np.full(n, s.terminated_rate))
        parts += (zeros,) * 4  # the learner's times: a block carries none
        if s.collector_timing:
            parts.append(np.tile(np.array(tuple(s.collector_timing.values())), (n, 1)))
        parts.append(zeros)  # perf/iter_ms: no times, no steps/s
        if steps.dropped:
            parts.append(np.full(n, float(steps.dropped)))
        table = np.column_stack(parts)
        like = (_STEP, 0.0, 0, first, None, None, None)
        shared = steps.shared_tags(self._tags(like, False, False))
        if len(shared) != table.shape[1]:  # pragma: no cover - the tags and the columns
            raise AssertionError("the block's tags and columns differ")
        iterations = its.tolist()
        records = row_records(
            ScalarColumns(shared, step, np.array(walls, np.float64), table), iterations
        )
        s.late_records += late
        steps.last_step = int(step[-1])
        # the history as the per-event fold leaves it: a step without a reward ends a
        # collector's point; the charted loss from the first step's keys on
        self._pending.collector_reward = False
        steps.chart_loss(first)
        name = s.loss_name
        if name is not None and name in first:
            s.loss_history.extend(values[1:, names.index(name)].tolist())
        s.last_wall_time = walls[-1]
        s.iteration = iterations[-1]
        s.train_time = s.wait_time = s.h2d_time = s.weight_sync_time = 0.0
        s.throughput_known = False
        s.throughput_steps = 0
        s.latest_metrics.update(zip(names, values[-1].tolist(), strict=True))
        s.status = "Training"
        s.training_started = True
        s.steps_logged += n
        return records

    def _carried(
        self, events: Sequence[ev.Event], kinds: list[int], ka: Any, at: Any
    ) -> tuple[Any, Any, Any, Any] | None:
        """At each step, the latest done rates, collector total and collector timings
        (the state's before the span's first): columns, or ``None`` where an event of
        those kinds is not plain."""
        import numpy as np

        s = self._state

        def latest(kind: int) -> tuple[Any, list[ev.Event]]:
            mask = ka == kind
            ordinal = mask.cumsum()  # at each position: the kind's events so far
            return ordinal[at], _items(events, mask.nonzero()[0].tolist())

        row, done = latest(_DONE)
        if done:
            if set(map(len, done)) != _DONE_LENS:
                return None
            _, _, a, b = zip(*done, strict=True)
            if not _all_floats(a, b):
                return None
            timeout = np.array((s.timeout_rate, *a), np.float64)[row]
            terminated = np.array((s.terminated_rate, *b), np.float64)[row]
        else:
            timeout = np.full(len(at), s.timeout_rate)
            terminated = np.full(len(at), s.terminated_rate)
        row, coll = latest(_COLLECTOR)
        if coll:
            if set(map(len, coll)) != _COLLECTOR_LENS:
                return None
            _, _, tot, buf, mr = zip(*coll, strict=True)
            if not _ints(tot) or not _ints(buf) or not _all_floats(mr):
                return None
            total = np.array((s.own_total_steps, *tot), np.int64)[row]
        else:
            total = np.full(len(at), s.own_total_steps, np.int64)
        timing_keys = tuple(s.collector_timing)
        row, tim = latest(_TIMING)
        if tim:
            if not timing_keys or timing_keys not in self._steps.collector_tags:
                return None
            if set(map(len, tim)) != _TIMING_LENS:
                return None
            got = _dict_matrix([e[2] for e in tim], {timing_keys: ()})
            if got is None or got is False:
                return None
            kt = len(timing_keys)
            prior = np.array(tuple(s.collector_timing.values()), np.float64).reshape(1, kt)
            timing = np.concatenate((prior, got))[row]
        elif timing_keys:
            timing = np.tile(np.array(tuple(s.collector_timing.values())), (len(at), 1))
        else:
            timing = None
        return timeout, terminated, total, timing

    def _histories(
        self, events: Sequence[ev.Event], ka: Any, pick: list[ev.Event], with_reward: bool
    ) -> bool:
        """The reward history (a collector's reward is a point, the next step's reward
        replaces it), the best reward, the charted loss; whether a collector's reward
        started a point."""
        import numpy as np

        s, pending = self._state, self._pending
        history = s.reward_history
        # the collectors and steps in order (``ka``: the span's kinds as an array); a
        # collector's reward of 0 is no point and changes nothing (the per-event fold's)
        at = ((ka == _COLLECTOR) | (ka == _STEP)).nonzero()[0]
        kq = ka[at]
        is_step = kq == _STEP
        coll = ~is_step
        values = np.zeros(len(at))
        if coll.any():
            values[coll] = list(map(_fifth, _items(events, at[coll].tolist())))
        point = coll & (values != 0)  # NaN is a point, as ``!= 0`` says
        new_point = bool(point.any())
        if with_reward:
            rewards = [e[4] for e in pick]
            values[is_step] = rewards
            # a step's reward replaces the point of a collector just before it (no other
            # step between), else is a point of its own; the span ends with a step
            live = is_step | point
            fk, fv = is_step[live], values[live]
            keep = fk.copy()
            keep[:-1] |= ~fk[1:]  # a collector's point stays when a collector follows
            if fk[0] and pending.collector_reward and history:
                history[-1] = rewards[0]  # the point from before the span
                keep[0] = False
            history.extend(fv[keep].tolist())
            s.hparams.rewards(rewards)
        else:
            history.extend(values[point].tolist())
        pending.collector_reward = False  # the span ends with a step
        first = pick[0][3]
        if first:
            steps = self._steps
            steps.chart_loss(first)
            name = s.loss_name
            if name is not None and name in first:
                s.loss_history.extend([e[3][name] for e in pick[1:]])
        return new_point

    def _settle(
        self,
        events: Sequence[ev.Event],
        kinds: list[int],
        pick: list[ev.Event],
        learner: bool,
        n: int,
    ) -> None:
        """The state's fields the span leaves: its last step's, its last done rates,
        collector and timings."""
        s = self._state
        last = pick[-1]
        (_, _, it, m, _, _, c, t, w, h, ws, extra) = last
        s.last_wall_time = events[-1][1]
        s.iteration = it
        s.train_time, s.wait_time, s.h2d_time, s.weight_sync_time = t, w, h, ws
        s.throughput_known = extra is not None
        s.throughput_steps = extra if extra else 0
        if m:
            s.latest_metrics.update(m)
        if c:
            s.reward_components = c
        logged = s.logged
        if learner:
            logged.add("learner")
        for kind, name, apply in (
            (_DONE, "done_rates", self._last_done),
            (_COLLECTOR, "collector", self._last_collector),
            (_TIMING, "", self._last_timing),
        ):
            if kind in kinds:
                i = len(kinds) - 1 - kinds[::-1].index(kind)
                apply(events[i])
                if name:
                    logged.add(name)
        s.status = "Training"
        s.training_started = True
        s.steps_logged += n

    def _last_done(self, e: ev.Event) -> None:
        self._state.timeout_rate, self._state.terminated_rate = e[2], e[3]

    def _last_collector(self, e: ev.Event) -> None:
        s = self._state
        s.own_total_steps, s.buffer_size = e[2], e[3]

    def _last_timing(self, e: ev.Event) -> None:
        self._state.collector_timing.update(e[2])

    def _tags(self, first: ev.Event, with_reward: bool, rate: bool) -> list[str]:
        """The run's record tags, in the per-event fold's order (``_fold_step``)."""
        s, steps = self._state, self._steps
        m, rm, c = first[3], first[5], first[6]
        tags = ["axis/iteration", "axis/env_steps_total"]
        if m:
            tags += steps.metric_tags[tuple(m)]
        if with_reward:
            tags.append("reward/mean")
        if rm:
            tags += steps.reward_tags[tuple(rm)]
        if c:
            tags += steps.reward_tags[tuple(c)]
        if s.ep_length > 0:
            tags.append("episode/length")
        tags += STEP_TAIL
        tags += map(collector_tag, s.collector_timing)
        if rate:
            tags.append("perf/steps_per_sec")
        tags.append("perf/iter_ms")
        if steps.dropped:
            tags.append("aoff/dropped_events")
        return tags
