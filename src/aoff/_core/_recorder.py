"""The hot path: every public logging call, shared by the sync and async faces.

Each call builds one tuple ``(kind, wall_time, *args)`` and hands it to the face's
``put``; nothing else. Dict arguments are shallow-copied (``dict.copy`` is C code) so the
training loop may reuse or mutate its dicts (arguments of the wrong type: ``_arguments.py``).
Fields go in ``_events.FIELDS``' order; a STEP event is read back by its named positions
(``_events.S_*``, bound here at import: the hot path pays no attribute lookup). Values are
*not* converted here: floats, ints, bools and NumPy scalars are immutable, so the pump
converts and validates them later (reporting, never raising, for anything that is not a
number).

The one thing that cannot wait is a PyTorch tensor: it is mutable and may live on a GPU.
Once ``torch`` has been imported in the process (checked when a logger is built and by
:meth:`Recorder._refresh_capture`, which the face hands to whoever drains the buffer as a
per-tick hook), calls switch to the capturing path: each call starts an empty capture
list ``g``, passes every value that is not a plain ``float``/``int`` through
``_capture.capture`` (CPU tensors are read at once; CUDA tensors become placeholders and
are appended to ``g``; a whole ``log_step`` goes through ``_capture.capture_step``) and,
only if ``g`` is not empty, launches the call's device-to-host copies together, without
waiting (``_capture.finish``; see ``_capture.py`` and ``_tensors.py``). Until then no call
pays for it.

The return value of every call is whatever the face's ``put`` returns: ``None`` for the
sync face (fire-and-forget) and an awaitable for the async face, so the two faces share
this code without a wrapper call on the hot path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from inspect import iscoroutine
from time import perf_counter_ns
from typing import Any, Generic, TypeVar

from . import _events as ev
from ._arguments import (
    W_AXES,
    W_COLLECTOR_AXES,
    W_COMPONENTS,
    W_METRICS,
    W_REWARD_METRICS,
    W_TIMING,
    copy_dict,
    numbers,
    throughput,
    warn_converted,
)
from ._capture import (
    activate,
    capture,
    capture_step,
    capture_tensor,
    capture_values,
    finish,
    plain_step,
)
from ._checkpoint import checked_state_dict
from ._config import flatten_config
from ._events import S_COMPONENTS, S_METRICS, S_REWARD_METRICS, S_THROUGHPUT
from ._histogram import capture as capture_histogram
from ._hotcost import COST_EVERY, HotCost
from ._pending import Gather, PendingEvent, Placeholder

R = TypeVar("R")


class Recorder(Generic[R]):
    """Hot-path methods. A face calls ``_init_recorder`` with its ``put`` and clock."""

    # Every attribute the hot path reads is set on the instance by _init_recorder, none
    # has a class-level default: CPython 3.11 does not specialize an attribute read or
    # write whose name also has a plain value on the class (each stays a generic lookup,
    # ~20-30 ns), and ``log_step`` reads ``_capturing`` and reads and writes
    # ``_cost_left`` on every call.
    _put: Callable[[ev.Event], R]
    _clock: Callable[[], float]
    #: the capture switch: this recorder checks values for tensors (torch is imported)
    _capturing: bool
    #: ``log_step`` calls until the next timed one, and the samples (``_cost.py``)
    _cost_left: int
    _cost: HotCost | None

    def _init_recorder(self, put: Callable[[ev.Event], R], clock: Callable[[], float]) -> None:
        self._put = put
        self._clock = clock
        self._capturing = False
        self._cost_left = COST_EVERY
        self._cost = None
        self._refresh_capture()

    def _refresh_capture(self) -> bool:
        """Turn tensor capture on once torch is imported (never off); cheap, call often."""
        if not self._capturing and "torch" in sys.modules:
            self._capturing = activate()
        return self._capturing

    # -- the main event ------------------------------------------------------------------
    def log_step(
        self,
        iteration: int,
        metrics: Mapping[str, Any] | None = None,
        reward: float | None = None,
        reward_metrics: Mapping[str, Any] | None = None,
        reward_components: Mapping[str, Any] | None = None,
        train_time: float = 0.0,
        wait_time: float = 0.0,
        learner_incremental_h2d_time: float = 0.0,
        weight_sync_time: float = 0.0,
        extra_info: Mapping[str, Any] | None = None,
        axes: Mapping[str, int | float] | None = None,
    ) -> R:
        """Record one learner iteration (times in seconds). Returns at once.

        ``metrics``: losses and other numbers (a key without ``/`` goes under
        ``train/``); ``reward``: the iteration's mean reward (``reward/mean``, and one
        point of the dashboard's reward history: it replaces a ``log_collector``
        ``mean_reward`` logged since the previous step, see :meth:`log_collector`);
        ``reward_metrics``/``reward_components``: more reward numbers (``reward/...``);
        ``train_time``, ``wait_time``, ``learner_incremental_h2d_time``,
        ``weight_sync_time``: the learner's times in seconds; ``extra_info``:
        ``{"throughput_steps": n}`` gives ``perf/steps_per_sec``; ``axes`` (aoff's, pass
        it by name): the run's other clocks now (``{"grad_steps": g, "policy_version":
        v}``: numbers that never go down), carried by this step's record and every later
        one as ``axis/<name>`` (see the Axes guide).

        Any value may be a 0-d or one-element tensor; ``reward`` and the three dicts'
        values may also be per-environment tensors (e.g. ``(num_envs,)``), copied once
        without a sync and reduced in the agent: the tag gets their mean, ``<tag>/envs``
        their histogram (``_core/_vectors.py``, docs/guides/tensors.md).

        The hot path, and one function on purpose (over 60 lines): each helper call it
        made would cost every iteration ~50 ns of its ~0.3 us. A call without ``axes=``
        runs one tuple display and a test of ``axes``, nothing more (holding the fields in
        locals to build a tuple of either length would cost it ~200 machine instructions,
        ~3 %); with it, the tuple grows by one. ``axes`` is not keyword-only on purpose:
        CPython looks a keyword-only parameter's default up in a dict on every call that
        omits it, ~130 instructions more (benchmarks/bench_axes.py ``--instructions``
        counts them).
        """
        self._cost_left -= 1
        if not self._cost_left:  # one call in COST_EVERY is timed (_cost.py)
            return self._timed_step(
                iteration,
                metrics,
                reward,
                reward_metrics,
                reward_components,
                train_time,
                wait_time,
                learner_incremental_h2d_time,
                weight_sync_time,
                extra_info,
                axes,
            )
        event: ev.Event = (  # one tuple display, in _events.FIELDS[STEP]'s order
            ev.STEP,
            self._clock(),
            iteration,
            None
            if metrics is None
            else (metrics.copy() if type(metrics) is dict else copy_dict(metrics, W_METRICS)),
            reward,
            None if reward_metrics is None else copy_dict(reward_metrics, W_REWARD_METRICS),
            None
            if reward_components is None
            else (
                reward_components.copy()
                if type(reward_components) is dict
                else copy_dict(reward_components, W_COMPONENTS)
            ),
            train_time,
            wait_time,
            learner_incremental_h2d_time,
            weight_sync_time,
            None
            if extra_info is None
            else (
                extra_info.get("throughput_steps", 0)
                if type(extra_info) is dict
                else throughput(extra_info)
            ),
        )
        if axes is not None:  # the optional field after the others (a plain call: this test)
            event += (axes.copy() if type(axes) is dict else copy_dict(axes, W_AXES),)
            if self._capturing and not plain_step(event):
                return self._put(capture_step(event))
            return self._put(event)
        if self._capturing:
            # The common case, plain numbers, is checked here in this frame (a call per
            # dict cost ~0.3 us an iteration on a cold cache); anything else is captured
            # in the event's own copies by capture_step.
            if not (
                type(iteration) is int
                and (reward is None or type(reward) is float)
                and type(train_time) is float
                and type(wait_time) is float
                and type(learner_incremental_h2d_time) is float
                and type(weight_sync_time) is float
                and (event[S_THROUGHPUT] is None or type(event[S_THROUGHPUT]) is int)
            ):
                return self._put(capture_step(event))
            for d in (event[S_METRICS], event[S_COMPONENTS], event[S_REWARD_METRICS]):
                if d:
                    for v in d.values():
                        if type(v) is not float and type(v) is not int:
                            return self._put(capture_step(event))
        return self._put(event)

    def _timed_step(self, *args: Any) -> R:
        """A ``log_step`` call, timed; its time joins the next ``COST`` event."""
        self._cost_left = COST_EVERY
        t0 = perf_counter_ns()
        result = self.log_step(*args)
        t1 = perf_counter_ns()
        cost = self._cost
        if cost is None:
            cost = self._cost = HotCost()
        due = cost.add(t1 - t0, t1)
        if due is not None:
            done = self._put((ev.COST, self._clock(), *due))
            if iscoroutine(done):  # the async face's wait for room: not this call's
                done.close()
        return result

    # -- collector side --------------------------------------------------------------------
    def update_collector_timing(self, timing_ms: Mapping[str, Any]) -> R:
        """Merge collector timings (milliseconds) by key; any key is accepted."""
        timing = timing_ms.copy() if type(timing_ms) is dict else copy_dict(timing_ms, W_TIMING)
        if self._capturing:
            for v in timing.values():
                if type(v) is not float and type(v) is not int:
                    g: Gather = []
                    capture_values(timing, g, W_TIMING)
                    event = (ev.COLLECTOR_TIMING, self._clock(), timing)
                    return self._put(finish(g, event) if g else event)
        return self._put((ev.COLLECTOR_TIMING, self._clock(), timing))

    def update_done_rates(self, timeout_rate: float, terminated_rate: float) -> R:
        """Fractions 0..1 of episodes that ended by timeout / termination."""
        if self._capturing and not (
            (type(timeout_rate) is float or type(timeout_rate) is int)
            and (type(terminated_rate) is float or type(terminated_rate) is int)
        ):
            return self._capture2(
                ev.DONE_RATES,
                "update_done_rates",
                "timeout_rate",
                timeout_rate,
                "terminated_rate",
                terminated_rate,
            )
        return self._put((ev.DONE_RATES, self._clock(), timeout_rate, terminated_rate))

    def log_collector(
        self,
        total_steps: int,
        buffer_size: int,
        mean_reward: float = 0.0,
        axes: Mapping[str, int | float] | None = None,
    ) -> R:
        """Total env steps and replay-buffer size; a non-zero ``mean_reward`` joins the
        dashboard's reward history; ``axes``: the collector's clocks
        (``{"policy_version": v}`` gives ``collector/staleness``, the learner's
        ``policy_version`` axis minus this one; see the Axes guide; pass it by name: it
        is not keyword-only for the reason ``log_step``'s is not).

        The reward history has one point per iteration, whichever calls carry it: a
        ``mean_reward`` here adds a point, and the next ``log_step(reward=...)``
        replaces that point rather than adding a second (a loop that passes both counts
        each iteration once); ``log_step``'s reward alone, or this one alone, adds one.
        """
        if axes is not None:
            return self._collector_axes(total_steps, buffer_size, mean_reward, axes)
        if self._capturing and not (
            (type(total_steps) is int or type(total_steps) is float)
            and (type(buffer_size) is int or type(buffer_size) is float)
            and (type(mean_reward) is float or type(mean_reward) is int)
        ):
            w = "log_collector"
            g: Gather = []
            event = (
                ev.COLLECTOR,
                self._clock(),
                capture(total_steps, g, w, "total_steps"),
                capture(buffer_size, g, w, "buffer_size"),
                capture(mean_reward, g, w, "mean_reward"),
            )
            return self._put(finish(g, event) if g else event)
        return self._put((ev.COLLECTOR, self._clock(), total_steps, buffer_size, mean_reward))

    def _collector_axes(
        self, total_steps: Any, buffer_size: Any, mean_reward: Any, axes: Mapping[str, Any]
    ) -> R:
        """``log_collector`` with ``axes=``: its event with the axes' copy after its fields."""
        copied = copy_dict(axes, W_COLLECTOR_AXES)
        if self._capturing:
            w = "log_collector"
            g: Gather = []
            event = (
                ev.COLLECTOR,
                self._clock(),
                capture(total_steps, g, w, "total_steps"),
                capture(buffer_size, g, w, "buffer_size"),
                capture(mean_reward, g, w, "mean_reward"),
                copied,
            )
            return self._put(finish(g, event) if g else event)
        return self._put(
            (ev.COLLECTOR, self._clock(), total_steps, buffer_size, mean_reward, copied)
        )

    def log_buffer_fill(self, current: int, target: int) -> R:
        """Replay-buffer warm-up progress; sets the status line."""
        if self._capturing:
            return self._capture2(
                ev.BUFFER_FILL, "log_buffer_fill", "current", current, "target", target
            )
        return self._put((ev.BUFFER_FILL, self._clock(), current, target))

    def update_buffer_utilization(self, utilization: float) -> R:
        """The replay buffer's fill fraction (0..1). Kept in the run's state, as the
        original logger kept it; neither drawn nor written to a backend."""
        if self._capturing:
            return self._capture1(
                ev.BUFFER_UTIL, "update_buffer_utilization", "utilization", utilization
            )
        return self._put((ev.BUFFER_UTIL, self._clock(), utilization))

    def update_staging_pool(self, current_len: int, max_size: int) -> R:
        """The staging pool (batches prepared for the learner): ``current_len`` of
        ``max_size``. The dashboard's System column shows ``Staging Pool`` once
        ``max_size`` is above 0 (yellow when full)."""
        if self._capturing:
            return self._capture2(
                ev.STAGING_POOL,
                "update_staging_pool",
                "current_len",
                current_len,
                "max_size",
                max_size,
            )
        return self._put((ev.STAGING_POOL, self._clock(), current_len, max_size))

    def update_replay_queue(self, current_len: int, max_size: int) -> R:
        """Alias of :meth:`update_staging_pool` (the original logger's older name)."""
        return self.update_staging_pool(current_len, max_size)

    def set_collection_sync(self, enabled: bool, env_steps_per_sync: int = 0) -> R:
        """Whether collection is synchronised with the learner, and how many env steps
        each sync covers: the dashboard's ``Sync Collect`` row (shown once this is
        called)."""
        if self._capturing:
            w = "set_collection_sync"
            g: Gather = []
            on = capture_tensor(enabled, g, w, "enabled")  # a flag: only a tensor is captured
            n = capture(env_steps_per_sync, g, w, "env_steps_per_sync")
            event = (ev.COLLECTION_SYNC, self._clock(), on, n)
            return self._put(finish(g, event) if g else event)
        return self._put((ev.COLLECTION_SYNC, self._clock(), enabled, env_steps_per_sync))

    def update_ep_length(self, length: float) -> R:
        """Mean episode length (shown and logged when > 0)."""
        if self._capturing:
            return self._capture1(ev.EP_LENGTH, "update_ep_length", "length", length)
        return self._put((ev.EP_LENGTH, self._clock(), length))

    # -- capturing paths of the small calls (torch imported) ------------------------------------
    def _capture1(self, kind: int, where: str, name: str, v: Any) -> R:
        if type(v) is float or type(v) is int:
            return self._put((kind, self._clock(), v))
        g: Gather = []
        event = (kind, self._clock(), capture(v, g, where, name))
        return self._put(finish(g, event) if g else event)

    def _capture2(self, kind: int, where: str, n1: str, v1: Any, n2: str, v2: Any) -> R:
        if (type(v1) is float or type(v1) is int) and (type(v2) is float or type(v2) is int):
            return self._put((kind, self._clock(), v1, v2))
        g: Gather = []
        event = (kind, self._clock(), capture(v1, g, where, n1), capture(v2, g, where, n2))
        return self._put(finish(g, event) if g else event)

    # -- distributions ---------------------------------------------------------------------------
    def log_histogram(self, key: str, values: Any) -> R:
        """Log a distribution (Q-values, TD errors, actions) at the next ``log_step``'s step.

        ``values``: a tensor (any device, real dtype, shape), a NumPy array or a sequence of
        numbers. CUDA tensors are reduced on the device and copied without a sync; other
        inputs are copied here and reduced by the pump (see ``_core/_histogram.py``). Bad
        input raises here: ``TypeError`` (key not a str, not an array, non-real dtype) or
        ``ValueError`` (empty key or input, ragged sequence); NaN/inf are counted apart.
        """
        payload = capture_histogram(key, values)
        event = (ev.HISTOGRAM, self._clock(), key, payload)
        if isinstance(payload, Placeholder):
            return self._put(PendingEvent(event, (payload,)))
        return self._put(event)

    # -- config ----------------------------------------------------------------------------------
    def log_config(self, config: Mapping[str, Any]) -> R:
        """Add (or change) hyperparameters after the constructor's ``config=``.

        Flattened with ``"/"`` and made JSON-safe here, in the caller (see
        ``_core/_config.py``): a non-dict or a non-``str`` key is a ``TypeError``, a key
        given twice once flattened a ``ValueError``; values JSON cannot hold are stored as
        ``str()`` with one :class:`~aoff.AoffWarning` for the call. Backends get the new
        keys with their next batch (TensorBoard: the HParams session info is rewritten
        with all keys and a new text table is written; W&B: ``run.config.update``;
        JSONL/CSV: ``config.json`` is replaced).
        """
        values, converted = flatten_config(config, "log_config")
        if converted:
            warn_converted("log_config", converted)
        return self._put((ev.CONFIG, self._clock(), values))

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> R:
        """Restore aoff's own counters from a checkpoint (what ``state_dict()`` returned
        in the earlier session): the elapsed time behind the ETA, the reward history and
        best mean reward, the dropped total. Checked here (a bad dict is a ``TypeError``
        or ``ValueError`` at this call) and folded in order with the other calls; see
        ``_core/_checkpoint.py``."""
        return self._put((ev.LOAD_STATE, self._clock(), checked_state_dict(state_dict)))

    # -- status --------------------------------------------------------------------------------
    def log_status(self, status: str) -> R:
        """The dashboard's status text (the header's last field and the plain lines'
        last part; Rich markup allowed, shown literally when it is not valid). A
        ``log_step`` sets it back to ``Training``."""
        return self._put((ev.STATUS, self._clock(), status))

    def log_save(self, path: str) -> R:
        """Last checkpoint path (shown in the final summary)."""
        return self._put((ev.SAVE, self._clock(), str(path)))

    def start_training_timer(self) -> R:
        """Restart the ETA clock now (call after warm-up so buffer filling is excluded)."""
        return self._put((ev.TRAINING_TIMER, self._clock()))

    def _start_event(self, status: str) -> R:
        return self._put((ev.START, self._clock(), status))

    # -- episodes ----------------------------------------------------------------------------
    def log_episodes(self, returns: Iterable[Any], lengths: Iterable[Any] = ()) -> R:
        """Episodes that ended: their returns and lengths (numbers, or NumPy arrays).

        The dashboard's reward takes the mean return and its episode length the mean
        length; the next ``log_step`` record gets ``episode/return`` and
        ``episode/length`` (the means over every episode that ended since the previous
        step) and ``episode/count``. From a :class:`~aoff.RemoteLogger` (a collector)
        they count for the run. ``aoff.gymnasium.log_episodes`` reads them from
        Gymnasium's ``RecordEpisodeStatistics`` infos. A value that is not a number is
        skipped and counted (``invalid_values``); a non-iterable is a ``TypeError``.
        """
        return self._put((ev.EPISODES, self._clock(), numbers(returns), numbers(lengths)))
