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

from . import _events as ev
from ._fold_pending import Pending
from ._fold_step import StepFold, collector_tag
from ._records import StepRecord, scalars_of, step_record
from ._state import State

__all__ = ["RunFold"]

#: steps below which a run is left to the per-event fold (the scan's fixed cost)
MIN_STEPS = 4
_STEP = ev.STEP
_TIMING = ev.COLLECTOR_TIMING
_COLLECTOR = ev.COLLECTOR
_DONE = ev.DONE_RATES
_STEP_LEN = 2 + len(ev.KINDS[ev.STEP].fields)
_COLLECTOR_LEN = 2 + len(ev.KINDS[ev.COLLECTOR].fields)
_DONE_LEN = 2 + len(ev.KINDS[ev.DONE_RATES].fields)
_TIMING_LEN = 2 + len(ev.KINDS[ev.COLLECTOR_TIMING].fields)
_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1
_FLOAT = float
_FLOAT_ONLY = frozenset((float,))
_TAIL = (
    "episode/timeout_rate",
    "episode/terminated_rate",
    "timing/learner_wait_ms",
    "timing/learner_incremental_h2d_ms",
    "timing/learner_train_ms",
    "timing/learner_weight_sync_ms",
)


def _floats(d: dict[str, object]) -> bool:
    return _FLOAT_ONLY.issuperset(map(type, d.values()))


def _int64(v: object) -> bool:
    return type(v) is int and _I64_MIN <= v <= _I64_MAX


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

    def _signature(self, e: ev.Event) -> ev.Event | None:
        """A step's tag-deciding shape, or ``None`` where the per-event fold must take it:
        each dict's tags (a key sequence it checked before, every value a float), whether
        it has a reward, whether it has a steps/s column."""
        if len(e) != _STEP_LEN or not _int64(e[2]):
            return None
        steps = self._steps
        out: list[object] = []
        for at, cache in ((3, steps.metric_tags), (5, steps.reward_tags), (6, steps.reward_tags)):
            d = e[at]
            if d is None:
                out.append(None)
                continue
            if type(d) is not dict or not _floats(d):
                return None
            tags = cache.get(tuple(d))
            if tags is None:
                return None
            out.append(tags)
        reward = e[4]
        if reward is not None and type(reward) is not _FLOAT:
            return None
        t, w, h, ws = e[7], e[8], e[9], e[10]
        if type(t) is not _FLOAT or type(w) is not _FLOAT or type(h) is not _FLOAT:
            return None
        if type(ws) is not _FLOAT:
            return None
        extra = e[11]
        if extra is not None and not _int64(extra):
            return None
        out.append(reward is None)
        out.append(extra is not None and extra > 0 and h + t + ws > 0)  # perf/steps_per_sec
        return tuple(out)

    def scan(self, events: Sequence[ev.Event], start: int) -> tuple[int, int]:
        """The end of the run of regular events from ``start`` (its last step's index
        plus one), or ``start`` when fewer than ``MIN_STEPS`` steps make one; and the
        index of the first event the scan refused (no run starts before it)."""
        timing_keys = tuple(self._state.collector_timing)
        if timing_keys not in self._steps.collector_tags:  # keys the per-event fold took
            timing_keys = ()
        signature: ev.Event | None = None
        steps = 0
        end = start
        i = start
        for i in range(start, len(events)):  # the refused event's index, after
            e = events[i]
            if type(e) is not tuple:
                break
            kind = e[0]
            if kind == _STEP:
                sig = self._signature(e)
                if sig is None or (signature is not None and sig != signature):
                    break
                signature = sig
                steps += 1
                end = i + 1
            elif kind == _TIMING:
                d = e[2]
                if len(e) != _TIMING_LEN or type(d) is not dict or not timing_keys:
                    break
                if tuple(d) != timing_keys or not _floats(d):
                    break
            elif kind == _DONE:
                if len(e) != _DONE_LEN or type(e[2]) is not _FLOAT or type(e[3]) is not _FLOAT:
                    break
            elif kind == _COLLECTOR:
                if len(e) != _COLLECTOR_LEN or not _int64(e[2]) or not _int64(e[3]):
                    break
                if type(e[4]) is not _FLOAT:
                    break
            else:
                break
        else:
            i = len(events)
        return (end if steps >= MIN_STEPS else start), i

    def fold(self, run: Sequence[ev.Event], producers: int) -> tuple[list[StepRecord], bool]:
        """Fold ``run`` (a span :meth:`scan` accepted), ``producers`` the producers'
        part of the run's total steps; its records, and whether a collector's reward
        started a new point of the reward history."""
        s = self._state
        steps = self._steps
        pending = self._pending
        first = next(e for e in run if e[0] == _STEP)
        tags = self._tags(first)
        timing = s.collector_timing
        tv = tuple(timing.values())
        timeout, terminated = s.timeout_rate, s.terminated_rate
        own_total, buffer_size = s.own_total_steps, s.buffer_size
        total = s.total_steps
        ep = (s.ep_length,) if s.ep_length > 0 else ()
        dropped = (float(steps.dropped),) if steps.dropped else ()
        history = s.reward_history
        flag = pending.collector_reward
        hparams = s.hparams
        chart = steps.chart_loss
        learner = collector = done = new_point = False
        shared: tuple[str, ...] | None = None
        records: list[StepRecord] = []
        last: ev.Event = first
        for e in run:
            kind = e[0]
            if kind == _STEP:
                (_, wall, it, m, r, rm, c, t, w, h, ws, extra) = e
                step = total if total > 0 else it
                pipeline = h + t + ws
                row: list[float] = [float(it), float(step)]
                if m:
                    row += m.values()
                    chart(m)
                if r is not None:
                    row.append(r)
                    if flag and history:
                        history[-1] = r
                    else:
                        history.append(r)
                    hparams.reward(r)
                flag = False
                if rm:
                    row += rm.values()
                if c:
                    row += c.values()
                row += ep
                row += (timeout, terminated, w * 1000, h * 1000, t * 1000, ws * 1000)
                row += tv
                if extra is not None and extra > 0 and pipeline > 0:
                    row.append(extra / pipeline)
                row.append(pipeline * 1000)
                row += dropped
                if shared is None:
                    shared = steps.shared_tags(tags)
                records.append(step_record(step, it, wall, scalars_of(shared, tuple(row))))
                learner = learner or bool(t or w or h or ws)
                last = e
            elif kind == _TIMING:
                timing.update(e[2])
                tv = tuple(timing.values())
            elif kind == _DONE:
                timeout, terminated = e[2], e[3]
                done = True
            else:  # _COLLECTOR
                own_total, buffer_size = e[2], e[3]
                total = own_total + producers
                collector = True
                if e[4] != 0:
                    history.append(e[4])
                    flag = new_point = True
        self._settle(run, last, learner, collector, done, len(records))
        s.timeout_rate, s.terminated_rate = timeout, terminated
        s.own_total_steps, s.buffer_size, s.total_steps = own_total, buffer_size, total
        pending.collector_reward = flag
        return records, new_point

    def _settle(
        self,
        run: Sequence[ev.Event],
        last: ev.Event,
        learner: bool,
        collector: bool,
        done: bool,
        n: int,
    ) -> None:
        """The state's fields a step leaves as its own: the run's last step's."""
        s = self._state
        (_, _, it, m, _, _, c, t, w, h, ws, extra) = last
        s.last_wall_time = run[-1][1]
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
        if collector:
            logged.add("collector")
        if done:
            logged.add("done_rates")
        s.status = "Training"
        s.training_started = True
        s.steps_logged += n

    def _tags(self, first: ev.Event) -> list[str]:
        """The run's record tags, in the per-event fold's order (``_fold_step``)."""
        s, steps = self._state, self._steps
        m, r, rm, c, t, h, ws, extra = (
            first[3],
            first[4],
            first[5],
            first[6],
            first[7],
            first[9],
            first[10],
            first[11],
        )
        tags = ["axis/iteration", "axis/env_steps_total"]
        if m:
            tags += steps.metric_tags[tuple(m)]
        if r is not None:
            tags.append("reward/mean")
        if rm:
            tags += steps.reward_tags[tuple(rm)]
        if c:
            tags += steps.reward_tags[tuple(c)]
        if s.ep_length > 0:
            tags.append("episode/length")
        tags += _TAIL
        tags += map(collector_tag, s.collector_timing)
        if extra is not None and extra > 0 and h + t + ws > 0:
            tags.append("perf/steps_per_sec")
        tags.append("perf/iter_ms")
        if steps.dropped:
            tags.append("aoff/dropped_events")
        return tags
