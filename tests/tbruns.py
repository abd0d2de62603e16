"""Runs written by other tools' own writers, for the readers' tests (no aoff involved).

:func:`write_cleanrl_runs` plays CleanRL's SAC logging (``sac_continuous_action.py``:
its run names ``{env_id}__{exp_name}__{seed}__{time}``, its hyperparameter text, its
tags ``charts/episodic_return``, ``losses/qf1_loss`` …) through torch's own
``SummaryWriter``, several seeds of several configurations: the values are a seeded
learning curve, the second configuration learning faster than the first.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CLEANRL_SAC_TAGS", "write_cleanrl_runs"]

CLEANRL_SAC_TAGS = (
    "charts/episodic_return",
    "charts/episodic_length",
    "losses/qf1_values",
    "losses/qf2_values",
    "losses/qf1_loss",
    "losses/qf2_loss",
    "losses/qf_loss",
    "losses/actor_loss",
    "losses/alpha",
    "charts/SPS",
)


def write_cleanrl_runs(
    root: Path,
    *,
    env_id: str = "Pendulum-v1",
    configs: Sequence[str] = ("sac_continuous_action", "sac_continuous_action_tuned"),
    seeds: Sequence[int] = (1, 2, 3),
    total_timesteps: int = 2000,
    episode_length: int = 200,
    log_every: int = 100,
    start_time: int = 1_733_380_000,
) -> list[Path]:
    """Write ``len(configs) * len(seeds)`` CleanRL SAC runs under ``root``; their folders.

    As CleanRL: an episode's return and length at its end (``global_step``), the losses
    every ``log_every`` steps, ``charts/SPS`` with them."""
    from torch.utils.tensorboard import SummaryWriter

    folders = []
    for c, exp_name in enumerate(configs):
        rate = 1.0 + c  # the later configurations learn faster
        for seed in seeds:
            rng = random.Random(seed * 1000 + c)
            folder = root / f"{env_id}__{exp_name}__{seed}__{start_time + seed}"
            writer = SummaryWriter(str(folder))
            writer.add_text(
                "hyperparameters",
                "|param|value|\n|-|-|\n" + f"|seed|{seed}|\n|exp_name|{exp_name}|",
            )
            for global_step in range(1, total_timesteps + 1):
                progress = global_step / total_timesteps
                if global_step % episode_length == 0:
                    ret = -1500 + 1350 * (1 - math.exp(-3 * rate * progress))
                    writer.add_scalar("charts/episodic_return", ret + rng.gauss(0, 60), global_step)
                    writer.add_scalar("charts/episodic_length", episode_length, global_step)
                if global_step % log_every == 0:
                    qf1 = 5 * math.exp(-2 * progress) + rng.random()
                    qf2 = 5 * math.exp(-2 * progress) + rng.random()
                    writer.add_scalar("losses/qf1_values", -50 * progress, global_step)
                    writer.add_scalar("losses/qf2_values", -51 * progress, global_step)
                    writer.add_scalar("losses/qf1_loss", qf1, global_step)
                    writer.add_scalar("losses/qf2_loss", qf2, global_step)
                    writer.add_scalar("losses/qf_loss", (qf1 + qf2) / 2.0, global_step)
                    writer.add_scalar(
                        "losses/actor_loss", 40 * progress + rng.random(), global_step
                    )
                    writer.add_scalar("losses/alpha", math.exp(-progress), global_step)
                    writer.add_scalar("charts/SPS", int(300 + rng.random() * 20), global_step)
            writer.close()
            folders.append(folder)
    return folders
