"""The fold: events in, the seed's scalar record per step out, the dashboard state kept.

Pure: nothing here reads a clock, touches a file or knows about threads. ``Folder.apply``
takes one event and returns the record the seed logger would have written for it (or
``None``). That makes the seed-compatibility rules testable with plain data, and lets the
pump (in the training process or in the agent), a reference in the tests and the
benchmarks share one definition.

The folder owns small parts, each in a module of its own: the value checks
(``_fold_checks``), what waits for the next step (``_fold_pending``), the fold of a step
(``_fold_step``) and of ``SummaryWriter``'s calls (``_fold_writer``). Each kind of event
has one handler, in one table (:meth:`Folder._table`).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from . import _events as ev
from ._checkpoint import load_into
from ._fold_axes import POLICY_VERSION
from ._fold_checks import Checks
from ._fold_columns import RunFold
from ._fold_pending import Pending
from ._fold_step import StepFold, collector_tag
from ._fold_writer import WriterFold
from ._hotcost import summarize as cost_tags
from ._records import Record
from ._runblock import RunBlock
from ._say import Say
from ._state import ProducerInfo, State

__all__ = ["Folder"]

Handler = Callable[[ev.Event], "Record | None"]

#: a producer's calls that say something about the whole run: not its to make
_REMOTE_IGNORED = frozenset(
    (ev.START, ev.FINISH, ev.TRAINING_TIMER, ev.LOAD_STATE, ev.SYSTEM, ev.REMOTE)
)
#: events that do not start the run: restoring a checkpoint's counters, and the end
_NOT_A_START = frozenset((ev.LOAD_STATE, ev.FINISH))
#: samples, not calls, and a step's marker its block already folded (no wall time of its
#: own): they do not move the run's clock nor start it
_NO_CLOCK = frozenset((ev.SYSTEM, ev.COST, ev.FOLDED))


#: a block's steps carry no learner times (``log_step``'s defaults)
_NO_TIMES = (0.0, 0.0, 0.0, 0.0)


def _ignore(_: str) -> None:
    pass


def _nothing(_: ev.Event) -> None:
    return None


class FoldedInPart(Exception):
    """The run fold failed on a block after part of it was folded event by event:
    ``records`` are that part's, ``rest`` the event (a block of the same kind) of what is left,
    for the caller to fold event by event; the part folded is never folded again."""

    def __init__(self, records: list[Record], rest: ev.Event) -> None:
        super().__init__("the run fold failed after a block's first pickle")
        self.records = records
        self.rest = rest


class Folder:
    """Folds events into a :class:`State`, yielding the seed's scalar record per step.

    Every value that had to be skipped (not a number, or a non-string key) counts in
    ``state.invalid_values``; ``say`` receives one message for the first problem of each
    (argument, key) pair, so a bad key logged every step is one line, not one per step.
    The fold itself never raises for bad input, so one bad call cannot kill the pump or
    change other records.
    """

    __slots__ = (
        "_handlers",
        "_last_reward_from",
        "_own_timing",
        "_producer_steps",
        "_producer_total",
        "_remotes",
        "_runs",
        "checks",
        "pending",
        "state",
        "steps",
        "writer",
    )

    def __init__(self, state: State, say: Say = _ignore, *, seed_tags: bool = True) -> None:
        self.state = state
        self.checks = Checks(state, say)
        self.pending = Pending(state, self.checks)
        self.steps = StepFold(state, self.checks, self.pending, seed_tags=seed_tags)
        self.writer = WriterFold(state, self.checks)
        # producers (``log.remote()``): one folder each, with a state of its own
        self._remotes: dict[str, Folder] = {}
        self._own_timing: dict[str, float] = {}  # the run's own collector timings
        self._producer_total = 0  # the sum of the producers' latest total_steps
        self._producer_steps: dict[str, int] = {}  # each producer's last record's step
        # the producer of the reward history's last point, and the run's own step count
        # then: a step of the run's own since (steps_logged moved on) ends the claim
        self._last_reward_from: tuple[str, int] | None = None
        self._handlers = self._table()
        self._runs = RunFold(state, self.steps, self.pending)

    def _table(self) -> dict[int, Handler]:
        """Each kind's handler, the one place that says what an event does to the fold.
        A kind not here (media: the encoder's) changes nothing but the run's clock."""
        s = self.state
        writer = self.writer.fold
        return {
            ev.STEP: self.steps.fold,
            ev.COLLECTOR_TIMING: self._collector_timing,
            ev.COLLECTOR: self._collector,
            ev.DONE_RATES: self._done_rates,
            ev.BUFFER_FILL: self._buffer_fill,
            ev.BUFFER_UTIL: self._buffer_util,
            ev.STAGING_POOL: self._staging_pool,
            ev.COLLECTION_SYNC: self._collection_sync,
            ev.EP_LENGTH: self._ep_length,
            ev.EPISODES: lambda e: self.pending.add_episodes(e[2], e[3]),
            ev.STATUS: lambda e: setattr(s, "status", str(e[2])),
            ev.SAVE: lambda e: setattr(s, "last_save", str(e[2])),
            ev.START: lambda e: setattr(s, "status", str(e[2])),
            ev.TRAINING_TIMER: lambda e: setattr(s, "training_start_time", e[1]),
            ev.HISTOGRAM: lambda e: self.pending.add_histogram(e[2], e[3]),
            # made JSON-safe by log_config, in the caller
            ev.CONFIG: lambda e: s.hparams.merge(e[2]),
            # checked by load_state_dict, in the caller
            ev.LOAD_STATE: lambda e: load_into(s, e[2]),
            ev.FINISH: self._finish,
            ev.REMOTE: lambda e: self._remote(e[2], e[3]),
            ev.SYSTEM: self._system,
            ev.COST: lambda e: setattr(s, "hot_path", cost_tags(e[2], e[3], e[4])),
            ev.W_SCALAR: writer,
            ev.W_TEXT: writer,
            ev.W_HISTOGRAM: writer,
            ev.W_HPARAMS: writer,
            ev.STEP_BLOCK: self._not_alone,
            ev.RUN_BLOCK: self._not_alone,
            # a step its STEP_BLOCK stands for (_transport/_plainsteps): the block folded it
            ev.FOLDED: _nothing,
        }

    @property
    def seed_tags(self) -> bool:
        """The original logger's scaffolding tags on every step."""
        return self.steps.seed_tags

    def attach(self, scalars: dict[str, float]) -> None:
        """Scalars of aoff's own (``aoff/...``, the pump's) for the next step's record,
        beside the latest system sample."""
        p = self.pending
        p.system = {**p.system, **scalars} if p.system else dict(scalars)

    def dropped(self, total: int) -> None:
        """The events dropped before they reached the fold, so far (the pump counts them:
        the overflow policy, a lost agent, earlier sessions): shown on the dashboard and
        stamped on each step's record as ``aoff/dropped_events``."""
        self.state.dropped_events = total
        self.steps.dropped = total

    # -- the fold --------------------------------------------------------------------
    def apply(self, event: ev.Event) -> Record | None:
        """Fold one event; the record it makes, if any."""
        kind = event[0]
        if kind not in _NO_CLOCK:
            s = self.state
            s.last_wall_time = wall = event[1]
            if not s.started and kind not in _NOT_A_START:
                # the run starts with its first call, whatever the door (start(), a
                # log_step, SB3's first dump, a SummaryWriter scalar, a producer's
                # event): the dashboard opens and the timer runs from here
                s.started = True
                s.start_time = wall
        return self._handlers.get(kind, _nothing)(event)

    def apply_run(self, events: Sequence[ev.Event], start: int) -> tuple[list[Record], int, int]:
        """Fold the run of regular iterations at ``events[start:]`` at once
        (``_fold_columns``): its records, the index after it (``start``, no records: the
        per-event :meth:`apply` takes the next event), and the first index where another
        run may start (none before it: the scan refused that event)."""
        runs = self._runs
        if self._remotes or not runs.ready():
            return [], start, start + 1
        end, kinds, stop = runs.span(events, start)
        if not kinds:
            return [], start, max(stop, start + 1)
        records, new_point, n = runs.take_halves(events[start:end], kinds, self._producer_total)
        if not records:
            return [], start, start + n
        if new_point:
            self._last_reward_from = None
        return list[Record](records), start + n, start + n

    def apply_block(self, event: ev.Event, *, columns: bool = True) -> list[Record]:
        """Fold a group's block of plain steps (``STEP_BLOCK``, ``_core/_groupbatch.py``):
        as columns where the run fold takes it (``RunFold.take_block``), else step by
        step as the same ``log_step`` events; after the first of them, the rest as
        columns where that first step made it possible (its key sequence checked, the
        run started). ``columns=False``: step by step (the run fold failed)."""
        _, _, walls, its, names, values = event
        if self._remotes or not columns:
            return self._block_by_step(walls, its, names, values)
        got = self._runs.take_block(walls, its, names, values, self._producer_total)
        if got is not None:
            return list[Record](got)
        out = self._block_by_step(walls[:1], its[:1], names, values[:1])
        try:
            got = self._runs.take_block(walls[1:], its[1:], names, values[1:], self._producer_total)
        except Exception as exc:  # a bug: the rest event by event, never the first again
            raise FoldedInPart(out, (*event[:2], walls[1:], its[1:], names, values[1:])) from exc
        if got is not None:
            return out + list[Record](got)
        return out + self._block_by_step(walls[1:], its[1:], names, values[1:])

    def apply_runblock(self, event: ev.Event, *, columns: bool = True) -> list[Record]:
        """Fold pickles of regular iterations read as columns (``RUN_BLOCK``,
        ``_core/_runblock.py``): up to the last pickle's last step as columns where the
        run fold takes them (``RunFold.take_runblock``), else the first pickle event by
        event and the rest as columns where that made it possible (a key sequence
        checked, the run started), else event by event; the events after the last step
        event by event. ``columns=False``: event by event (the run fold failed)."""
        block: RunBlock = event[2]
        if self._remotes or not columns:
            return self._by_event(block.events())
        runs = self._runs
        out: list[Record] = []
        got = runs.take_runblock(block, self._producer_total)
        if got is None:
            out = self._by_event(block.part(0, 1).events())
            if block.pickles == 1:
                return out
            block = block.part(1)
            try:
                got = runs.take_runblock(block, self._producer_total)
            except Exception as exc:  # a bug: the caller folds the rest event by event,
                # never the first pickle again (its records are the exception's)
                raise FoldedInPart(out, (event[0], event[1], block)) from exc
            if got is None:
                return out + self._by_event(block.events())
        records, new_point = got
        if new_point:
            self._last_reward_from = None
        out += records
        shape = block.shape
        if shape.last_step + 1 < len(shape.kinds):  # each pickle's events after its last step
            last = block.part(block.pickles - 1)
            out += self._by_event(last.events(shape.last_step + 1))
        return out

    def _by_event(self, events: list[ev.Event]) -> list[Record]:
        """``events`` folded one by one (:meth:`apply`); their records."""
        apply = self.apply
        return [r for e in events if (r := apply(e)) is not None]

    def _block_by_step(
        self, walls: Sequence[float], its: Any, names: tuple[str, ...], values: Any
    ) -> list[Record]:
        """A block's steps as the ``log_step`` events it stands for, each folded alone."""
        out: list[Record] = []
        for wall, it, row in zip(walls, its.tolist(), values.tolist(), strict=True):
            metrics = dict(zip(names, row, strict=True))
            rec = self.apply((ev.STEP, wall, it, metrics, None, None, None, *_NO_TIMES, None))
            if rec is not None:
                out.append(rec)
        return out

    # -- the handlers, one a kind (see _table) --------------------------------------------
    def _not_alone(self, event: ev.Event) -> None:
        raise TypeError("a block of steps folds through Folder.apply_block, not apply")

    def _system(self, event: ev.Event) -> None:
        # a sample, not a call: newer values for its keys; aoff's own tags stay
        self.state.system = samples = dict(event[2])
        self.pending.add_system(samples)

    def _collector_timing(self, event: ev.Event) -> None:
        cache = self.steps.collector_tags
        where = "update_collector_timing"
        timing = self.steps.tagged(where, event[2], cache, collector_tag)[0]
        if self._remotes:
            self._own_timing.update(timing)
            self._average_timing()
        else:
            self.state.collector_timing.update(timing)

    def _collector(self, event: ev.Event) -> None:
        s, c = self.state, self.checks
        s.logged.add("collector")
        s.own_total_steps = c.integer("log_collector", "total_steps", event[2])
        s.total_steps = s.own_total_steps + self._producer_total
        s.buffer_size = c.integer("log_collector", "buffer_size", event[3])
        mean_reward = c.num("log_collector", "mean_reward", event[4])
        if len(event) > ev.C_AXES:  # log_collector(axes=...)
            axes = self.steps.axes
            axes.collector_staleness(axes.note("log_collector(axes)", event[ev.C_AXES]))
        if mean_reward != 0:  # 0 is the argument's default: no reward
            self._last_reward_from = None
            # one point per iteration: a second log_collector before the step adds its
            # own, the step's reward= replaces the last (log_collector's docstring)
            s.reward_history.append(mean_reward)
            self.pending.collector_reward = True

    def _done_rates(self, event: ev.Event) -> None:
        s, c = self.state, self.checks
        s.logged.add("done_rates")
        s.timeout_rate = c.num("update_done_rates", "timeout_rate", event[2])
        s.terminated_rate = c.num("update_done_rates", "terminated_rate", event[3])

    def _buffer_fill(self, event: ev.Event) -> None:
        s, c = self.state, self.checks
        cur = c.integer("log_buffer_fill", "current", event[2])
        tgt = c.integer("log_buffer_fill", "target", event[3])
        s.buffer_size, s.buffer_target = cur, tgt
        pct = cur / max(tgt, 1) * 100
        s.status = f"Buffer fill: {cur:,}/{tgt:,} ({pct:.0f}%)"

    def _buffer_util(self, event: ev.Event) -> None:
        where = "update_buffer_utilization"
        self.state.buffer_utilization = self.checks.num(where, "utilization", event[2])

    def _staging_pool(self, event: ev.Event) -> None:
        s, c = self.state, self.checks
        s.staging_len = c.integer("update_staging_pool", "current_len", event[2])
        s.staging_max = c.integer("update_staging_pool", "max_size", event[3])

    def _collection_sync(self, event: ev.Event) -> None:
        s = self.state
        s.logged.add("collection_sync")
        s.sync_collection = bool(event[2])
        where = "set_collection_sync"
        s.env_steps_per_sync = self.checks.integer(where, "env_steps_per_sync", event[3])

    def _ep_length(self, event: ev.Event) -> None:
        self.state.ep_length = self.checks.num("update_ep_length", "length", event[2])

    def _finish(self, event: ev.Event) -> Record | None:
        s = self.state
        s.finished = True
        s.finish_title = str(event[2])
        s.extra_summary = str(event[3])
        s.interrupted = bool(event[4])
        s.hparams.interrupted = s.interrupted
        # logged after the last step: a record at that step, not lost
        return self.pending.tail(event[1])

    # -- producers (log.remote(); see docs/guides/producers.md) -----------------------------
    def _remote(self, name: object, inner: object) -> Record | None:
        """Fold one producer's event into that producer's own state; what the run's
        dashboard shows of it: its steps and iteration, its ``total_steps`` (summed into
        the run's), its rewards (in the reward history), its collector timings
        (averaged with the others'). Its ``log_step`` becomes a record of its own."""
        s = self.state
        if type(name) is not str or not isinstance(inner, tuple) or len(inner) < 2:
            self.checks.bad("remote", None, f"remote: a malformed event from {name!r:.60}; skipped")
            return None
        kind = inner[0]
        if kind in _REMOTE_IGNORED:
            return None
        if kind == ev.CONFIG:  # the run has one config: a producer may add to it
            s.hparams.merge(inner[2])
            return None
        if kind == ev.EPISODES:  # a collector's episodes are the run's episodes
            self.pending.add_episodes(inner[2], inner[3])
            return None
        sub = self._producer(name)
        sub_s = sub.state
        sub_s.reward_history.clear()
        # the producer's step replaces its own collector reward (one point per iteration)
        claim = (name, s.steps_logged)
        replaces = sub.pending.collector_reward and self._last_reward_from == claim
        back = sub_s.axes_back
        rec = sub.apply(inner)
        s.axes_back += sub_s.axes_back - back  # a producer's axes count for the run
        if kind == ev.COLLECTOR and len(inner) > ev.C_AXES:  # it acted with a policy version?
            given = inner[ev.C_AXES]
            if isinstance(given, dict) and POLICY_VERSION in given:
                self.steps.axes.collector_staleness(sub.steps.axes.collector_version)
        if sub_s.reward_history:
            if replaces and kind == ev.STEP and s.reward_history:
                s.reward_history[-1] = sub_s.reward_history[0]
            else:
                s.reward_history.append(sub_s.reward_history[0])
            self._last_reward_from = claim
        return self._seen_from(name, kind, sub, rec)

    def _producer(self, name: str) -> Folder:
        """The producer's own folder, made at its first event."""
        sub = self._remotes.get(name)
        if sub is None:
            s = self.state
            if not self._remotes:
                self._own_timing = dict(s.collector_timing)
            sub_state = State(config=s.config)
            sub_state.reward_history = deque(maxlen=1)  # only to see each new reward
            sub = self._remotes[name] = Folder(
                sub_state, self.checks.say, seed_tags=self.steps.seed_tags
            )
        return sub

    def _seen_from(self, name: str, kind: int, sub: Folder, rec: Record | None) -> Record | None:
        """What the run's dashboard keeps of a producer's event folded in its own state;
        its record, marked as the producer's."""
        s = self.state
        sub_s = sub.state
        info = s.producers.get(name) or ProducerInfo()
        if kind == ev.STEP:
            s.producers[name] = info._replace(steps=info.steps + 1, iteration=sub_s.iteration)
            s.status = "Training"  # the run trains, whoever logs its steps
            if rec is not None:
                last = self._producer_steps.get(name)
                if last is not None and rec.step < last:  # late: written at its own step
                    s.late_points[name] = s.late_points.get(name, 0) + 1
                self._producer_steps[name] = rec.step
                return dataclasses.replace(rec, producer=name)
        elif rec is not None:  # a SummaryWriter's call (a forked child's): its own record
            if name not in s.producers:
                s.producers[name] = info
            return dataclasses.replace(rec, producer=name)
        elif kind == ev.COLLECTOR:
            s.logged.add("collector")
            self._producer_total += sub_s.total_steps - info.total_steps
            s.total_steps = s.own_total_steps + self._producer_total
            s.producers[name] = info._replace(total_steps=sub_s.total_steps)
        else:
            if name not in s.producers:
                s.producers[name] = info
            if kind == ev.COLLECTOR_TIMING:
                self._average_timing()
        return None

    def _average_timing(self) -> None:
        """The dashboard's collector timings: per key, the mean of the run's own latest
        and each producer's latest (only those that logged the key)."""
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        sources = [self._own_timing, *(f.state.collector_timing for f in self._remotes.values())]
        for timing in sources:
            for k, v in timing.items():
                sums[k] = sums.get(k, 0.0) + v
                counts[k] = counts.get(k, 0) + 1
        self.state.collector_timing = {k: sums[k] / counts[k] for k in sums}
