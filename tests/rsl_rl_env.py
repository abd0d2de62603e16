"""A batched pendulum for rsl_rl's ``OnPolicyRunner``: its ``VecEnv`` interface on torch
tensors, every environment stepped at once (the shape of Isaac Lab's and mjlab's envs).

Gymnasium's Pendulum-v1 dynamics and cost, episodes cut at ``max_episode_length`` (a
time-out, as rsl_rl's ``extras["time_outs"]`` says) and, to give episodes of many lengths,
ended when the pendulum spins past 7.5 rad/s.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict


class BatchedPendulum(VecEnv):  # type: ignore[misc]  # rsl_rl is untyped
    def __init__(self, num_envs: int = 256, max_episode_length: int = 40, seed: int = 0) -> None:
        self.num_envs = num_envs
        self.num_actions = 1
        self.max_episode_length = max_episode_length
        self.device = "cpu"
        self.cfg = {"task": "BatchedPendulum", "max_episode_length": max_episode_length}
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long)
        self._g = torch.Generator().manual_seed(seed)
        self.theta = torch.zeros(num_envs)
        self.omega = torch.zeros(num_envs)
        self._reset(torch.ones(num_envs, dtype=torch.bool))

    def _reset(self, which: torch.Tensor) -> None:
        n = self.num_envs
        theta = (torch.rand(n, generator=self._g) * 2 - 1) * math.pi
        omega = torch.rand(n, generator=self._g) * 2 - 1
        self.theta = torch.where(which, theta, self.theta)
        self.omega = torch.where(which, omega, self.omega)
        self.episode_length_buf = torch.where(which, 0, self.episode_length_buf)

    def get_observations(self) -> TensorDict:
        obs = torch.stack((self.theta.cos(), self.theta.sin(), self.omega), dim=1)
        return TensorDict({"policy": obs}, batch_size=[self.num_envs])

    def step(
        self, actions: torch.Tensor
    ) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict[str, Any]]:
        u = actions[:, 0].clamp(-2.0, 2.0)
        angle = (self.theta + math.pi) % (2 * math.pi) - math.pi
        cost = angle**2 + 0.1 * self.omega**2 + 0.001 * u**2
        dt = 0.05
        self.omega = self.omega + (3 * 10.0 / 2 * self.theta.sin() + 3.0 * u) * dt
        self.theta = self.theta + self.omega * dt
        self.episode_length_buf = self.episode_length_buf + 1
        time_outs = self.episode_length_buf >= self.max_episode_length
        dones = time_outs | (self.omega.abs() > 7.5)
        self._reset(dones)
        extras = {"time_outs": time_outs, "log": {"/pendulum/cost": cost.mean()}}
        return self.get_observations(), -cost, dones.long(), extras


def train_cfg(logger: Any = "tensorboard") -> dict[str, Any]:
    """A tiny PPO: seconds on a CPU."""
    return {
        "num_steps_per_env": 8,
        "save_interval": 2,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {
            "class_name": "PPO",
            "num_learning_epochs": 1,
            "num_mini_batches": 2,
            "learning_rate": 1e-3,
            "schedule": "fixed",
        },
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [16, 16],
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0},
        },
        "critic": {"class_name": "MLPModel", "hidden_dims": [16, 16]},
        "logger": logger,
    }
