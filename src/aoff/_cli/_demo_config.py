"""The demo's settings (``aoff demo``'s options) and the logger arguments they make.

Why a module of its own: the command line (``_demo``), the driver (``_demo_drive``) and
the closing lines (``_demo_outro``) all read one :class:`DemoConfig`; it sits below them
so that none imports another back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ._demo_sim import (
    ACTION_DIM,
    ALGO,
    BUFFER_CAPACITY,
    ENV,
    NUM_ENVS,
    OBS_DIM,
    STEPS_PER_ENV,
)

__all__ = ["DemoConfig", "checkpoint_path"]


@dataclass
class DemoConfig:
    """One demo run: how long, how fast, which backends, where, and which face."""

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
            # so a newcomer's TensorBoard shows the HParams tab (W&B: the run's config)
            "config": self.hparams(),
        }

    def hparams(self) -> dict[str, Any]:
        """The simulated run's hyperparameters (what a real SAC script would pass)."""
        return {
            "algo": ALGO,
            "env": ENV,
            "num_envs": NUM_ENVS,
            "steps_per_env": STEPS_PER_ENV,
            "iterations": self.iterations,
            "buffer_capacity": BUFFER_CAPACITY,
            "lr": 3e-4,
            "seed": self.seed,
            "simulated": True,
        }


def checkpoint_path(cfg: DemoConfig, i: int) -> str:
    """What the demo says it saved at iteration ``i``."""
    # a path only, marked as such: the demo has no model to save and writes no file
    return "(simulated) " + os.path.join(cfg.run_dir, "checkpoints", f"model_{i:06d}.pt")
