"""The fold: events in, the seed's scalar record per step out, the dashboard state kept.

Pure: nothing here reads a clock, touches a file or knows about threads. ``Folder.apply``
takes one event and returns the record the seed logger would have written for it (or
``None``). That makes the seed-compatibility rules testable with plain data, and lets the
pump (in the training process or in the agent), a reference in the tests and the
benchmarks share one definition.
"""

from __future__ import annotations

import dataclasses
from collections import deque

from . import _events as ev
from ._checkpoint import load_into
from ._cost import summarize as cost_tags
from ._fold_pending import fold_episodes, tail_record
from ._fold_step import StepFolder, collector_tag
from ._fold_writer import WRITER_KINDS, fold_writer
from ._histogram import summarize
from ._histogram_data import Histogram
from ._records import StepRecord
from ._say import Say
from ._state import ProducerInfo, State

#: a producer's calls that say something about the whole run: not its to make
_REMOTE_IGNORED = frozenset(
    (ev.START, ev.FINISH, ev.TRAINING_TIMER, ev.LOAD_STATE, ev.SYSTEM, ev.REMOTE)
)
#: events that do not start the run: restoring a checkpoint's counters, and the end
_NOT_A_START = frozenset((ev.LOAD_STATE, ev.FINISH))


def _ignore(_: str) -> None:
    pass


class Folder(StepFolder):
    """Folds events into a :class:`State`, yielding the seed's scalar record per step.

    Every value that had to be skipped (not a number, or a non-string key) counts in
    ``state.invalid_values``; ``say`` receives one message for the first problem of each
    (argument, key) pair, so a bad key logged every step is one line, not one per step.
    The fold itself never raises for bad input, so one bad call cannot kill the pump or
    change other records.
    """

    __slots__ = ("_last_reward_from", "_own_timing", "_producer_total", "_remotes")

    def __init__(self, state: State, say: Say = _ignore, *, seed_tags: bool = True) -> None:
        super().__init__(state, say, seed_tags=seed_tags)
        # producers (``log.remote()``): one folder each, with a state of its own
        self._remotes: dict[str, Folder] = {}
        self._own_timing: dict[str, float] = {}  # the run's own collector timings
        self._producer_total = 0  # the sum of the producers' latest total_steps
        self._last_reward_from: str | None = None  # the producer of the history's last point

    def attach(self, scalars: dict[str, float]) -> None:
        """Scalars of aoff's own (``aoff/...``, the pump's) for the next step's record,
        beside the latest system sample."""
        self._system = {**self._system, **scalars} if self._system else dict(scalars)

    # -- the fold --------------------------------------------------------------------
    def apply(self, event: ev.Event) -> StepRecord | None:
        s = self.state
        kind = event[0]
        wall = event[1]
        if kind == ev.SYSTEM:  # a sample, not a call: it does not move the run's clock
            s.system = dict(event[2])
            # newer values for its keys; aoff's own tags attached meanwhile stay
            self._system = {**self._system, **s.system} if self._system else s.system
            return None
        if kind == ev.COST:  # the hot path's sampled times: not a call either
            s.hot_path = cost_tags(event[2], event[3], event[4])
            return None
        s.last_wall_time = wall
        if not s.started and kind not in _NOT_A_START:
            # the run starts with its first call, whatever the door (start(), a log_step,
            # SB3's first dump, a SummaryWriter scalar, a producer's event): the dashboard
            # opens and the timer runs from here
            s.started = True
            s.start_time = wall
        if kind == ev.STEP:
            self._last_reward_from = None
            return self._step(event)
        if kind == ev.COLLECTOR_TIMING:
            timing = self._tagged(
                "update_collector_timing", event[2], self._collector_tags, collector_tag
            )[0]
            if self._remotes:
                self._own_timing.update(timing)
                self._average_timing()
            else:
                s.collector_timing.update(timing)
        elif kind == ev.COLLECTOR:
            s.logged.add("collector")
            s.own_total_steps = self._int("log_collector", "total_steps", event[2])
            s.total_steps = s.own_total_steps + self._producer_total
            s.buffer_size = self._int("log_collector", "buffer_size", event[3])
            mean_reward = self._num("log_collector", "mean_reward", event[4])
            if mean_reward != 0:  # 0 is the argument's default: no reward
                self._last_reward_from = None
                # one point per iteration: a second log_collector before the step adds
                # its own, the step's reward= replaces the last (log_collector's docstring)
                s.reward_history.append(mean_reward)
                self._collector_reward = True
        elif kind == ev.DONE_RATES:
            s.logged.add("done_rates")
            s.timeout_rate = self._num("update_done_rates", "timeout_rate", event[2])
            s.terminated_rate = self._num("update_done_rates", "terminated_rate", event[3])
        elif kind == ev.BUFFER_FILL:
            cur = self._int("log_buffer_fill", "current", event[2])
            tgt = self._int("log_buffer_fill", "target", event[3])
            s.buffer_size, s.buffer_target = cur, tgt
            pct = cur / max(tgt, 1) * 100
            s.status = f"Buffer fill: {cur:,}/{tgt:,} ({pct:.0f}%)"
        elif kind == ev.BUFFER_UTIL:
            s.buffer_utilization = self._num("update_buffer_utilization", "utilization", event[2])
        elif kind == ev.STAGING_POOL:
            s.staging_len = self._int("update_staging_pool", "current_len", event[2])
            s.staging_max = self._int("update_staging_pool", "max_size", event[3])
        elif kind == ev.COLLECTION_SYNC:
            s.logged.add("collection_sync")
            s.sync_collection = bool(event[2])
            s.env_steps_per_sync = self._int("set_collection_sync", "env_steps_per_sync", event[3])
        elif kind == ev.EP_LENGTH:
            s.ep_length = self._num("update_ep_length", "length", event[2])
        elif kind == ev.EPISODES:
            fold_episodes(self, self._episodes, event[2], event[3])
        elif kind == ev.STATUS:
            s.status = str(event[2])
        elif kind == ev.SAVE:
            s.last_save = str(event[2])
        elif kind == ev.START:
            s.status = str(event[2])
        elif kind == ev.TRAINING_TIMER:
            s.training_start_time = wall
        elif kind == ev.HISTOGRAM:
            self._histogram(event[2], event[3])
        elif kind == ev.CONFIG:
            s.hparams.merge(event[2])  # made JSON-safe by log_config, in the caller
        elif kind == ev.LOAD_STATE:
            load_into(s, event[2])  # checked by load_state_dict, in the caller
        elif kind == ev.FINISH:
            s.finished = True
            s.finish_title = str(event[2])
            s.extra_summary = str(event[3])
            s.interrupted = bool(event[4])
            s.hparams.interrupted = s.interrupted
            # logged after the last step: a record at that step, not lost
            tail = tail_record(s, self._histograms, self._episodes, wall)
            self._histograms, self._episodes = {}, [0.0, 0.0, 0.0, 0.0]
            return tail
        elif kind == ev.REMOTE:
            return self._remote(event[2], event[3])
        elif kind in WRITER_KINDS:
            return fold_writer(self, event)
        return None

    # -- producers (log.remote(); see docs/guides/producers.md) -----------------------------
    def _remote(self, name: object, inner: object) -> StepRecord | None:
        """Fold one producer's event into that producer's own state; what the run's
        dashboard shows of it: its steps and iteration, its ``total_steps`` (summed into
        the run's), its rewards (in the reward history), its collector timings
        (averaged with the others'). Its ``log_step`` becomes a record of its own."""
        s = self.state
        if type(name) is not str or not isinstance(inner, tuple) or len(inner) < 2:
            self._bad("remote", None, f"remote: a malformed event from {name!r:.60}; skipped")
            return None
        kind = inner[0]
        if kind in _REMOTE_IGNORED:
            return None
        if kind == ev.CONFIG:  # the run has one config: a producer may add to it
            s.hparams.merge(inner[2])
            return None
        if kind == ev.EPISODES:  # a collector's episodes are the run's episodes
            fold_episodes(self, self._episodes, inner[2], inner[3])
            return None
        sub = self._remotes.get(name)
        if sub is None:
            if not self._remotes:
                self._own_timing = dict(s.collector_timing)
            sub_state = State(config=s.config)
            sub_state.reward_history = deque(maxlen=1)  # only to see each new reward
            sub = self._remotes[name] = Folder(sub_state, self.say, seed_tags=self.seed_tags)
        sub_s = sub.state
        sub_s.reward_history.clear()
        # the producer's step replaces its own collector reward (one point per iteration)
        replaces = sub._collector_reward and self._last_reward_from == name
        rec = sub.apply(inner)
        if sub_s.reward_history:
            if replaces and kind == ev.STEP and s.reward_history:
                s.reward_history[-1] = sub_s.reward_history[0]
            else:
                s.reward_history.append(sub_s.reward_history[0])
            self._last_reward_from = name
        info = s.producers.get(name) or ProducerInfo()
        if kind == ev.STEP:
            s.producers[name] = info._replace(steps=info.steps + 1, iteration=sub_s.iteration)
            s.status = "Training"  # the run trains, whoever logs its steps
            if rec is not None:
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

    def _histogram(self, key: object, payload: object) -> None:
        """Reduce (or take) one distribution; the last one per key before a step wins."""
        try:
            h = payload if isinstance(payload, Histogram) else summarize(str(key), payload)
        except Exception as exc:  # the call checked the input: only a bug lands here
            where = "log_histogram"
            self._bad(where, key, f"{where}: {key!r:.60}: {type(exc).__name__}: {exc}; skipped")
            return
        self._histograms[h.tag] = h
