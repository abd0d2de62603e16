"""A synchronous reference logger that works the way the seed logger does, for benchmarks.

Written for the benchmarks from the seed's documented behaviour
(``shared/reference/seed-behaviour.md``); it is not the seed's code. It keeps the same
state (an :class:`aoff._core._state.State`, mutated in place on the caller's thread), and on
every ``log_step``, on the caller's thread:

1. redraws the Rich panel (``aoff._display._panel.dashboard_panel``, the seed's layout) in a
   ``Live`` when the throttle allows (``refresh_per_second``, default 4), and
2. calls ``torch.utils.tensorboard.SummaryWriter.add_scalar`` once per scalar (~30 a
   step), with the seed's tags and step rule.

That is the cost profile the seed imposes on a training loop, which is what aoff is
measured against. Only the calls the benchmark workload makes are implemented.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.live import Live

from aoff._core._records import RunConfig
from aoff._core._state import State
from aoff._display._render import dashboard_panel, glyphs_for, summary_panel

_ALIASES = {
    "surrogate_loss": "loss/policy_loss",
    "value_loss": "loss/value_loss",
    "entropy": "policy/entropy",
    "kl": "ppo/approx_kl",
}


class SeedLikeLogger:
    """Renders and writes on the caller's thread, like the seed logger."""

    def __init__(
        self,
        *,
        algo_name: str = "RL",
        env_name: str = "",
        max_iterations: int = 1500,
        num_envs: int = 4096,
        refresh_per_second: float = 4,
        log_dir: str = "",
        console: Console | None = None,
    ) -> None:
        self.state = State(
            config=RunConfig(
                algo_name=algo_name,
                env_name=env_name,
                max_iterations=max_iterations,
                num_envs=num_envs,
            )
        )
        self.console = console if console is not None else Console()
        self.glyphs = glyphs_for(self.console)
        self.min_interval = 1.0 / refresh_per_second
        self.last_refresh = float("-inf")
        self.live: Live | None = None
        self.writer: Any = None
        self.frames = 0
        if log_dir:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir)
        self.closed = False

    # -- display -----------------------------------------------------------------------
    def start(self, status: str = "Warming up...") -> None:
        s = self.state
        now = time.time()
        if not s.started:
            s.started = True
            s.start_time = now
        s.status = status
        if self.live is None:
            self.live = Live(
                dashboard_panel(s, now, self.glyphs),
                console=self.console,
                auto_refresh=False,
                transient=False,
            )
            self.live.start(refresh=True)
        else:
            self._refresh(force=True)

    def _refresh(self, force: bool = False) -> None:
        if self.live is None:
            return
        now = time.time()
        if not force and now - self.last_refresh < self.min_interval:
            return
        self.last_refresh = now
        self.frames += 1
        self.live.update(dashboard_panel(self.state, now, self.glyphs), refresh=True)

    # -- the workload's calls ---------------------------------------------------------
    def update_collector_timing(self, timing_ms: Mapping[str, float]) -> None:
        self.state.collector_timing.update(timing_ms)

    def update_done_rates(self, timeout_rate: float, terminated_rate: float) -> None:
        self.state.timeout_rate = timeout_rate
        self.state.terminated_rate = terminated_rate

    def log_collector(self, total_steps: int, buffer_size: int, mean_reward: float = 0.0) -> None:
        s = self.state
        s.total_steps = total_steps
        s.buffer_size = buffer_size
        if mean_reward:
            s.reward_history.append(mean_reward)

    def log_step(
        self,
        iteration: int,
        metrics: Mapping[str, float] | None = None,
        reward: float | None = None,
        reward_metrics: Mapping[str, float] | None = None,
        reward_components: Mapping[str, float] | None = None,
        train_time: float = 0.0,
        wait_time: float = 0.0,
        learner_incremental_h2d_time: float = 0.0,
        weight_sync_time: float = 0.0,
        extra_info: Mapping[str, Any] | None = None,
    ) -> None:
        s = self.state
        m = dict(metrics or {})
        for legacy, canonical in _ALIASES.items():
            if legacy in m and canonical in m:
                del m[legacy]
        s.iteration = iteration
        s.train_time = train_time
        s.wait_time = wait_time
        s.h2d_time = learner_incremental_h2d_time
        s.weight_sync_time = weight_sync_time
        s.throughput_known = extra_info is not None
        s.throughput_steps = int(extra_info.get("throughput_steps", 0)) if extra_info else 0
        s.latest_metrics.update(m)
        if reward is not None:
            s.reward_history.append(reward)
        if reward_components:
            s.reward_components = dict(reward_components)
        s.status = "Training"
        s.training_started = True
        s.steps_logged += 1

        self._refresh()

        if self.writer is None:
            return
        step = s.total_steps if s.total_steps > 0 else iteration
        add = self.writer.add_scalar
        add("axis/iteration", iteration, step)
        add("axis/env_steps_total", step, step)
        for k, v in m.items():
            add(k if "/" in k else f"train/{k}", v, step)
        if reward is not None:
            add("reward/mean", reward, step)
        for extra in (reward_metrics or {}), (reward_components or {}):
            for k, v in extra.items():
                add(k if k.startswith("reward/") else f"reward/{k}", v, step)
        if s.ep_length > 0:
            add("episode/length", s.ep_length, step)
        add("episode/timeout_rate", s.timeout_rate, step)
        add("episode/terminated_rate", s.terminated_rate, step)
        add("timing/learner_wait_ms", wait_time * 1000, step)
        add("timing/learner_incremental_h2d_ms", learner_incremental_h2d_time * 1000, step)
        add("timing/learner_train_ms", train_time * 1000, step)
        add("timing/learner_weight_sync_ms", weight_sync_time * 1000, step)
        for k, v in s.collector_timing.items():
            add(f"timing/collector_{k}", v, step)
        pipeline = learner_incremental_h2d_time + train_time + weight_sync_time
        if s.throughput_known and s.throughput_steps > 0 and pipeline > 0:
            add("perf/steps_per_sec", s.throughput_steps / pipeline, step)
        add("perf/iter_ms", pipeline * 1000, step)

    # -- the end -----------------------------------------------------------------------
    def finish(self, title: str = "Training Summary") -> None:
        if self.closed:
            return
        self.closed = True
        s = self.state
        s.finished = True
        s.finish_title = title
        now = time.time()
        s.last_wall_time = now
        if self.live is not None:
            self.live.update(dashboard_panel(s, now, self.glyphs), refresh=False)
            self.live.stop()
            self.live = None
        self.console.print()
        self.console.print(summary_panel(s, now, self.glyphs))
        if self.writer is not None:
            self.writer.close()
