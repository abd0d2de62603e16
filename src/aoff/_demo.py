"""``python -m aoff demo``: a simulated off-policy run, to see the dashboard and the files.

Nothing is trained. :class:`Simulation` produces the numbers a SAC run on a vectorised
``Pendulum-v1`` would report — a replay-buffer warm-up, then losses that decay with noise,
a temperature ``alpha`` annealing towards its target entropy, Q values, an episode return
rising from about -1400 towards -200, reward components, collector timings (with nested
sub-timings), done rates, a staging pool, throughput — and the driver feeds them to a real
logger (:class:`~aoff.OffPolicyLogger`, or :class:`~aoff.AsyncOffPolicyLogger` under
asyncio with ``--async``) while sleeping ``--iter-ms`` per iteration in place of training.

The logger writes TensorBoard files to ``<logdir>/<name>`` (``runs/demo-<time>`` by
default); the demo ends by printing how to open them.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from ._async import AsyncOffPolicyLogger
from ._sync import OffPolicyLogger

__all__ = ["DemoConfig", "Fill", "Iteration", "Simulation", "add_arguments", "run"]

ALGO = "SAC"
ENV = "Pendulum-v1"
NUM_ENVS = 16
STEPS_PER_ENV = 64  # env steps each env takes per iteration
OBS_DIM, ACTION_DIM = 3, 1
EPISODE_LEN = 200  # Pendulum's time limit
BUFFER_CAPACITY = 1_000_000
STAGING_MAX = 8
TARGET_ENTROPY = -float(ACTION_DIM)
KNOWN_BACKENDS = ("tensorboard", "jsonl", "wandb")


@dataclass(frozen=True)
class Fill:
    """One tick of the replay-buffer warm-up."""

    buffer_size: int
    target: int
    total_steps: int
    collector_timing_ms: dict[str, float]


@dataclass(frozen=True)
class Iteration:
    """Everything one simulated learner iteration reports."""

    iteration: int
    total_steps: int
    buffer_size: int
    metrics: dict[str, float]
    reward: float
    reward_metrics: dict[str, float]
    reward_components: dict[str, float]
    collector_timing_ms: dict[str, float]
    timeout_rate: float
    terminated_rate: float
    staging_len: int
    ep_length: float
    train_time: float
    wait_time: float
    h2d_time: float
    weight_sync_time: float
    throughput_steps: int


@dataclass
class Simulation:
    """Deterministic (per seed) SAC-on-Pendulum-like numbers for ``iterations`` steps.

    Curves are functions of the progress ``p = i / iterations`` plus noise, so a short
    run still shows the whole learning curve. ``iter_ms`` scales the learner times.
    """

    iterations: int = 300
    seed: int = 0
    iter_ms: float = 75.0
    fill_target: int = 10_240
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ValueError("iterations must be >= 1")
        self.rng = random.Random(self.seed)

    @property
    def steps_per_iteration(self) -> int:
        return NUM_ENVS * STEPS_PER_ENV

    def fill(self) -> Iterator[Fill]:
        """The warm-up: random actions until the buffer holds ``fill_target`` transitions."""
        size = 0
        while size < self.fill_target:
            size = min(size + self.steps_per_iteration, self.fill_target)
            yield Fill(size, self.fill_target, size, self._collector_timing(random_actions=True))

    def _noise(self, sd: float) -> float:
        return self.rng.gauss(0.0, sd)

    def _lognoise(self, sd: float) -> float:
        return math.exp(self.rng.gauss(0.0, sd))

    def _collector_timing(self, *, random_actions: bool = False) -> dict[str, float]:
        j = self._lognoise
        backend = 2.6 * j(0.08)
        reset = 0.35 * j(0.3)
        update_state = 0.25 * j(0.1)
        return {
            "weight_sync_ms": 0.0 if random_actions else 0.22 * j(0.2),
            "action_select_ms": 0.15 * j(0.1) if random_actions else 0.85 * j(0.12),
            "env_step_ms": backend + reset + update_state + 0.05,
            "env_step_backend_ms": backend,
            "env_step_reset_done_ms": reset,
            "env_step_update_state_ms": update_state,
            "replay_ms": 0.48 * j(0.15),
            "sync_coordination_ms": 0.09 * j(0.4),
        }

    def step(self, i: int) -> Iteration:
        """Iteration ``i`` (1-based) of the training phase."""
        n = self.iterations
        p = min(max(i / n, 0.0), 1.0)
        noise, lognoise = self._noise, self._lognoise
        total_steps = self.fill_target + i * self.steps_per_iteration
        buffer_size = min(total_steps, BUFFER_CAPACITY)

        # the episode return: about -1400 at random, about -200 once the swing-up is learnt
        ret_clean = -1400.0 + 1200.0 * (1.0 - math.exp(-5.0 * p))
        ret = min(ret_clean + noise(70.0 * (1.0 - p) + 25.0), -100.0 + noise(10.0))
        # Pendulum's cost -(theta^2 + 0.1 theta_dot^2 + 0.001 u^2), per step, by term
        per_step = ret / EPISODE_LEN
        torque = -0.02 * (1.0 - 0.5 * p) * lognoise(0.1)
        velocity = per_step * (0.18 + 0.04 * p) * lognoise(0.05)
        angle = per_step - velocity - torque

        alpha = 0.04 + 0.96 * math.exp(-9.0 * p) * lognoise(0.03)
        entropy = TARGET_ENTROPY + 2.4 * math.exp(-6.0 * p) + noise(0.08)
        # Q ~ discounted return-to-go: grows in magnitude as the critic learns, then
        # shrinks as the policy improves
        q_scale = (1.0 - math.exp(-12.0 * p)) * (620.0 * math.exp(-3.5 * p) + 95.0)
        q1 = -q_scale * lognoise(0.02)
        q2 = q1 * (1.0 + noise(0.01))
        q_loss = (0.6 + 42.0 * p * math.exp(-7.0 * p)) * 12.0 * math.exp(-2.0 * p)
        metrics = {
            "q1_loss": q_loss * lognoise(0.25),
            "q2_loss": q_loss * lognoise(0.25),
            "actor_loss": -min(q1, q2) - alpha * entropy + noise(1.5),
            # -(log alpha * (log_prob + target_entropy)), with log_prob = -entropy
            "alpha_loss": math.log(alpha) * (entropy - TARGET_ENTROPY) + noise(0.01),
            "alpha": alpha,
            "entropy": entropy,
            "q1_mean": q1,
            "q2_mean": q2,
            "target_q": (q1 + q2) / 2.0 + noise(0.5),
            "grad_norm_critic": 8.0 * math.exp(-3.0 * p) * lognoise(0.3) + 0.5,
            "grad_norm_actor": 0.6 * lognoise(0.3),
            "lr": 3e-4,
        }

        t_ms = self.iter_ms
        train_ms = 0.82 * t_ms * lognoise(0.05)
        wait_ms = 0.35 * lognoise(0.6) if self.rng.random() > 0.04 else 1.5 * lognoise(0.4)
        return Iteration(
            iteration=i,
            total_steps=total_steps,
            buffer_size=buffer_size,
            metrics=metrics,
            reward=ret,
            reward_metrics={"success_rate": min(1.0, max(0.0, (ret + 900.0) / 700.0))},
            reward_components={"angle": angle, "velocity": velocity, "torque": torque},
            collector_timing_ms=self._collector_timing(),
            timeout_rate=STEPS_PER_ENV / EPISODE_LEN * (1.0 + noise(0.05)),
            terminated_rate=0.0,
            staging_len=min(STAGING_MAX, max(0, round(3 + noise(2.5)))),
            ep_length=float(EPISODE_LEN),
            train_time=train_ms / 1000.0,
            wait_time=wait_ms / 1000.0,
            h2d_time=0.21 * lognoise(0.1) / 1000.0,
            weight_sync_time=0.45 * lognoise(0.15) / 1000.0,
            throughput_steps=self.steps_per_iteration,
        )


@dataclass
class DemoConfig:
    iterations: int = 300
    refresh: float = 4.0
    backends: tuple[str, ...] = ("tensorboard",)
    logdir: str = "runs"
    name: str = ""
    iter_ms: float = 75.0
    seed: int = 0
    use_async: bool = False

    @property
    def run_dir(self) -> str:
        return os.path.join(self.logdir, self.name)

    def logger_kwargs(self) -> dict[str, Any]:
        backends = list(self.backends)
        tensorboard = "tensorboard" in backends
        if tensorboard:
            backends.remove("tensorboard")
        return {
            "algo_name": ALGO,
            "max_iterations": self.iterations,
            "num_envs": NUM_ENVS,
            "env_name": ENV,
            "obs_dim": OBS_DIM,
            "action_dim": ACTION_DIM,
            "refresh_per_second": self.refresh,
            "log_dir": self.run_dir if self.backends else "",
            # the seed's way: log_backend="tensorboard" + log_dir; others as extras
            "log_backend": "tensorboard" if tensorboard else "none",
            "backends": tuple(backends),
            "wandb_name": self.name,
        }


def _checkpoint(cfg: DemoConfig, i: int) -> str:
    # a path only: the demo has no model to save
    return os.path.join(cfg.run_dir, "checkpoints", f"model_{i:06d}.pt")


#: one step of the demo script: ``(logger method, args)``, or ``(None, (ms,))`` to sleep
Action = tuple[Callable[..., Any] | None, tuple[Any, ...]]


class _Calls:
    """The demo's sequence of logging calls, shared by the sync and async drivers.

    The sync driver calls each method and sleeps with ``time.sleep``; the async one awaits
    each call and sleeps with ``asyncio.sleep``. One sequence guarantees that both faces
    see the same events.
    """

    def __init__(self, cfg: DemoConfig) -> None:
        self.cfg = cfg
        self.sim = Simulation(cfg.iterations, cfg.seed, cfg.iter_ms)
        self.checkpoint_every = max(1, cfg.iterations // 3)

    def warmup(self, log: Any) -> Iterator[Action]:
        yield log.set_collection_sync, (True, STEPS_PER_ENV)
        yield log.update_ep_length, (0.0,)
        for f in self.sim.fill():
            yield log.update_collector_timing, (f.collector_timing_ms,)
            yield log.log_collector, (f.total_steps, f.buffer_size)
            yield log.log_buffer_fill, (f.buffer_size, f.target)
            yield log.update_buffer_utilization, (f.buffer_size / BUFFER_CAPACITY,)
            yield None, (self.cfg.iter_ms * 0.5,)
        yield log.start_training_timer, ()

    def training(self, log: Any) -> Iterator[Action]:
        for i in range(1, self.cfg.iterations + 1):
            it = self.sim.step(i)
            yield log.update_collector_timing, (it.collector_timing_ms,)
            yield log.update_done_rates, (it.timeout_rate, it.terminated_rate)
            yield log.log_collector, (it.total_steps, it.buffer_size)
            yield log.update_buffer_utilization, (it.buffer_size / BUFFER_CAPACITY,)
            yield log.update_staging_pool, (it.staging_len, STAGING_MAX)
            yield log.update_ep_length, (it.ep_length,)
            yield None, (self.cfg.iter_ms,)
            yield (
                log.log_step,
                (
                    it.iteration,
                    it.metrics,
                    it.reward,
                    it.reward_metrics,
                    it.reward_components,
                    it.train_time,
                    it.wait_time,
                    it.h2d_time,
                    it.weight_sync_time,
                    {"throughput_steps": it.throughput_steps},
                ),
            )
            if i % self.checkpoint_every == 0 or i == self.cfg.iterations:
                yield log.log_save, (_checkpoint(self.cfg, i),)

    def summary(self) -> str:
        return f"Simulated run (seed {self.cfg.seed}); nothing was trained"


def run_sync(cfg: DemoConfig) -> None:
    calls = _Calls(cfg)
    with OffPolicyLogger(**cfg.logger_kwargs()) as log:
        log.log_status("Collecting random-action transitions...")
        for part in (calls.warmup(log), calls.training(log)):
            for fn, args in part:
                if fn is None:
                    time.sleep(args[0] / 1000.0)
                else:
                    fn(*args)
        log.finish(extra_summary=calls.summary())


async def run_async(cfg: DemoConfig) -> None:
    calls = _Calls(cfg)
    async with AsyncOffPolicyLogger(**cfg.logger_kwargs()) as log:
        await log.log_status("Collecting random-action transitions...")
        for part in (calls.warmup(log), calls.training(log)):
            for fn, args in part:
                if fn is None:
                    await asyncio.sleep(args[0] / 1000.0)
                else:
                    awaitable: Awaitable[None] = fn(*args)
                    await awaitable
        await log.afinish(extra_summary=calls.summary())


def _parse_backends(text: str) -> tuple[str, ...]:
    names = [b.strip().lower() for b in text.split(",") if b.strip()]
    if names == ["none"]:
        return ()
    for b in names:
        if b not in KNOWN_BACKENDS:
            raise argparse.ArgumentTypeError(
                f"unknown backend {b!r}: choose from {', '.join(KNOWN_BACKENDS)} or 'none'"
            )
    return tuple(dict.fromkeys(names))


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--iterations", type=_positive(int), default=300, help="learner iterations to simulate"
    )
    p.add_argument(
        "--refresh", type=_positive(float), default=4.0, help="dashboard refreshes per second"
    )
    p.add_argument(
        "--backends",
        type=_parse_backends,
        default=("tensorboard",),
        help="comma-separated: tensorboard, jsonl, wandb (use WANDB_MODE=offline), or none",
    )
    p.add_argument("--logdir", default="runs", help="parent folder of the run's files")
    p.add_argument("--name", default="", help="run name (default demo-YYYYmmdd-HHMMSS)")
    p.add_argument(
        "--iter-ms",
        type=_non_negative_float,
        default=75.0,
        help="simulated learner work per iteration, in milliseconds",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated numbers")
    p.add_argument(
        "--async",
        dest="use_async",
        action="store_true",
        help="drive AsyncOffPolicyLogger under asyncio instead of the sync logger",
    )


def config_from_args(ns: argparse.Namespace) -> DemoConfig:
    return DemoConfig(
        iterations=ns.iterations,
        refresh=ns.refresh,
        backends=tuple(ns.backends),
        logdir=ns.logdir,
        name=ns.name or time.strftime("demo-%Y%m%d-%H%M%S"),
        iter_ms=ns.iter_ms,
        seed=ns.seed,
        use_async=ns.use_async,
    )


def run(cfg: DemoConfig, out: TextIO | None = None) -> int:
    """Run the demo; print where its files are. Returns the exit status."""
    out = out if out is not None else sys.stdout
    try:
        if cfg.use_async:
            asyncio.run(run_async(cfg))
        else:
            run_sync(cfg)
    except KeyboardInterrupt:
        print("demo interrupted", file=out)
        return 130
    _print_outro(cfg, out)
    return 0


def _print_outro(cfg: DemoConfig, out: TextIO) -> None:
    lines: list[str] = []
    if "tensorboard" in cfg.backends:
        lines.append(f"TensorBoard files: {cfg.run_dir}")
        lines.append(f"Open them with:    tensorboard --logdir {cfg.logdir}")
    if "jsonl" in cfg.backends:
        lines.append(f"JSON Lines:        {os.path.join(cfg.run_dir, 'metrics.jsonl')}")
    if "wandb" in cfg.backends:
        lines.append("W&B:               see the run printed above")
    if not lines:
        lines.append("No backend was chosen (--backends none): nothing was written.")
    print("\n".join(lines), file=out)
