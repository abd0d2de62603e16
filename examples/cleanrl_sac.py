"""A CleanRL-style single-file SAC (continuous actions) on Pendulum-v1, logged through aoff.

Written the way CleanRL's ``sac_continuous_action.py`` is (one file, ``runs/<run_name>``,
a hyperparameter table as text, ``charts/*`` and ``losses/*`` scalars every 100 steps,
``--track`` for W&B with ``sync_tensorboard=True``). The one difference is the import::

    from aoff.tensorboard import SummaryWriter   # was: from torch.utils.tensorboard import ...

plus ``--aoff-dashboard``, which turns on aoff's live dashboard (off by default: the
script's own prints stay as they are), a short default run, and ``--threads 1`` (torch's
default of one thread a core is much slower for these small networks on a busy CPU).
The writer's calls only append events; aoff's agent process writes the TensorBoard
files::

    python examples/cleanrl_sac.py                      # 5,000 steps on CPU, ~1-2 min
    python examples/cleanrl_sac.py --aoff-dashboard
    tensorboard --logdir runs

Needs the ``examples`` extra: ``pip install 'aoff[examples]'``.
"""

from __future__ import annotations

import argparse
import random
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

from aoff.tensorboard import SummaryWriter


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--exp-name", default="cleanrl_sac")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--torch-deterministic", type=bool, default=True)
    p.add_argument("--track", action="store_true", help="W&B, with sync_tensorboard=True")
    p.add_argument("--wandb-project-name", default="cleanRL")
    p.add_argument("--wandb-entity", default=None)
    p.add_argument("--env-id", default="Pendulum-v1")
    p.add_argument("--total-timesteps", type=int, default=5_000)
    p.add_argument("--buffer-size", type=int, default=1_000_000)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--tau", type=float, default=0.005)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--learning-starts", type=int, default=1_000)
    p.add_argument("--policy-lr", type=float, default=3e-4)
    p.add_argument("--q-lr", type=float, default=1e-3)
    p.add_argument("--policy-frequency", type=int, default=2)
    p.add_argument("--target-network-frequency", type=int, default=1)
    p.add_argument("--alpha", type=float, default=0.2)
    p.add_argument("--autotune", type=bool, default=True)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (small MLPs)")
    p.add_argument("--aoff-dashboard", action="store_true", help="aoff's live dashboard")
    return p.parse_args()


def make_env(env_id: str, seed: int):  # type: ignore[no-untyped-def]
    def thunk():  # type: ignore[no-untyped-def]
        env = gym.make(env_id)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env.action_space.seed(seed)
        return env

    return thunk


class ReplayBuffer:
    """Transitions in preallocated NumPy arrays, sampled uniformly."""

    def __init__(self, size: int, obs_dim: int, act_dim: int) -> None:
        self.obs = np.zeros((size, obs_dim), np.float32)
        self.next_obs = np.zeros((size, obs_dim), np.float32)
        self.actions = np.zeros((size, act_dim), np.float32)
        self.rewards = np.zeros(size, np.float32)
        self.dones = np.zeros(size, np.float32)
        self.size, self.pos, self.full = size, 0, False

    def add(self, obs, next_obs, action, reward, done) -> None:  # type: ignore[no-untyped-def]
        i = self.pos
        self.obs[i], self.next_obs[i], self.actions[i] = obs, next_obs, action
        self.rewards[i], self.dones[i] = reward, done
        self.pos = (i + 1) % self.size
        self.full = self.full or self.pos == 0

    def sample(self, n: int, device: torch.device) -> tuple[torch.Tensor, ...]:
        idx = np.random.randint(0, self.size if self.full else self.pos, size=n)
        arrays = (self.obs, self.actions, self.next_obs, self.dones, self.rewards)
        return tuple(torch.as_tensor(a[idx], device=device) for a in arrays)


class SoftQNetwork(nn.Module):
    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__()
        obs = int(np.prod(env.single_observation_space.shape))
        act = int(np.prod(env.single_action_space.shape))
        self.fc1 = nn.Linear(obs + act, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc3 = nn.Linear(256, 1)

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.fc1(torch.cat([x, a], 1)))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


LOG_STD_MAX = 2
LOG_STD_MIN = -5


class Actor(nn.Module):
    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__()
        obs = int(np.prod(env.single_observation_space.shape))
        act = int(np.prod(env.single_action_space.shape))
        self.fc1 = nn.Linear(obs, 256)
        self.fc2 = nn.Linear(256, 256)
        self.fc_mean = nn.Linear(256, act)
        self.fc_logstd = nn.Linear(256, act)
        high, low = env.single_action_space.high, env.single_action_space.low
        self.register_buffer("action_scale", torch.tensor((high - low) / 2.0, dtype=torch.float32))
        self.register_buffer("action_bias", torch.tensor((high + low) / 2.0, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        log_std = torch.tanh(self.fc_logstd(x))
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)
        return self.fc_mean(x), log_std

    def get_action(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, log_std = self(x)
        normal = torch.distributions.Normal(mean, log_std.exp())
        x_t = normal.rsample()  # reparameterised
        y_t = torch.tanh(x_t)
        action = y_t * self.action_scale + self.action_bias
        log_prob = normal.log_prob(x_t)
        log_prob -= torch.log(self.action_scale * (1 - y_t.pow(2)) + 1e-6)  # tanh squash
        log_prob = log_prob.sum(1, keepdim=True)
        mean = torch.tanh(mean) * self.action_scale + self.action_bias
        return action, log_prob, mean


def main() -> None:
    args = parse_args()
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    if args.track:
        import wandb

        wandb.init(
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            sync_tensorboard=True,
            config=vars(args),
            name=run_name,
            save_code=True,
        )
    writer = SummaryWriter(f"runs/{run_name}", dashboard=args.aoff_dashboard)
    writer.add_text(
        "hyperparameters",
        "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in vars(args).items()),
    )

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.set_num_threads(args.threads)  # 256-unit MLPs: one thread is fastest on a CPU
    device = torch.device("cpu")

    envs = gym.vector.SyncVectorEnv([make_env(args.env_id, args.seed)])
    assert isinstance(envs.single_action_space, gym.spaces.Box), "continuous actions only"
    max_action = float(envs.single_action_space.high[0])

    actor = Actor(envs).to(device)
    qf1, qf2 = SoftQNetwork(envs).to(device), SoftQNetwork(envs).to(device)
    qf1_target, qf2_target = SoftQNetwork(envs).to(device), SoftQNetwork(envs).to(device)
    qf1_target.load_state_dict(qf1.state_dict())
    qf2_target.load_state_dict(qf2.state_dict())
    q_optimizer = optim.Adam(list(qf1.parameters()) + list(qf2.parameters()), lr=args.q_lr)
    actor_optimizer = optim.Adam(list(actor.parameters()), lr=args.policy_lr)

    if args.autotune:
        target_entropy = -torch.prod(torch.tensor(envs.single_action_space.shape)).item()
        log_alpha = torch.zeros(1, requires_grad=True, device=device)
        alpha = log_alpha.exp().item()
        a_optimizer = optim.Adam([log_alpha], lr=args.q_lr)
    else:
        alpha = args.alpha

    obs_dim = int(np.prod(envs.single_observation_space.shape))
    act_dim = int(np.prod(envs.single_action_space.shape))
    rb = ReplayBuffer(min(args.buffer_size, args.total_timesteps), obs_dim, act_dim)
    start_time = time.time()

    obs, _ = envs.reset(seed=args.seed)
    autoreset = np.zeros(envs.num_envs, dtype=bool)  # Gymnasium 1.x: reset on the next step
    for global_step in range(args.total_timesteps):
        if global_step < args.learning_starts:
            actions = np.array([envs.single_action_space.sample() for _ in range(envs.num_envs)])
        else:
            actions, _, _ = actor.get_action(torch.Tensor(obs).to(device))
            actions = actions.detach().cpu().numpy()

        next_obs, rewards, terminations, truncations, infos = envs.step(actions)

        if "episode" in infos:
            for i in np.flatnonzero(infos["_episode"]):
                ret, length = infos["episode"]["r"][i], infos["episode"]["l"][i]
                print(f"global_step={global_step}, episodic_return={ret:.1f}")
                writer.add_scalar("charts/episodic_return", ret, global_step)
                writer.add_scalar("charts/episodic_length", length, global_step)

        for i in range(envs.num_envs):
            if not autoreset[i]:  # the step after an episode's end only resets
                rb.add(obs[i], next_obs[i], actions[i], rewards[i], terminations[i])
        autoreset = np.logical_or(terminations, truncations)
        obs = next_obs

        if global_step > args.learning_starts:
            b_obs, b_act, b_next, b_done, b_rew = rb.sample(args.batch_size, device)
            with torch.no_grad():
                next_actions, next_log_pi, _ = actor.get_action(b_next)
                qf1_next = qf1_target(b_next, next_actions)
                qf2_next = qf2_target(b_next, next_actions)
                min_qf_next = torch.min(qf1_next, qf2_next) - alpha * next_log_pi
                next_q = b_rew.flatten() + (1 - b_done.flatten()) * args.gamma * min_qf_next.view(
                    -1
                )

            qf1_a_values = qf1(b_obs, b_act).view(-1)
            qf2_a_values = qf2(b_obs, b_act).view(-1)
            qf1_loss = F.mse_loss(qf1_a_values, next_q)
            qf2_loss = F.mse_loss(qf2_a_values, next_q)
            qf_loss = qf1_loss + qf2_loss
            q_optimizer.zero_grad()
            qf_loss.backward()
            q_optimizer.step()

            if global_step % args.policy_frequency == 0:  # TD3-style delayed update
                for _ in range(args.policy_frequency):
                    pi, log_pi, _ = actor.get_action(b_obs)
                    min_qf_pi = torch.min(qf1(b_obs, pi), qf2(b_obs, pi))
                    actor_loss = ((alpha * log_pi) - min_qf_pi).mean()
                    actor_optimizer.zero_grad()
                    actor_loss.backward()
                    actor_optimizer.step()
                    if args.autotune:
                        with torch.no_grad():
                            _, log_pi, _ = actor.get_action(b_obs)
                        alpha_loss = (-log_alpha.exp() * (log_pi + target_entropy)).mean()
                        a_optimizer.zero_grad()
                        alpha_loss.backward()
                        a_optimizer.step()
                        alpha = log_alpha.exp().item()

            if global_step % args.target_network_frequency == 0:
                for net, target in ((qf1, qf1_target), (qf2, qf2_target)):
                    for p, tp in zip(net.parameters(), target.parameters(), strict=True):
                        tp.data.copy_(args.tau * p.data + (1 - args.tau) * tp.data)

            if global_step % 100 == 0:
                writer.add_scalar("losses/qf1_values", qf1_a_values.mean().item(), global_step)
                writer.add_scalar("losses/qf2_values", qf2_a_values.mean().item(), global_step)
                writer.add_scalar("losses/qf1_loss", qf1_loss.item(), global_step)
                writer.add_scalar("losses/qf2_loss", qf2_loss.item(), global_step)
                writer.add_scalar("losses/qf_loss", qf_loss.item() / 2.0, global_step)
                writer.add_scalar("losses/actor_loss", actor_loss.item(), global_step)
                writer.add_scalar("losses/alpha", alpha, global_step)
                sps = int(global_step / (time.time() - start_time))
                print("SPS:", sps)
                writer.add_scalar("charts/SPS", sps, global_step)
                if args.autotune:
                    writer.add_scalar("losses/alpha_loss", alpha_loss.item(), global_step)

    envs.close()
    writer.close()
    print(f"max_action={max_action}; TensorBoard files in runs/{run_name}")


if __name__ == "__main__":
    main()
