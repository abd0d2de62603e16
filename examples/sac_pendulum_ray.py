"""SAC on Pendulum-v1 with collectors as Ray actors feeding one learner, all logged into one run.

``--collectors`` Ray actors (2 by default) each step their own ``Pendulum-v1`` with a
copy of the current policy and return transitions in chunks of ``--chunk`` to the
learner (this process, the Ray driver), which keeps the replay buffer and makes the SAC
updates: one per transition received, so it asks a collector for its next chunk only
once it has caught up (one update per environment step, as in the other examples).
Every ``--sync-every`` updates the learner puts the actor's new weights in Ray's object
store and the next chunks are collected with them.

Logging: the learner logs with an ``OffPolicyLogger``; ``aoff.ray.serve(log)`` starts
the run's hub on this node and returns a small picklable link; each collector actor
calls ``link.remote(f"collector{k}")`` and logs its env steps, timings, done rates and
episode returns into the same run and dashboard (its total env steps is the sum of the
collectors') and folder (the collectors' TensorBoard runs are ``<logdir>/collector<k>/``),
wherever in the cluster it runs: the events travel as Ray actor calls. Without
``--address`` a local Ray instance is started; ``--address auto`` joins a running
cluster (aoff must be importable on every node)::

    python examples/sac_pendulum_ray.py --collectors 4
    tensorboard --logdir runs/sac_pendulum_ray

Needs the ``examples`` and ``ray`` extras: ``pip install 'aoff[examples,ray]'``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from time import perf_counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _sac import (
    ENV_ID,
    Actor,
    EpisodeStats,
    build_parser,
    logger_kwargs,
    ms,
    result_line,
    setup,
)

from aoff import OffPolicyLogger, RemoteReport

NAME = "sac_pendulum_ray"


@dataclass(frozen=True)
class CollectorConfig:
    """What one collector actor needs besides its link."""

    index: int
    steps: int  # env steps this collector takes
    random_steps: int  # of which the first ones take uniform random actions
    chunk: int  # transitions per chunk returned to the learner
    hidden: int
    seed: int


class Collector:
    """One collector (a Ray actor: ``ray.remote`` is applied in :func:`main`)."""

    def __init__(self, cfg: CollectorConfig, link: Any) -> None:
        import gymnasium as gym
        import numpy as np
        import torch

        torch.set_num_threads(1)
        self.cfg = cfg
        seed = cfg.seed + 1 + cfg.index
        torch.manual_seed(seed)
        self.env = gym.make(ENV_ID)
        self.env.action_space.seed(seed)
        space = self.env.action_space
        assert isinstance(space, gym.spaces.Box) and self.env.observation_space.shape
        self.space = space
        obs_dim, act_dim = int(self.env.observation_space.shape[0]), int(space.shape[0])
        low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
        self.actor = Actor(obs_dim, act_dim, cfg.hidden, low, high)
        self.actor.requires_grad_(False)
        self.version = -1
        self.stats = EpisodeStats()
        self.t = 0
        self.chunks = 0
        self.obs, _ = self.env.reset(seed=seed)
        self.log = link.remote(f"collector{cfg.index}")  # this actor's logger, into the run

    def collect(self, version: int, state: dict[str, Any]) -> tuple[Any, ...]:
        """Up to ``chunk`` env steps with the policy ``state`` (weights ``version``)."""
        import numpy as np
        import torch

        cfg, log = self.cfg, self.log
        t0 = perf_counter()
        if version != self.version:
            self.actor.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
            self.version = version
        sync_ms = ms(perf_counter() - t0)
        rows: list[tuple[Any, Any, float, Any, bool]] = []
        finished: list[float] = []
        started = perf_counter()
        while len(rows) < cfg.chunk and self.t < cfg.steps:
            t1 = perf_counter()
            exploring = self.t < cfg.random_steps or self.version < 0
            action = self.space.sample() if exploring else self.actor.act(self.obs)
            t2 = perf_counter()
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            t3 = perf_counter()
            rows.append((self.obs, action, float(reward), next_obs, bool(terminated)))
            self.obs = next_obs
            self.t += 1
            ep_return = self.stats.step(float(reward), bool(terminated), bool(truncated))
            if ep_return is not None:
                self.obs, _ = self.env.reset()
                finished.append(ep_return)
                log.update_done_rates(*self.stats.done_rates())
                log.update_ep_length(self.stats.mean_length())
            log.update_collector_timing(
                {
                    "weight_sync_ms": sync_ms,
                    "action_select_ms": ms(t2 - t1),
                    "env_step_ms": ms(t3 - t2),
                }
            )
            # this collector's own env steps: the run's total is the collectors' sum
            log.log_collector(self.t, self.t)
            sync_ms = 0.0
        self.chunks += 1
        log.log_step(
            iteration=self.chunks,
            metrics={"policy_version": float(self.version)},
            reward=float(np.mean(finished)) if finished else None,
            reward_metrics={"return_mean10": self.stats.mean_return()} if finished else None,
            extra_info={"throughput_steps": len(rows)},
            train_time=perf_counter() - started,  # stepping the environment for this chunk
        )
        obs, act, rew, next_obs, term = zip(*rows, strict=True)
        return (
            np.asarray(obs, np.float32),
            np.asarray(act, np.float32),
            np.asarray(rew, np.float32),
            np.asarray(next_obs, np.float32),
            np.asarray(term, np.bool_),
            finished,
            self.t >= cfg.steps,
        )

    def close(self) -> RemoteReport:
        self.env.close()
        report: RemoteReport = self.log.close()
        return report


def main(argv: list[str] | None = None) -> int:
    p = build_parser(NAME, __doc__)
    p.add_argument("--collectors", type=int, default=2, help="collector actors (1-64)")
    p.add_argument("--chunk", type=int, default=50, help="transitions per chunk")
    p.add_argument("--sync-every", type=int, default=100, help="updates between weight syncs")
    p.add_argument("--address", default=None, help="a Ray cluster to join (default: start one)")
    # small by default: a minute on a laptop's CPU (pass --total-steps 20000 to learn more)
    p.set_defaults(total_steps=3000, learning_starts=1000, hidden=64, batch_size=64)
    args = p.parse_args(argv)
    if not 1 <= args.collectors <= 64:
        p.error("--collectors must be 1..64")
    if args.chunk < 1 or args.sync_every < 1:
        p.error("--chunk and --sync-every must be >= 1")
    import ray

    import aoff.ray

    started = perf_counter()
    s = setup(args)
    s.env.close()  # the learner steps no environment; it only needed the spaces
    agent, buffer, n = s.agent, s.buffer, args.collectors
    stats = EpisodeStats()  # the collectors' episodes, as the learner hears of them

    if args.address is None:
        # the actors import this file's folder (for _sac) as this process does
        here = os.path.dirname(os.path.abspath(__file__))
        more = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        path = os.pathsep.join(os.path.abspath(x) for x in (here, *more) if x)
        ray.init(
            num_cpus=max(n, 1),
            include_dashboard=False,
            logging_level="warning",
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    else:
        ray.init(address=args.address, logging_level="warning", log_to_driver=False)
    kw = logger_kwargs(args, s, "SAC")
    kw["num_envs"] = n
    log = OffPolicyLogger(**kw)
    reports: list[RemoteReport] = []
    try:
        log.start(status=f"Starting {n} collector actors...")
        link = aoff.ray.serve(log)  # the hub, on this node; the link pickles anywhere
        actor = ray.remote(num_cpus=1)(Collector)
        collectors = [
            actor.remote(
                CollectorConfig(
                    index=k,
                    steps=args.total_steps // n + (k < args.total_steps % n),
                    random_steps=-(-args.learning_starts // n),
                    chunk=args.chunk,
                    hidden=args.hidden,
                    seed=args.seed,
                ),
                link,
            )
            for k in range(n)
        ]
        version = 0
        weights = ray.put({k: v.numpy() for k, v in agent.actor_state().items()})
        pending = {c.collect.remote(version, weights): k for k, c in enumerate(collectors)}
        received, waited = 0, 0.0
        while pending or agent.updates < received - args.learning_starts:
            if agent.updates >= received - args.learning_starts:
                # caught up: one update per transition received, so take the next chunk
                t0 = perf_counter()
                ready, _ = ray.wait(list(pending), num_returns=1)
                waited += perf_counter() - t0
                k = pending.pop(ready[0])
                obs, act, rew, next_obs, term, returns, done = ray.get(ready[0])
                for i in range(len(rew)):
                    buffer.add(obs[i], act[i], float(rew[i]), next_obs[i], bool(term[i]))
                for ret in returns:  # for the closing line; the collectors log their own
                    stats.returns.append(ret)
                    stats.episodes += 1
                if not done:
                    pending[collectors[k].collect.remote(version, weights)] = k
                before, received = received, received + len(rew)
                # the learner steps no environment: its own total is 0, the run's total
                # env steps is the sum of the collectors' latest log_collector totals
                log.log_collector(0, len(buffer))
                log.update_buffer_utilization(len(buffer) / buffer.capacity)
                if before < args.learning_starts:
                    log.log_buffer_fill(min(received, args.learning_starts), args.learning_starts)
                    if received >= args.learning_starts:
                        log.start_training_timer()
                continue

            # -- one gradient update ----------------------------------------------------------
            t4 = perf_counter()
            metrics = agent.update(buffer.sample(s.rng, args.batch_size))
            t5 = perf_counter()
            log.log_step(
                iteration=agent.updates,
                metrics=metrics,
                train_time=t5 - t4,
                wait_time=waited,  # waiting for transitions since the last update
                extra_info={"throughput_steps": 1},
            )
            waited = 0.0
            if agent.updates % args.sync_every == 0:
                version += 1
                weights = ray.put({k: v.numpy() for k, v in agent.actor_state().items()})
        reports = ray.get([c.close.remote() for c in collectors])
        log.log_save(agent.save(os.path.join(args.logdir, "sac_pendulum.pt")))
    finally:
        log.finish(
            extra_summary=f"Mean return (last {len(stats.returns)} episodes): "
            f"{stats.mean_return():.1f}"
        )
        ray.shutdown()
    for r in reports:
        print(f"{r.name}: {r.sent:,} events sent, {r.dropped} dropped")
    print(result_line(NAME, args, stats, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
