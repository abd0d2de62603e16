"""SAC on Pendulum-v1 under asyncio: a collector task and a learner task, logged with
aoff's ``AsyncOffPolicyLogger``.

The two tasks share the replay buffer and run on one event loop; the learner does each
gradient step in a worker thread (``asyncio.to_thread``; PyTorch releases the GIL), so
the collector keeps stepping the environment meanwhile with its own copy of the policy,
refreshed after every update. The collector may run at most ``MAX_LEAD`` steps ahead of
the learner, which keeps one update per environment step as in the sync example.
aoff's pump is one more task on the same loop::

    python examples/sac_pendulum_asyncio.py            # 20,000 steps, seed 0
    .venv/bin/tensorboard --logdir runs    # as the run's closing lines print it

Needs the ``examples`` extra: ``pip install 'aoff[examples]'``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from time import perf_counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _sac import (
    EpisodeStats,
    Setup,
    build_parser,
    episode_report,
    logger_kwargs,
    ms,
    result_line,
    setup,
)

from aoff import AsyncOffPolicyLogger

NAME = "sac_pendulum_asyncio"
MAX_LEAD = 2  # env steps the collector may take beyond the learner's updates


class Shared:
    """What the two tasks share besides the replay buffer (touched on the loop only)."""

    def __init__(self) -> None:
        self.env_steps = 0
        self.updates = 0
        self.policy_state: dict[str, Any] | None = None
        self.policy_version = 0
        self.finished: list[float] = []  # episodes ended since the learner last logged
        self._changed = asyncio.Event()

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for_steps(self, n: int) -> None:
        while self.env_steps < n:
            await self._changed.wait()

    async def wait_for_updates(self, n: int) -> None:
        while self.updates < n:
            await self._changed.wait()


async def collector(
    args: Any, s: Setup, log: AsyncOffPolicyLogger, sh: Shared, stats: EpisodeStats
) -> None:
    env, buffer = s.env, s.buffer
    policy = s.agent.policy_copy()
    version = 0
    obs, _ = env.reset(seed=args.seed)
    for t in range(args.total_steps):
        warming_up = t < args.learning_starts
        t0 = perf_counter()
        if not warming_up:
            await sh.wait_for_updates(t - args.learning_starts - MAX_LEAD + 1)
        t1 = perf_counter()
        if sh.policy_state is not None and sh.policy_version != version:
            policy.load_state_dict(sh.policy_state)
            version = sh.policy_version
        t2 = perf_counter()
        action = env.action_space.sample() if warming_up else policy.act(obs)
        t3 = perf_counter()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        t4 = perf_counter()
        buffer.add(obs, action, float(reward), next_obs, bool(terminated))
        t5 = perf_counter()
        obs = next_obs
        sh.env_steps = t + 1
        sh.notify()
        ep_return = stats.step(float(reward), bool(terminated), bool(truncated))
        if ep_return is not None:
            obs, _ = env.reset()
            await log.update_ep_length(stats.mean_length())
            await log.update_done_rates(*stats.done_rates())
            await log.update_buffer_utilization(len(buffer) / buffer.capacity)
            if not warming_up:
                sh.finished.append(ep_return)
        await log.update_collector_timing(
            {
                "sync_coordination_ms": ms(t1 - t0),
                "weight_sync_ms": ms(t2 - t1),
                "action_select_ms": ms(t3 - t2),
                "env_step_ms": ms(t4 - t3),
                "replay_ms": ms(t5 - t4),
            }
        )
        # before training there is no log_step: the collector reports episode returns
        warm_return = ep_return if warming_up and ep_return is not None else 0.0
        await log.log_collector(t + 1, len(buffer), warm_return)
        if warming_up:
            await log.log_buffer_fill(len(buffer), args.learning_starts)
        await asyncio.sleep(0)  # let the learner and aoff's pump run


async def learner(
    args: Any, s: Setup, log: AsyncOffPolicyLogger, sh: Shared, stats: EpisodeStats
) -> None:
    agent, buffer = s.agent, s.buffer

    def train(batch: Any) -> tuple[dict[str, float], dict[str, Any], float, float]:
        t0 = perf_counter()
        metrics = agent.update(batch)
        t1 = perf_counter()
        state = agent.actor_state()
        return metrics, state, t1 - t0, perf_counter() - t1

    for i in range(s.updates_planned):
        t0 = perf_counter()
        await sh.wait_for_steps(args.learning_starts + i + 1)
        if i == 0:
            await log.start_training_timer()
        t1 = perf_counter()
        # sampled on the loop, where the collector writes: never a half-written row
        batch = buffer.sample(s.rng, args.batch_size)
        metrics, state, train_s, publish_s = await asyncio.to_thread(train, batch)
        sh.policy_state, sh.policy_version = state, sh.policy_version + 1
        sh.updates = i + 1
        sh.notify()
        await log.update_staging_pool(sh.env_steps - args.learning_starts - sh.updates, MAX_LEAD)
        reward_mean, reward_metrics = episode_report(stats, sh.finished)
        sh.finished.clear()
        await log.log_step(
            iteration=i + 1,
            metrics=metrics,
            reward=reward_mean,
            reward_metrics=reward_metrics,
            train_time=train_s,
            wait_time=t1 - t0,
            weight_sync_time=publish_s,
            extra_info={"throughput_steps": 1},
        )


async def amain(args: Any) -> EpisodeStats:
    s = setup(args)
    stats = EpisodeStats()
    sh = Shared()
    async with AsyncOffPolicyLogger(**logger_kwargs(args, s, "SAC")) as log:
        await log.start(status="Filling the replay buffer...")
        await log.set_collection_sync(False)
        async with asyncio.TaskGroup() as tg:
            tg.create_task(collector(args, s, log, sh, stats))
            tg.create_task(learner(args, s, log, sh, stats))
        await log.log_save(s.agent.save(os.path.join(args.logdir, "sac_pendulum.pt")))
        await log.afinish(
            extra_summary=f"Mean return (last {len(stats.returns)} episodes): "
            f"{stats.mean_return():.1f}"
        )
    s.env.close()
    return stats


def main(argv: list[str] | None = None) -> int:
    args = build_parser(NAME, __doc__).parse_args(argv)
    started = perf_counter()
    stats = asyncio.run(amain(args))
    print(result_line(NAME, args, stats, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
