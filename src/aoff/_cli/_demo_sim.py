"""The numbers of the demo: a simulated SAC run on a vectorised ``Pendulum-v1``.

Kept apart from the driver (``_demo.py``) so that the simulation, which knows nothing of
aoff, can be tested and reused alone (``tests/test_examples.py``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

ALGO = "SAC"
ENV = "Pendulum-v1"
NUM_ENVS = 16
STEPS_PER_ENV = 64  # env steps each env takes per iteration
OBS_DIM, ACTION_DIM = 3, 1
EPISODE_LEN = 200  # Pendulum's time limit
BUFFER_CAPACITY = 1_000_000
STAGING_MAX = 8
TARGET_ENTROPY = -float(ACTION_DIM)


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

    def _learner_metrics(self, p: float) -> dict[str, float]:
        """SAC's learner metrics at progress ``p`` (0 to 1) of the training phase."""
        noise, lognoise = self._noise, self._lognoise
        alpha = 0.04 + 0.96 * math.exp(-9.0 * p) * lognoise(0.03)
        entropy = TARGET_ENTROPY + 2.4 * math.exp(-6.0 * p) + noise(0.08)
        # Q ~ discounted return-to-go: grows in magnitude as the critic learns, then
        # shrinks as the policy improves
        q_scale = (1.0 - math.exp(-12.0 * p)) * (620.0 * math.exp(-3.5 * p) + 95.0)
        q1 = -q_scale * lognoise(0.02)
        q2 = q1 * (1.0 + noise(0.01))
        q_loss = (0.6 + 42.0 * p * math.exp(-7.0 * p)) * 12.0 * math.exp(-2.0 * p)
        return {
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

        metrics = self._learner_metrics(p)  # its draws come here, in this order

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
