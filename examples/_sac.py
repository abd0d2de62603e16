"""Soft Actor-Critic for Gymnasium's ``Pendulum-v1``, shared by the three example runners.

The examples (``sac_pendulum_sync.py``, ``sac_pendulum_asyncio.py``,
``sac_pendulum_trio.py``) differ only in how they schedule collection and learning; the
SAC math, the replay buffer, episode bookkeeping and the logger's arguments live here.

SAC as in Haarnoja et al. 2018 ("Soft Actor-Critic Algorithms and Applications"): a
tanh-squashed Gaussian policy, two Q networks with Polyak-averaged targets, the clipped
double-Q soft target, and a temperature ``alpha`` tuned towards the target entropy
``-action_dim``. One gradient update per environment step (update-to-data ratio 1).

Everything runs on the CPU; the networks are small (two hidden layers, 256 units by
default), so PyTorch is limited to one intra-op thread by default (``--torch-threads``).
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import shlex
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

ENV_ID = "Pendulum-v1"
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
#: episodes the running mean return (``reward/return_mean10``) and the done rates cover
EPISODE_WINDOW = 10

#: the names ``SAC.update`` returns, in order (logged as ``train/<name>``)
METRIC_NAMES = (
    "q1_loss",
    "q2_loss",
    "actor_loss",
    "alpha_loss",
    "alpha",
    "entropy",
    "q1_mean",
    "q2_mean",
    "target_q_mean",
)


@dataclass
class SACConfig:
    hidden: int = 256
    actor_lr: float = 3e-4
    critic_lr: float = 1e-3
    alpha_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    batch_size: int = 256
    init_alpha: float = 1.0


def _mlp(n_in: int, n_out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, n_out),
    )


class Actor(nn.Module):
    """Tanh-squashed Gaussian policy scaled to the action bounds."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, low: np.ndarray, high: np.ndarray):
        super().__init__()
        self.net = _mlp(obs_dim, 2 * act_dim, hidden)
        self.register_buffer("scale", torch.as_tensor((high - low) / 2.0, dtype=torch.float32))
        self.register_buffer("bias", torch.as_tensor((high + low) / 2.0, dtype=torch.float32))
        self.scale: torch.Tensor
        self.bias: torch.Tensor

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action and its log-probability under the squashed policy."""
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        eps = torch.randn_like(mean)
        u = mean + log_std.exp() * eps
        # log N(u; mean, std) minus log |d tanh(u)/du| = 2 (log 2 - u - softplus(-2u))
        log_prob = (-0.5 * eps.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        log_prob = log_prob - (2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))).sum(-1)
        log_prob = log_prob - torch.log(self.scale).sum()
        return torch.tanh(u) * self.scale + self.bias, log_prob

    def act(self, obs: np.ndarray) -> np.ndarray:
        """One exploration action for one observation (no autograd)."""
        with torch.inference_mode():
            action, _ = self.sample(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0))
        return action[0].numpy()


class Critic(nn.Module):
    """Two independent Q networks Q(s, a)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int):
        super().__init__()
        self.q1 = _mlp(obs_dim + act_dim, 1, hidden)
        self.q2 = _mlp(obs_dim + act_dim, 1, hidden)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, act], dim=-1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)


class ReplayBuffer:
    """A ring buffer of transitions in preallocated NumPy arrays."""

    def __init__(self, capacity: int, obs_dim: int, act_dim: int):
        self.capacity = capacity
        self.obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.act = np.zeros((capacity, act_dim), dtype=np.float32)
        self.rew = np.zeros(capacity, dtype=np.float32)
        # 1.0 only for a true terminal state: a time-limit truncation still bootstraps
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.ptr = 0
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(
        self, obs: np.ndarray, act: np.ndarray, rew: float, next_obs: np.ndarray, terminated: bool
    ) -> None:
        i = self.ptr
        self.obs[i] = obs
        self.act[i] = act
        self.rew[i] = rew
        self.next_obs[i] = next_obs
        self.terminated[i] = float(terminated)
        self.ptr = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, rng: np.random.Generator, batch_size: int) -> dict[str, torch.Tensor]:
        """A uniform batch, copied out of the buffer (safe to hand to another thread)."""
        idx = rng.integers(0, self.size, size=batch_size)
        return {
            "obs": torch.from_numpy(self.obs[idx]),
            "act": torch.from_numpy(self.act[idx]),
            "rew": torch.from_numpy(self.rew[idx]),
            "next_obs": torch.from_numpy(self.next_obs[idx]),
            "terminated": torch.from_numpy(self.terminated[idx]),
        }


def _adam(params: Any, lr: float) -> torch.optim.Adam:
    """Adam with the fused kernel: on CPU the default per-tensor loop costs several
    times more than the small networks' forward and backward passes."""
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, ValueError):  # an older PyTorch without fused CPU Adam
        return torch.optim.Adam(params, lr=lr, foreach=True)


class SAC:
    """Networks, optimisers and the update step."""

    def __init__(self, obs_dim: int, act_dim: int, space: gym.spaces.Box, cfg: SACConfig):
        self.cfg = cfg
        low = np.asarray(space.low, dtype=np.float32)
        high = np.asarray(space.high, dtype=np.float32)
        self.actor = Actor(obs_dim, act_dim, cfg.hidden, low, high)
        self.critic = Critic(obs_dim, act_dim, cfg.hidden)
        self.critic_target = Critic(obs_dim, act_dim, cfg.hidden)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.requires_grad_(False)
        self.log_alpha = torch.tensor(math.log(cfg.init_alpha), requires_grad=True)
        self.target_entropy = -float(act_dim)
        self.actor_opt = _adam(self.actor.parameters(), cfg.actor_lr)
        self.critic_opt = _adam(self.critic.parameters(), cfg.critic_lr)
        self.alpha_opt = _adam([self.log_alpha], cfg.alpha_lr)
        self._critic_params: list[torch.Tensor] = list(self.critic.parameters())
        self._target_params: list[torch.Tensor] = list(self.critic_target.parameters())
        self.updates = 0

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One gradient step on critic, actor and temperature; then the target update."""
        obs, act, rew = batch["obs"], batch["act"], batch["rew"]
        next_obs, terminated = batch["next_obs"], batch["terminated"]
        alpha = self.log_alpha.exp().detach()

        with torch.no_grad():
            next_act, next_logp = self.actor.sample(next_obs)
            tq1, tq2 = self.critic_target(next_obs, next_act)
            soft_v = torch.min(tq1, tq2) - alpha * next_logp
            target_q = rew + self.cfg.gamma * (1.0 - terminated) * soft_v

        q1, q2 = self.critic(obs, act)
        q1_loss = F.mse_loss(q1, target_q)
        q2_loss = F.mse_loss(q2, target_q)
        self.critic_opt.zero_grad(set_to_none=True)
        (q1_loss + q2_loss).backward()
        self.critic_opt.step()

        # the actor's gradient flows through Q to the action, not into Q's weights
        self.critic.requires_grad_(False)
        new_act, logp = self.actor.sample(obs)
        pq1, pq2 = self.critic(obs, new_act)
        actor_loss = (alpha * logp - torch.min(pq1, pq2)).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_opt.step()
        self.critic.requires_grad_(True)

        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_opt.step()

        with torch.no_grad():
            torch._foreach_lerp_(self._target_params, self._critic_params, self.cfg.tau)
        self.updates += 1

        values = torch.stack(
            [
                q1_loss.detach(),
                q2_loss.detach(),
                actor_loss.detach(),
                alpha_loss.detach(),
                alpha,
                -logp.detach().mean(),
                q1.detach().mean(),
                q2.detach().mean(),
                target_q.mean(),
            ]
        ).tolist()
        return dict(zip(METRIC_NAMES, values, strict=True))

    def policy_copy(self) -> Actor:
        """A separate actor for a collector (kept current with :meth:`actor_state`)."""
        policy = copy.deepcopy(self.actor)
        policy.requires_grad_(False)
        return policy

    def actor_state(self) -> dict[str, torch.Tensor]:
        """A private copy of the actor's weights, for a collector's policy copy."""
        return {k: v.detach().clone() for k, v in self.actor.state_dict().items()}

    def save(self, path: str) -> str:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        torch.save({"actor": self.actor.state_dict(), "critic": self.critic.state_dict()}, path)
        return path


class EpisodeStats:
    """Running episode return/length and how the last episodes ended."""

    def __init__(self, window: int = EPISODE_WINDOW):
        self.ret = 0.0
        self.length = 0
        self.returns: deque[float] = deque(maxlen=window)
        self.lengths: deque[int] = deque(maxlen=window)
        self.ends: deque[bool] = deque(maxlen=window)  # True: terminated, False: truncated
        self.episodes = 0

    def step(self, reward: float, terminated: bool, truncated: bool) -> float | None:
        """Add one reward; the episode's return when it just ended, else ``None``."""
        self.ret += reward
        self.length += 1
        if not (terminated or truncated):
            return None
        finished = self.ret
        self.returns.append(finished)
        self.lengths.append(self.length)
        self.ends.append(bool(terminated))
        self.episodes += 1
        self.ret, self.length = 0.0, 0
        return finished

    def mean_return(self) -> float:
        return float(np.mean(self.returns)) if self.returns else float("nan")

    def mean_length(self) -> float:
        return float(np.mean(self.lengths)) if self.lengths else 0.0

    def done_rates(self) -> tuple[float, float]:
        """(timeout rate, terminated rate) over the last episodes."""
        if not self.ends:
            return 0.0, 0.0
        terminated = sum(self.ends) / len(self.ends)
        return 1.0 - terminated, terminated


class QuietDisplay:
    """``--no-display``: no dashboard; backend notices still print (one line each)."""

    def open(self, state: Any, now: float) -> None:
        pass

    def update(self, state: Any, now: float) -> None:
        pass

    def say(self, markup: str) -> None:
        from rich.console import Console

        Console(highlight=False).print(markup)

    def close(self, state: Any, now: float, *, summary: bool) -> None:
        pass


# -- the parts every runner shares ------------------------------------------------------------
def build_parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{name}.py",
        description=(doc or "").strip().splitlines()[0] if doc else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--total-steps", type=int, default=20_000, help="environment steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--logdir", default=os.path.join("runs", name), help="TensorBoard folder")
    p.add_argument(
        "--learning-starts", type=int, default=1000, help="random-action steps before updates"
    )
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, default=256, help="units in each of the 2 layers")
    p.add_argument("--actor-lr", type=float, default=3e-4)
    p.add_argument("--critic-lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--tau", type=float, default=0.005)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--refresh", type=float, default=4, help="dashboard refreshes per second")
    p.add_argument("--no-display", action="store_true", help="no dashboard (backends still run)")
    p.add_argument(
        "--backends", default="", help="extra aoff backends besides TensorBoard, e.g. 'jsonl'"
    )
    p.add_argument(
        "--stop-on-nan",
        action="store_true",
        help="stop (with a checkpoint) once a logged value is NaN or infinite (aoff.rules)",
    )
    p.add_argument(
        "--nan-at",
        type=int,
        default=0,
        help="poison the critic's weights with NaN at this update, to see --stop-on-nan work",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="watch with every kind of aoff rule, bounds fit for Pendulum SAC (alerts only)",
    )
    return p


def watch_rules(args: argparse.Namespace) -> list[Any] | None:
    """The run's ``rules=``: None (aoff's defaults) unless asked for.

    ``--watch``: one rule of each kind, bounds set for this SAC on Pendulum (a return
    is at least -16.3 x 200 = -3,254; alpha starts at 1 and settles near 0.05; losses
    grow while Q learns returns in the hundreds, but within 2x of their recent median
    here: 20x is a blow-up; a step's throughput varies 50x on a shared machine, so only
    a 90 % fall of its mean is a slow-down)."""
    from aoff import rules

    if not (args.stop_on_nan or args.watch):
        return None
    chosen = [rules.nonfinite(stop=args.stop_on_nan), rules.stalled(seconds=60)]
    if args.watch:
        chosen += [
            rules.above("train/q*_loss", 1e6),
            rules.below("reward/mean", -3300),
            rules.blowup("train/q*_loss", factor=20, window=100),
            rules.collapse("train/alpha", floor=1e-5),
            rules.regression("reward/return_mean10", drop=0.5, window=5),
            rules.slower(fraction=0.9, window=200),
        ]
    return chosen


def poison(agent: SAC) -> None:
    """NaN in the critic's first layer: from this update on its losses are NaN, as a
    diverged run's are (``--nan-at``)."""
    with torch.no_grad():
        first = agent.critic.parameters().__next__()
        first.fill_(float("nan"))


@dataclass
class Setup:
    env: gym.Env[Any, Any]
    agent: SAC
    buffer: ReplayBuffer
    rng: np.random.Generator
    obs_dim: int
    act_dim: int
    updates_planned: int


def setup(args: argparse.Namespace) -> Setup:
    """Seed everything, build the environment, the agent and the buffer."""
    if args.learning_starts < 1 or args.total_steps <= args.learning_starts:
        raise SystemExit("need 1 <= --learning-starts < --total-steps")
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env = gym.make(ENV_ID)
    env.action_space.seed(args.seed)
    obs_space, act_space = env.observation_space, env.action_space
    assert isinstance(act_space, gym.spaces.Box) and obs_space.shape and act_space.shape
    obs_dim, act_dim = int(obs_space.shape[0]), int(act_space.shape[0])
    cfg = SACConfig(
        hidden=args.hidden,
        actor_lr=args.actor_lr,
        critic_lr=args.critic_lr,
        alpha_lr=args.critic_lr,
        gamma=args.gamma,
        tau=args.tau,
        batch_size=args.batch_size,
    )
    return Setup(
        env=env,
        agent=SAC(obs_dim, act_dim, act_space, cfg),
        buffer=ReplayBuffer(args.total_steps, obs_dim, act_dim),
        rng=np.random.default_rng(args.seed),
        obs_dim=obs_dim,
        act_dim=act_dim,
        updates_planned=args.total_steps - args.learning_starts,
    )


def logger_kwargs(args: argparse.Namespace, s: Setup, algo: str) -> dict[str, Any]:
    """Arguments for ``OffPolicyLogger`` / ``AsyncOffPolicyLogger`` (identical)."""
    extra: Sequence[str] = tuple(b for b in args.backends.split(",") if b.strip())
    kw: dict[str, Any] = {
        "algo_name": algo,
        "max_iterations": s.updates_planned,
        "num_envs": 1,
        "env_name": ENV_ID,
        "obs_dim": s.obs_dim,
        "action_dim": s.act_dim,
        "refresh_per_second": args.refresh,
        "log_dir": args.logdir,
        "log_backend": "tensorboard",
        "backends": extra,
    }
    if args.no_display:
        kw["display"] = QuietDisplay()
    chosen = watch_rules(args)
    if chosen is not None:
        kw["rules"] = chosen
    return kw


def episode_report(
    stats: EpisodeStats, finished: list[float]
) -> tuple[float | None, dict[str, float] | None]:
    """``reward``/``reward_metrics`` for ``log_step``: the return of the episodes that
    ended since the last step (their mean, as a vectorised collector would report) and
    the running mean over the last ``EPISODE_WINDOW`` episodes."""
    if not finished:
        return None, None
    return float(np.mean(finished)), {
        "return_mean10": stats.mean_return(),
        "episodes": float(stats.episodes),
    }


def result_line(name: str, args: argparse.Namespace, stats: EpisodeStats, started: float) -> str:
    """The run's result, then where its files are and how to open them."""
    head = (
        f"{name}: seed {args.seed}, {args.total_steps:,} env steps in "
        f"{time.perf_counter() - started:.0f} s; mean return of the last "
        f"{len(stats.returns)} episodes {stats.mean_return():.1f} "
        f"({stats.episodes} episodes)."
    )
    backends = ["tensorboard", *(b.strip() for b in args.backends.split(",") if b.strip())]
    return "\n".join([head, *closing_lines(args.logdir, backends)])


def _command(script: str, module: str) -> str:
    """``script`` next to this Python (relative to here when below it), else
    ``python -m module``: what runs as printed, venv activated or not."""
    folder = os.path.dirname(sys.executable)
    for candidate in (script, script + ".exe"):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            cwd, absolute = os.getcwd(), os.path.abspath(path)
            if os.path.commonpath([cwd, absolute]) == cwd:
                rel = os.path.relpath(absolute, cwd)
                path = rel if os.sep in rel else os.path.join(".", rel)
            return shlex.quote(path)
    return f"{shlex.quote(sys.executable)} -m {module}"


def closing_lines(run_dir: str, backends: Sequence[str]) -> list[str]:
    """The lines ``aoff demo`` ends with, for this run (a test checks they are the same):
    every file written, TensorBoard on the run's parent folder, ``aoff show`` on it."""
    files = (
        ("tensorboard", "TensorBoard files", ""),
        ("jsonl", "JSON Lines", "metrics.jsonl"),
        ("csv", "CSV", "progress.csv"),
    )
    lines = [
        f"{label + ':':<19}{os.path.join(run_dir, file) if file else run_dir}"
        for name, label, file in files
        if name in backends
    ]
    for file, label in (("config.json", "Config"), ("aoff-summary.json", "Run summary")):
        if os.path.isfile(os.path.join(run_dir, file)):  # aoff's own files, when written
            lines.append(f"{label + ':':<19}{os.path.join(run_dir, file)}")
    if "tensorboard" in backends:
        parent = shlex.quote(os.path.dirname(os.path.normpath(run_dir)) or ".")
        tb = _command("tensorboard", "tensorboard.main")
        lines.append(f"{'Open them with:':<19}{tb} --logdir {parent}")
    if any(name in backends for name, _, _ in files):
        lines.append(f"{'Summary:':<19}{_command('aoff', 'aoff')} show {shlex.quote(run_dir)}")
    return lines


def ms(seconds: float) -> float:
    return seconds * 1000.0
