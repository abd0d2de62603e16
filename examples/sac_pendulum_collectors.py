"""SAC on Pendulum-v1 with collector processes feeding one learner, all logged into one run.

``--collectors`` processes (2 by default; started with the ``spawn`` method) each step
their own ``Pendulum-v1`` with a copy of the current policy and send transitions, in
chunks, through a ``multiprocessing`` queue to the learner (this process), which keeps
the replay buffer and makes the SAC updates. Every ``--sync-every`` updates the learner
sends the actor's new weights to each collector through a queue of its own. The
transition queue is bounded and the learner only takes more once it has made one update
per transition received, so the collectors wait for the learner (one update per
environment step, as in the other examples).

Logging: the learner logs with an ``OffPolicyLogger``; each collector gets
``log.remote(f"collector{k}")``, a picklable ``aoff.RemoteLogger`` passed to the process,
and logs its env steps, timings, done rates and episode returns into the same run, the
same dashboard (its total env steps is the sum of the collectors') and the same folder
(``--logdir``; the collectors' TensorBoard runs are ``<logdir>/collector<k>/``)::

    python examples/sac_pendulum_collectors.py --collectors 4
    .venv/bin/tensorboard --logdir runs    # as the run's closing lines print it

Needs the ``examples`` extra: ``pip install 'aoff[examples]'``.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import signal
import sys
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
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

from aoff import OffPolicyLogger, RemoteLogger, RemoteReport

NAME = "sac_pendulum_collectors"
#: seconds a blocked queue operation waits before looking at the other side again
POLL = 0.5


@dataclass(frozen=True)
class CollectorConfig:
    """What one collector process needs besides its queues and its logger."""

    index: int
    steps: int  # env steps this collector takes
    random_steps: int  # of which the first ones take uniform random actions
    chunk: int  # transitions per message to the learner
    hidden: int
    seed: int


# -- a collector process -----------------------------------------------------------------------
def _latest_weights(weights: Queue[tuple[int, dict[str, Any]]], actor: Actor, version: int) -> int:
    """Load the newest weights waiting in ``weights``, if any; the policy's version."""
    newest = None
    try:
        while True:
            newest = weights.get_nowait()
    except queue.Empty:
        pass
    if newest is None:
        return version
    import torch

    version, state = newest
    actor.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    return version


def collect(
    cfg: CollectorConfig,
    log: RemoteLogger,
    transitions: Queue[Any],
    weights: Queue[tuple[int, dict[str, Any]]],
    stop: Event,
) -> None:
    """Step one environment, send transitions to the learner, log through ``log``."""
    import gymnasium as gym
    import numpy as np
    import torch

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the learner's to handle
    torch.set_num_threads(1)
    seed = cfg.seed + 1 + cfg.index
    torch.manual_seed(seed)
    env = gym.make(ENV_ID)
    env.action_space.seed(seed)
    space = env.action_space
    assert isinstance(space, gym.spaces.Box) and env.observation_space.shape
    obs_dim, act_dim = int(env.observation_space.shape[0]), int(space.shape[0])
    low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    actor = Actor(obs_dim, act_dim, cfg.hidden, low, high)
    actor.requires_grad_(False)
    stats = EpisodeStats()
    version, sent, chunks = -1, 0, 0
    rows: list[tuple[Any, Any, float, Any, bool]] = []
    finished: list[float] = []  # episode returns since the last chunk
    chunk_started = perf_counter()
    try:
        obs, _ = env.reset(seed=seed)
        for t in range(cfg.steps):
            t0 = perf_counter()
            version = _latest_weights(weights, actor, version)
            t1 = perf_counter()
            exploring = t < cfg.random_steps or version < 0
            action = space.sample() if exploring else actor.act(obs)
            t2 = perf_counter()
            next_obs, reward, terminated, truncated, _ = env.step(action)
            t3 = perf_counter()
            rows.append((obs, action, float(reward), next_obs, bool(terminated)))
            obs = next_obs
            ep_return = stats.step(float(reward), bool(terminated), bool(truncated))
            if ep_return is not None:
                obs, _ = env.reset()
                finished.append(ep_return)
                log.update_done_rates(*stats.done_rates())
                log.update_ep_length(stats.mean_length())
            log.update_collector_timing(
                {
                    "weight_sync_ms": ms(t1 - t0),
                    "action_select_ms": ms(t2 - t1),
                    "env_step_ms": ms(t3 - t2),
                }
            )
            # this collector's own env steps: the run's total is the collectors' sum
            log.log_collector(t + 1, sent + len(rows))
            if len(rows) < cfg.chunk and t + 1 < cfg.steps:
                continue

            # -- one chunk to the learner (waits while the learner is behind) ---------------
            t4 = perf_counter()
            if not _send(transitions, _pack(rows, finished), stop):
                return
            t5 = perf_counter()
            sent, chunks = sent + len(rows), chunks + 1
            log.update_collector_timing({"send_wait_ms": ms(t5 - t4)})
            log.log_step(
                iteration=chunks,
                metrics={"policy_version": float(version)},
                reward=float(np.mean(finished)) if finished else None,
                reward_metrics={"return_mean10": stats.mean_return()} if finished else None,
                wait_time=t5 - t4,
                extra_info={"throughput_steps": len(rows)},
                train_time=t4 - chunk_started,  # stepping the environment for this chunk
            )
            rows, finished, chunk_started = [], [], perf_counter()
        report = log.close()
        _send(transitions, ("done", cfg.index, report), stop)
    finally:
        log.close()  # idempotent: also on the way out of an error
        env.close()
        if stop.is_set():  # the learner is gone or stopping: do not wait on the queue
            transitions.cancel_join_thread()


def _pack(rows: list[tuple[Any, Any, float, Any, bool]], finished: list[float]) -> Any:
    import numpy as np

    obs, act, rew, next_obs, term = zip(*rows, strict=True)
    return (
        "chunk",
        np.asarray(obs, np.float32),
        np.asarray(act, np.float32),
        np.asarray(rew, np.float32),
        np.asarray(next_obs, np.float32),
        np.asarray(term, np.bool_),
        list(finished),
    )


def _send(q: Queue[Any], item: Any, stop: Event) -> bool:
    """Put ``item``, waiting while the queue is full; ``False`` once ``stop`` is set."""
    while not stop.is_set():
        try:
            q.put(item, timeout=POLL)
            return True
        except queue.Full:
            continue
    return False


# -- the learner (this process) -----------------------------------------------------------------
def _receive(q: Queue[Any], procs: list[BaseProcess]) -> Any:
    """The next message; ``SystemExit`` if a collector died without saying it is done."""
    while True:
        try:
            return q.get(timeout=POLL)
        except queue.Empty:
            for p in procs:
                if p.exitcode not in (None, 0):
                    raise SystemExit(f"{p.name} exited with status {p.exitcode}") from None


def _broadcast(agent: Any, queues: list[Queue[tuple[int, dict[str, Any]]]], version: int) -> None:
    """Offer the actor's weights to every collector (one waiting message each at most: a
    collector that has not taken the last one gets the next)."""
    state = {k: v.numpy() for k, v in agent.actor_state().items()}
    for q in queues:
        with contextlib.suppress(queue.Full):
            q.put_nowait((version, state))


def main(argv: list[str] | None = None) -> int:
    p = build_parser(NAME, __doc__)
    p.add_argument("--collectors", type=int, default=2, help="collector processes (1-16)")
    p.add_argument("--chunk", type=int, default=50, help="transitions per message")
    p.add_argument("--sync-every", type=int, default=100, help="updates between weight syncs")
    args = p.parse_args(argv)
    if not 1 <= args.collectors <= 16:
        p.error("--collectors must be 1..16")
    if args.chunk < 1 or args.sync_every < 1:
        p.error("--chunk and --sync-every must be >= 1")
    started = perf_counter()
    s = setup(args)
    s.env.close()  # the learner steps no environment; it only needed the spaces
    agent, buffer, n = s.agent, s.buffer, args.collectors
    stats = EpisodeStats()  # the collectors' episodes, as the learner hears of them

    kw = logger_kwargs(args, s, "SAC")
    kw["num_envs"] = n
    log = OffPolicyLogger(**kw)
    log.start(status=f"Starting {n} collectors...")
    ctx = mp.get_context("spawn")  # never plain fork: this process has threads
    transitions: Queue[Any] = ctx.Queue(maxsize=2 * n)  # bounded: collectors wait for us
    weights: list[Queue[tuple[int, dict[str, Any]]]] = [ctx.Queue(maxsize=1) for _ in range(n)]
    stop = ctx.Event()
    version = 0
    _broadcast(agent, weights, version)
    procs: list[BaseProcess] = []
    for k in range(n):
        cfg = CollectorConfig(
            index=k,
            steps=args.total_steps // n + (k < args.total_steps % n),
            random_steps=-(-args.learning_starts // n),
            chunk=args.chunk,
            hidden=args.hidden,
            seed=args.seed,
        )
        remote = log.remote(f"collector{k}")
        procs.append(
            ctx.Process(
                target=collect,
                args=(cfg, remote, transitions, weights[k], stop),
                name=f"collector{k}",
                daemon=True,
            )
        )
    reports: dict[int, RemoteReport] = {}
    try:
        for proc in procs:
            proc.start()
        received, waited, synced = 0, 0.0, 0.0
        while True:
            if agent.updates >= received - args.learning_starts:
                # caught up: one update per transition received, so take more
                if len(reports) == n:
                    break
                t0 = perf_counter()
                msg = _receive(transitions, procs)
                waited += perf_counter() - t0
                if msg[0] == "done":
                    reports[msg[1]] = msg[2]
                    continue
                _, obs, act, rew, next_obs, term, returns = msg
                for i in range(len(rew)):
                    buffer.add(obs[i], act[i], float(rew[i]), next_obs[i], bool(term[i]))
                for ret in returns:  # for the closing line; the collectors log their own
                    stats.returns.append(ret)
                    stats.episodes += 1
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

            # -- one gradient update ------------------------------------------------------
            t4 = perf_counter()
            metrics = agent.update(buffer.sample(s.rng, args.batch_size))
            t5 = perf_counter()
            log.log_step(
                iteration=agent.updates,
                metrics=metrics,
                train_time=t5 - t4,
                wait_time=waited,  # waiting for transitions since the last update
                weight_sync_time=synced,
                extra_info={"throughput_steps": 1},
            )
            waited, synced = 0.0, 0.0
            if agent.updates % args.sync_every == 0:
                version += 1
                _broadcast(agent, weights, version)
                synced = perf_counter() - t5
        log.log_save(agent.save(os.path.join(args.logdir, "sac_pendulum.pt")))
    finally:
        stop.set()
        for proc in procs:
            if proc.pid is not None:
                proc.join(timeout=10)
                if proc.exitcode is None:
                    proc.terminate()
                    proc.join()
        for q in weights:  # a weight message nobody took must not hold up our exit
            q.cancel_join_thread()
        log.finish(
            extra_summary=f"Mean return (last {len(stats.returns)} episodes): "
            f"{stats.mean_return():.1f}"
        )
    for k in sorted(reports):
        r = reports[k]
        print(f"collector{k}: {r.sent:,} events sent, {r.dropped} dropped")
    print(result_line(NAME, args, stats, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
