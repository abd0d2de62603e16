"""Stable-Baselines3 SAC on Pendulum-v1, logged through aoff with one changed line.

The script is plain SB3; the only aoff line is ``model.set_logger(aoff.sb3.configure(...))``
in place of SB3's ``configure``. SB3's records (``rollout/*``, ``train/*``, ``time/*``) go
through aoff's hot path: the dashboard shows the run as an off-policy run (reward from
``rollout/ep_rew_mean``, losses from ``train/*``, steps from ``time/total_timesteps``) and
aoff's pump writes the TensorBoard and CSV files off the training loop::

    python examples/sb3_sac.py                      # 10,000 steps, seed 0, ~2-3 min on CPU
    tensorboard --logdir runs

Needs the ``sb3`` extra: ``pip install 'aoff[sb3]'``.
"""

from __future__ import annotations

import argparse
import time

import torch
from stable_baselines3 import SAC

import aoff.sb3

NAME = "sb3_sac"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-steps", type=int, default=10_000)
    p.add_argument("--learning-starts", type=int, default=1_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--logdir", default=f"runs/{NAME}")
    p.add_argument("--hidden", type=int, default=64, help="units per hidden layer")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument(
        "--formats",
        default="stdout,tensorboard,csv",
        help="SB3 format strings: stdout (aoff's dashboard), tensorboard, csv, json, log",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)  # small networks: one thread is fastest and deterministic
    started = time.perf_counter()
    model = SAC(
        "MlpPolicy",
        "Pendulum-v1",
        learning_starts=args.learning_starts,
        batch_size=args.batch_size,
        policy_kwargs={"net_arch": [args.hidden, args.hidden]},
        seed=args.seed,
        device="cpu",
    )
    # the one line that differs from plain SB3 (there: stable_baselines3.common.logger)
    logger = aoff.sb3.configure(
        args.logdir,
        args.formats.split(","),
        algo_name="SAC",
        env_name="Pendulum-v1",
        config={"learning_starts": args.learning_starts, "batch_size": args.batch_size},
    )
    model.set_logger(logger)
    model.learn(total_timesteps=args.total_steps, log_interval=1)
    logger.close()  # drains aoff and prints its summary
    report = logger.report
    assert report is not None
    took = time.perf_counter() - started
    print(
        f"{NAME}: seed {args.seed}, {args.total_steps} env steps in {took:.1f}s; "
        f"records written {report.backend_written}, lost {sum(report.backend_lost.values())}"
    )
    return 0 if report.complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
