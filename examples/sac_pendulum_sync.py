"""SAC on Pendulum-v1 in a plain synchronous loop, logged with aoff's ``OffPolicyLogger``.

Each iteration steps the environment once and makes one gradient update. The logging
calls only record events; a background thread draws the dashboard and writes the
TensorBoard files (``--logdir``, default ``runs/sac_pendulum_sync``)::

    python examples/sac_pendulum_sync.py            # 20,000 steps, seed 0
    .venv/bin/tensorboard --logdir runs    # as the run's closing lines print it

Needs the ``examples`` extra: ``pip install 'aoff[examples]'``.
"""

from __future__ import annotations

import os
import sys
from time import perf_counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _sac import (
    EpisodeStats,
    build_parser,
    episode_report,
    logger_kwargs,
    ms,
    poison,
    result_line,
    setup,
)

from aoff import OffPolicyLogger

NAME = "sac_pendulum_sync"


def main(argv: list[str] | None = None) -> int:
    args = build_parser(NAME, __doc__).parse_args(argv)
    started = perf_counter()
    s = setup(args)
    env, agent, buffer = s.env, s.agent, s.buffer
    stats = EpisodeStats()
    finished: list[float] = []  # episodes ended since the last log_step

    log = OffPolicyLogger(**logger_kwargs(args, s, "SAC"))
    log.start(status="Filling the replay buffer...")
    log.set_collection_sync(True, 1)
    try:
        obs, _ = env.reset(seed=args.seed)
        for t in range(args.total_steps):
            # -- collect one transition ----------------------------------------------------
            t0 = perf_counter()
            warming_up = t < args.learning_starts
            action = env.action_space.sample() if warming_up else agent.actor.act(obs)
            t1 = perf_counter()
            next_obs, reward, terminated, truncated, _ = env.step(action)
            t2 = perf_counter()
            buffer.add(obs, action, float(reward), next_obs, bool(terminated))
            t3 = perf_counter()
            obs = next_obs
            ep_return = stats.step(float(reward), bool(terminated), bool(truncated))
            if ep_return is not None:
                obs, _ = env.reset()
                log.update_ep_length(stats.mean_length())
                log.update_done_rates(*stats.done_rates())
                log.update_buffer_utilization(len(buffer) / buffer.capacity)
                if not warming_up:
                    finished.append(ep_return)
            log.update_collector_timing(
                {
                    "action_select_ms": ms(t1 - t0),
                    "env_step_ms": ms(t2 - t1),
                    "replay_ms": ms(t3 - t2),
                }
            )
            # before training there is no log_step: the collector reports episode returns
            warm_return = ep_return if warming_up and ep_return is not None else 0.0
            log.log_collector(t + 1, len(buffer), warm_return)
            if warming_up:
                log.log_buffer_fill(len(buffer), args.learning_starts)
                if t + 1 == args.learning_starts:
                    log.start_training_timer()
                continue

            # -- one gradient update -----------------------------------------------------
            if args.nan_at and agent.updates + 1 == args.nan_at:
                poison(agent)
            t4 = perf_counter()
            metrics = agent.update(buffer.sample(s.rng, args.batch_size))
            t5 = perf_counter()
            reward_mean, reward_metrics = episode_report(stats, finished)
            finished.clear()
            log.log_step(
                iteration=agent.updates,
                metrics=metrics,
                reward=reward_mean,
                reward_metrics=reward_metrics,
                train_time=t5 - t4,
                wait_time=t4 - t0,  # the learner waits while the loop collects
                extra_info={"throughput_steps": 1},
            )
            if log.should_stop:  # --stop-on-nan: a rule made with stop=True fired
                path = agent.save(os.path.join(args.logdir, "sac_pendulum_stopped.pt"))
                log.log_save(path)
                print(f"{NAME}: stopped at update {agent.updates}: {log.alerts[-1].message}")
                break
        else:
            log.log_save(agent.save(os.path.join(args.logdir, "sac_pendulum.pt")))
    finally:
        log.finish(
            extra_summary=f"Mean return (last {len(stats.returns)} episodes): "
            f"{stats.mean_return():.1f}"
        )
        env.close()
    print(result_line(NAME, args, stats, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
