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

A span is read into columns first (:class:`_Span`), from its events or from a
``RUN_BLOCK`` (pickles of such iterations the agent read as columns, ``_core/_runblock``:
no event made at all), and one definition folds both (:meth:`RunFold._fold_span`).

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
from ._runblock import RunBlock
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


def _names(d: object) -> tuple[str, ...] | None:
    """A step's dict's key sequence, ``None`` for no dict."""
    return None if d is None else tuple(d)  # type: ignore[arg-type]


class _Span:
    """A span's columns, checked, as the fold of a span reads them: from its events
    (:meth:`RunFold.take`) or from a block of pickles read as columns
    (:meth:`RunFold.take_runblock`), so both fold through one definition.

    ``ka``/``at``: the span's kinds (int64) and its steps' places; the steps' ``walls``
    (float64), ``its`` (ints), key sequences ``names`` and matrices ``mats`` (metrics,
    reward metrics, components: ``False`` for none), ``rewards`` (floats, or ``None``),
    learner ``times`` (train, wait, h2d, weight sync: float64), ``extra`` (int64, 0 for
    none); the first step's metrics; ``last``: the last step's wall, iteration, metrics,
    components, four times and ``extra_info``; the done rates (two float64 columns),
    collectors (totals int64, rewards float64) and timings (a matrix in the state's key
    order) in order, ``None`` for none, and each kind's last."""

    __slots__ = (
        "at",
        "coll",
        "derived",
        "done",
        "extra",
        "first_metrics",
        "its",
        "ka",
        "last",
        "last_coll",
        "last_done",
        "last_timing",
        "mats",
        "names",
        "rewards",
        "times",
        "timing",
        "walls",
    )

    def __init__(
        self,
        ka: Any,
        at: Any,
        walls: Any,
        its: list[int],
        names: tuple[tuple[str, ...] | None, ...],
        mats: tuple[Any, Any, Any],
        rewards: Sequence[float] | None,
        times: tuple[Any, ...],
        extra: Any,
        first_metrics: dict[str, float] | None,
        last: tuple[Any, ...],
        done: tuple[Any, Any] | None,
        coll: tuple[Any, Any] | None,
        timing: Any,
        last_done: tuple[float, float] | None,
        last_coll: tuple[int, int] | None,
        last_timing: dict[str, float] | None,
    ) -> None:
        self.ka, self.at, self.walls, self.its = ka, at, walls, its
        self.names, self.mats, self.rewards, self.times = names, mats, rewards, times
        self.extra, self.first_metrics, self.last = extra, first_metrics, last
        self.done, self.coll, self.timing = done, coll, timing
        self.last_done, self.last_coll, self.last_timing = last_done, last_coll, last_timing
        #: what the fold derives from ``ka`` and ``at`` alone (a block's shape keeps it
        #: for its next block of that size)
        self.derived: dict[Any, Any] = {}


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
        _, walls, its, ms, rs, rms, cs, ts, ws, hs, wss, extras = cols
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
        others = self._others(events, ka)
        if others is None:
            return None
        first, last = pick[0], pick[-1]
        span = _Span(
            ka,
            at,
            np.array(walls, np.float64),
            list(its),
            (_names(first[3]), _names(first[5]), _names(first[6])),
            (mats[0], mats[1], mats[2]),  # None refused above
            rs if reward_types == _FLOAT_ONLY else None,
            tuple(np.array(c, np.float64) for c in (ts, ws, hs, wss)),
            extra,
            first[3],
            (last[1], last[2], last[3], last[6], *last[7:12]),
            *others,
        )
        with np.errstate(all="ignore"):  # inf and NaN as Python's float arithmetic gives
            return self._fold_span(span, producers)

    def _others(self, events: Sequence[ev.Event], ka: Any) -> tuple[Any, ...] | None:
        """A span's done rates, collectors and collector timings as :class:`_Span`
        holds them (columns, and each kind's last), or ``None`` where an event of those
        kinds is not plain."""
        import numpy as np

        s = self._state

        def of(kind: int) -> list[ev.Event]:
            return _items(events, (ka == kind).nonzero()[0].tolist())

        done = of(_DONE)
        done_cols = last_done = None
        if done:
            if set(map(len, done)) != _DONE_LENS:
                return None
            _, _, a, b = zip(*done, strict=True)
            if not _all_floats(a, b):
                return None
            done_cols = (np.array(a, np.float64), np.array(b, np.float64))
            last_done = (a[-1], b[-1])
        coll = of(_COLLECTOR)
        coll_cols = last_coll = None
        if coll:
            if set(map(len, coll)) != _COLLECTOR_LENS:
                return None
            _, _, tot, buf, mr = zip(*coll, strict=True)
            if not _ints(tot) or not _ints(buf) or not _all_floats(mr):
                return None
            coll_cols = (np.array(tot, np.int64), np.array(mr, np.float64))
            last_coll = (tot[-1], buf[-1])
        tim = of(_TIMING)
        timing = last_timing = None
        if tim:
            timing_keys = tuple(s.collector_timing)
            if not timing_keys or timing_keys not in self._steps.collector_tags:
                return None
            if set(map(len, tim)) != _TIMING_LENS:
                return None
            got = _dict_matrix([e[2] for e in tim], {timing_keys: ()})
            if got is None or got is False:
                return None
            timing = got
            last_timing = tim[-1][2]
        return done_cols, coll_cols, timing, last_done, last_coll, last_timing

    def _fold_span(self, span: _Span, producers: int) -> tuple[list[StepRecord], bool] | None:
        """Fold a span from its columns (:class:`_Span`, checked by :meth:`take` or
        :meth:`take_runblock`): its records and whether a collector's reward started a
        point; ``None`` (nothing folded) where its steps/s comes and goes."""
        import numpy as np

        s, steps = self._state, self._steps
        n = len(span.its)
        m, rm, c = span.mats
        t, w, h, wsync = span.times
        extra = span.extra
        pipeline = h + t + wsync
        rate = (extra > 0) & (pipeline > 0)
        if rate.any() and not rate.all():  # steps/s comes and goes: the tags change
            return None
        timeout, terminated, total, timing = self._carried(span)
        its_a = np.array(span.its, np.int64)
        total = total + producers
        step = np.where(total > 0, total, its_a)
        # the run's own records below the step before them: written at their step, counted
        # (as the per-event fold counts them)
        before = np.concatenate(([steps.last_step], step[:-1]))
        late = int((step < before).sum())
        parts: list[Any] = [its_a.astype(np.float64), step.astype(np.float64)]
        if m is not False:
            parts.append(m)
        with_reward = span.rewards is not None
        if with_reward:
            parts.append(np.array(span.rewards, np.float64))
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
        shared = steps.shared_tags(self._tags(span.names, with_reward, bool(rate.all())))
        if len(shared) != table.shape[1]:  # pragma: no cover - the tags and the columns
            raise AssertionError("the run's tags and columns differ")
        records = row_records(ScalarColumns(shared, step, span.walls, table), span.its)
        s.late_records += late
        steps.last_step = int(step[-1])
        new_point = self._histories(span)
        learner = bool((t != 0).any() or (w != 0).any() or (h != 0).any() or (wsync != 0).any())
        self._settle(span, learner, n)
        if span.coll is not None:
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
        shared = steps.shared_tags(self._tags((names, None, None), False, False))
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

    def take_runblock(
        self, block: RunBlock, producers: int
    ) -> tuple[list[StepRecord], bool] | None:
        """Pickles of regular iterations read as columns (``RUN_BLOCK``: a
        :class:`~aoff._core._runblock.RunBlock`) folded as :meth:`take` folds their
        events up to the last one's last step, straight from the block's matrices: no
        event, tuple, dict or float a step. Its records and whether a collector's reward
        started a point; ``None`` (nothing folded) where the state or a key sequence is
        not one the run fold takes (the per-event fold's caches, as :meth:`take`
        checks them): the caller folds the events. The events after the last step are
        the caller's to fold (``Folder.apply_runblock``)."""
        import numpy as np

        s, steps = self._state, self._steps
        shape = block.shape
        mp = block.pickles
        n = mp * shape.steps
        if n < MIN_STEPS or not self.ready():
            return None
        m_names, rm_names, c_names = shape.m_names, shape.rm_names, shape.c_names
        if m_names not in steps.metric_tags:
            return None
        for names in (rm_names, c_names):
            if names is not None and names not in steps.reward_tags:
                return None
        f, i = block.floats, block.ints
        nt = mp * len(shape.timing_slots) - shape.timing_tail
        timing = last_timing = None
        if nt > 0:
            keys = tuple(s.collector_timing)
            if not keys or keys != shape.timing_keys or keys not in steps.collector_tags:
                return None
            timing = f[:, shape.timing_slots].reshape(-1, len(keys))[:nt]
            last_timing = dict(zip(keys, timing[-1].tolist(), strict=True))
        ka, at, derived = shape.span(mp)
        its = i[:, shape.it_slots].ravel().tolist()
        cols = f[:, shape.step_slots].reshape(n, -1)  # see RunShape.step_slots
        walls = np.ascontiguousarray(cols[:, 0])
        km = len(m_names)
        m = cols[:, 1 : 1 + km]
        k = 1 + km
        rewards = None
        if shape.reward_slots is not None:
            rewards = cols[:, k].tolist()
            k += 1
        rm: Any = False
        if rm_names is not None:
            rm = cols[:, k : k + len(rm_names)]
            k += len(rm_names)
        c: Any = False
        if c_names is not None:
            c = cols[:, k : k + len(c_names)]
            k += len(c_names)
        t, w, h, wsync = (cols[:, k + j] for j in range(4))
        extra = np.zeros(n, np.int64)
        last_extra = None
        if shape.extra_slots is not None:
            extra = i[:, shape.extra_slots].ravel()
            last_extra = int(extra[-1])
        nd = mp * len(shape.done_a) - shape.done_tail
        done = last_done = None
        if nd > 0:
            done = (f[:, shape.done_a].ravel()[:nd], f[:, shape.done_b].ravel()[:nd])
            last_done = (float(done[0][-1]), float(done[1][-1]))
        nc = mp * len(shape.coll_total) - shape.coll_tail
        coll = last_coll = None
        if nc > 0:
            total = i[:, shape.coll_total].ravel()[:nc]
            coll = (total, f[:, shape.coll_reward].ravel()[:nc])
            last_coll = (int(total[-1]), int(i[:, shape.coll_buf].ravel()[nc - 1]))
        last_c = None if c is False else dict(zip(c_names or (), c[-1].tolist(), strict=True))
        span = _Span(
            ka,
            at,
            walls,
            its,
            (m_names, rm_names, c_names),
            (m, rm, c),
            rewards,
            (t, w, h, wsync),
            extra,
            dict(zip(m_names, m[0].tolist(), strict=True)),
            (
                float(walls[-1]),
                its[-1],
                dict(zip(m_names, m[-1].tolist(), strict=True)),
                last_c,
                *(float(x[-1]) for x in (t, w, h, wsync)),
                last_extra,
            ),
            done,
            coll,
            timing,
            last_done,
            last_coll,
            last_timing,
        )
        span.derived = derived
        with np.errstate(all="ignore"):  # inf and NaN as Python's float arithmetic gives
            return self._fold_span(span, producers)

    def _carried(self, span: _Span) -> tuple[Any, Any, Any, Any]:
        """At each step, the latest done rates, collector total and collector timings
        (the state's before the span's first): columns."""
        import numpy as np

        s = self._state
        ka, at = span.ka, span.at
        k = len(at)

        derived = span.derived

        def row(kind: int) -> Any:
            got = derived.get(kind)
            if got is None:  # at each step: the kind's events so far
                got = derived[kind] = (ka == kind).cumsum()[at]
            return got

        if span.done is not None:
            r = row(_DONE)
            a, b = span.done
            timeout = np.concatenate((np.array([s.timeout_rate], np.float64), a))[r]
            terminated = np.concatenate((np.array([s.terminated_rate], np.float64), b))[r]
        else:
            timeout = np.full(k, s.timeout_rate)
            terminated = np.full(k, s.terminated_rate)
        if span.coll is not None:
            prior = np.array([s.own_total_steps], np.int64)
            total = np.concatenate((prior, span.coll[0]))[row(_COLLECTOR)]
        else:
            total = np.full(k, s.own_total_steps, np.int64)
        timing_keys = tuple(s.collector_timing)
        timing: Any = None
        if span.timing is not None:
            kt = len(timing_keys)
            last = np.array(tuple(s.collector_timing.values()), np.float64).reshape(1, kt)
            timing = np.concatenate((last, span.timing))[row(_TIMING)]
        elif timing_keys:
            timing = np.tile(np.array(tuple(s.collector_timing.values())), (k, 1))
        return timeout, terminated, total, timing

    def _histories(self, span: _Span) -> bool:
        """The reward history (a collector's reward is a point, the next step's reward
        replaces it), the best reward, the charted loss; whether a collector's reward
        started a point."""
        import numpy as np

        s, pending = self._state, self._pending
        history = s.reward_history
        ka = span.ka
        # the collectors and steps in order; a collector's reward of 0 is no point and
        # changes nothing (the per-event fold's)
        got = span.derived.get("history")
        if got is None:
            at = ((ka == _COLLECTOR) | (ka == _STEP)).nonzero()[0]
            is_step = ka[at] == _STEP
            got = span.derived["history"] = (at, is_step, ~is_step)
        at, is_step, coll = got
        values = np.zeros(len(at))
        if span.coll is not None:
            values[coll] = span.coll[1]
        point = coll & (values != 0)  # NaN is a point, as ``!= 0`` says
        new_point = bool(point.any())
        rewards = span.rewards
        if rewards is not None:
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
        first = span.first_metrics
        if first:
            self._steps.chart_loss(first)
            name = s.loss_name
            if name is not None and name in first:
                m_names = span.names[0] or ()
                s.loss_history.extend(span.mats[0][1:, m_names.index(name)].tolist())
        return new_point

    def _settle(self, span: _Span, learner: bool, n: int) -> None:
        """The state's fields the span leaves: its last step's, its last done rates,
        collector and timings."""
        s = self._state
        wall, it, m, c, t, w, h, ws, extra = span.last
        s.last_wall_time = wall
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
        if span.last_done is not None:
            s.timeout_rate, s.terminated_rate = span.last_done
            logged.add("done_rates")
        if span.last_coll is not None:
            s.own_total_steps, s.buffer_size = span.last_coll
            logged.add("collector")
        if span.last_timing is not None:
            s.collector_timing.update(span.last_timing)
        s.status = "Training"
        s.training_started = True
        s.steps_logged += n

    def _tags(
        self, names: tuple[tuple[str, ...] | None, ...], with_reward: bool, rate: bool
    ) -> list[str]:
        """The run's record tags, in the per-event fold's order (``_fold_step``), from
        its steps' key sequences (metrics, reward metrics, components; ``None``: none)."""
        s, steps = self._state, self._steps
        m, rm, c = names
        tags = ["axis/iteration", "axis/env_steps_total"]
        if m:
            tags += steps.metric_tags[m]
        if with_reward:
            tags.append("reward/mean")
        if rm:
            tags += steps.reward_tags[rm]
        if c:
            tags += steps.reward_tags[c]
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
