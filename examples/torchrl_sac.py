"""TorchRL SAC on Pendulum-v1, logged by TorchRL's TensorboardLogger or by aoff's.

A plain TorchRL script (environment, actor and critics as tensordict modules, a
collector, a replay buffer, ``SACLoss`` and ``SoftUpdate``); the logger is the one line
that differs: ``--logger tensorboard`` is TorchRL's ``TensorboardLogger``, ``--logger
aoff`` is ``aoff.torchrl.Logger`` with the same ``exp_name`` and ``log_dir``, whose calls
return at once and whose files are written by aoff's agent process::

    python examples/torchrl_sac.py --logger aoff      # 10,000 frames, ~1 min on CPU
    tensorboard --logdir runs/torchrl_sac

Needs the ``torchrl`` and ``examples`` extras (TorchRL's ``GymEnv`` steps Gymnasium):
``pip install 'aoff[torchrl,examples]'``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.envs import Compose, DoubleToFloat, GymEnv, StepCounter, TransformedEnv
from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from torchrl.objectives import SACLoss, SoftUpdate
from torchrl.record.loggers import TensorboardLogger

NAME = "torchrl_sac"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--logger", choices=("tensorboard", "aoff"), default="aoff")
    p.add_argument("--total-frames", type=int, default=10_000)
    p.add_argument("--frames-per-batch", type=int, default=200)
    p.add_argument("--init-random-frames", type=int, default=1_000)
    p.add_argument("--updates-per-batch", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--logdir", default=f"runs/{NAME}")
    p.add_argument("--exp-name", default="sac")
    return p


def make_logger(kind: str, exp_name: str, log_dir: str) -> Any:
    if kind == "aoff":
        import aoff.torchrl

        return aoff.torchrl.Logger(exp_name, log_dir)
    return TensorboardLogger(exp_name, log_dir)


def make_env(seed: int) -> TransformedEnv:
    env = TransformedEnv(GymEnv("Pendulum-v1"), Compose(DoubleToFloat(), StepCounter()))
    env.set_seed(seed)
    return env


def make_agent(env: TransformedEnv, hidden: int) -> tuple[ProbabilisticActor, ValueOperator]:
    n_act = env.action_spec.shape[-1]
    actor_net = nn.Sequential(
        MLP(num_cells=[hidden, hidden], out_features=2 * n_act, activation_class=nn.ReLU),
        NormalParamExtractor(),
    )
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=env.action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={
            "low": env.action_spec.space.low,
            "high": env.action_spec.space.high,
        },
        return_log_prob=True,
    )
    critic = ValueOperator(
        MLP(num_cells=[hidden, hidden], out_features=1, activation_class=nn.ReLU),
        in_keys=["observation", "action"],
    )
    # one forward pass sets the lazy layers' shapes
    rollout = env.rollout(3)
    actor(rollout)
    critic(actor(rollout))
    return actor, critic


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: one thread is fastest and deterministic
    env = make_env(args.seed)
    actor, critic = make_agent(env, args.hidden)
    loss = SACLoss(actor_network=actor, qvalue_network=critic, num_qvalue_nets=2)
    loss.make_value_estimator(gamma=0.99)
    target = SoftUpdate(loss, eps=0.995)
    optim = torch.optim.Adam(loss.parameters(), lr=3e-4)
    buffer = ReplayBuffer(storage=LazyTensorStorage(args.total_frames), batch_size=args.batch_size)
    collector = Collector(
        env,
        actor,
        frames_per_batch=args.frames_per_batch,
        total_frames=args.total_frames,
        init_random_frames=args.init_random_frames,
        auto_register_policy_transforms=False,  # Pendulum needs no InitTracker
    )
    logger = make_logger(args.logger, args.exp_name, args.logdir)
    # the hyperparameters: what the run learned with, not where it logged
    logger.log_hparams({k: v for k, v in vars(args).items() if k not in ("logger", "logdir")})

    frames = 0
    for i, batch in enumerate(collector):
        started = time.perf_counter()
        frames += batch.numel()
        buffer.extend(batch.reshape(-1))
        done = batch["next", "done"]
        if done.any():
            logger.log_scalar("train/episode_reward", batch["next", "reward"].sum().item(), frames)
        if frames < args.init_random_frames:
            continue
        for _ in range(args.updates_per_batch):
            out = loss(buffer.sample())
            total = out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]
            optim.zero_grad()
            total.backward()
            optim.step()
            target.step()
        logger.log_metrics(
            {
                "train/loss_actor": out["loss_actor"].item(),
                "train/loss_qvalue": out["loss_qvalue"].item(),
                "train/alpha": out["alpha"].item(),
                "train/reward": batch["next", "reward"].mean().item(),
            },
            step=frames,
        )
        logger.log_histogram("train/action", batch["action"].flatten(), step=frames, bins="auto")
        # wall clock: differs between two runs of the same seed
        logger.log_scalar("time/update_s", time.perf_counter() - started, step=frames)
        if i % 5 == 0:
            collector.update_policy_weights_()
    collector.shutdown()
    with torch.no_grad():
        rollout = env.rollout(200, actor)
    logger.log_scalar("eval/reward", rollout["next", "reward"].sum().item(), step=frames)
    logger.close()
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
