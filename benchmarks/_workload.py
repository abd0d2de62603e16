"""The benchmarks' shared workload: one off-policy iteration of a SAC/TD3 loop.

One iteration is the 4 logging calls such a loop makes, ~30 scalars in all:

* ``update_collector_timing(TIMING)`` — 5 collector timings (ms)
* ``update_done_rates(TIMEOUT_RATE, TERMINATED_RATE)``
* ``log_collector(total_steps, BUFFER_SIZE, REWARD)`` — env-step totals
* ``log_step(i, METRICS, reward=REWARD, reward_components=COMPONENTS, train_time=...,
  wait_time=..., extra_info=EXTRA)`` — 12 metrics, a reward, 4 reward components

:func:`seed_scalars` is the record the seed logger writes for iteration ``i`` of this
workload (32 scalars, in the seed's order), for the contenders that take a finished dict
(``SummaryWriter`` alone, ``wandb.log``); :data:`EXPECTED_TAGS` is what every contender's
output must contain for every step. Imported by script path (``benchmarks/`` is the
script's directory), so it has no package and no dependency beyond the standard library.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Sequence
from typing import Any

METRICS: dict[str, float] = {
    "q1_loss": 0.52,
    "q2_loss": 0.49,
    "actor_loss": -12.3,
    "alpha_loss": 0.01,
    "alpha": 0.2,
    "entropy": 1.3,
    "q1_mean": 45.0,
    "q2_mean": 44.8,
    "target_q": 44.0,
    "grad_norm_actor": 0.8,
    "grad_norm_critic": 2.1,
    "lr": 3e-4,
}
COMPONENTS: dict[str, float] = {"forward": 1.2, "ctrl": -0.05, "alive": 1.0, "contact": -0.01}
TIMING: dict[str, float] = {
    "weight_sync_ms": 0.3,
    "action_select_ms": 0.8,
    "env_step_ms": 2.5,
    "replay_ms": 0.4,
    "sync_coordination_ms": 0.1,
}
EXTRA: dict[str, int] = {"throughput_steps": 4096}

REWARD = -120.5
TRAIN_TIME = 0.004  # seconds, as log_step takes them
WAIT_TIME = 0.0002
TIMEOUT_RATE = 0.01
TERMINATED_RATE = 0.002
BUFFER_SIZE = 1_000_000
ENV_STEPS_PER_ITERATION = 4096


def total_steps(i: int) -> int:
    """What iteration ``i`` passes to ``log_collector`` as the env-step total."""
    return i * ENV_STEPS_PER_ITERATION


def iterate(log: Any, start: int, n: int, samples: list[int] | None = None) -> None:
    """``n`` standard iterations (the 4 calls) on ``log`` from iteration ``start``; each
    timed into ``samples`` (ns) when given."""
    clock = time.perf_counter_ns
    for i in range(start, start + n):
        t0 = clock() if samples is not None else 0
        log.update_collector_timing(TIMING)
        log.update_done_rates(TIMEOUT_RATE, TERMINATED_RATE)
        log.log_collector(total_steps(i), BUFFER_SIZE, REWARD)
        log.log_step(
            i,
            METRICS,
            reward=REWARD,
            reward_components=COMPONENTS,
            train_time=TRAIN_TIME,
            wait_time=WAIT_TIME,
            extra_info=EXTRA,
        )
        if samples is not None:
            samples.append(clock() - t0)


def step_of(i: int) -> int:
    """The step the seed writes iteration ``i`` at: total env steps if > 0, else ``i``."""
    t = total_steps(i)
    return t if t > 0 else i


def _static_tail() -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = [
        (k if "/" in k else "train/" + k, v) for k, v in METRICS.items()
    ]
    out.append(("reward/mean", REWARD))
    out += [(k if k.startswith("reward/") else "reward/" + k, v) for k, v in COMPONENTS.items()]
    out += [
        ("episode/timeout_rate", TIMEOUT_RATE),
        ("episode/terminated_rate", TERMINATED_RATE),
        ("timing/learner_wait_ms", WAIT_TIME * 1000),
        ("timing/learner_incremental_h2d_ms", 0.0),
        ("timing/learner_train_ms", TRAIN_TIME * 1000),
        ("timing/learner_weight_sync_ms", 0.0),
    ]
    out += [("timing/collector_" + k, v) for k, v in TIMING.items()]
    out.append(("perf/steps_per_sec", EXTRA["throughput_steps"] / TRAIN_TIME))
    out.append(("perf/iter_ms", TRAIN_TIME * 1000))
    return out


_TAIL = _static_tail()


def seed_scalars(i: int) -> list[tuple[str, float]]:
    """The ``(tag, value)`` pairs the seed logger writes for iteration ``i``, in order."""
    return [("axis/iteration", float(i)), ("axis/env_steps_total", float(step_of(i))), *_TAIL]


EXPECTED_TAGS: tuple[str, ...] = tuple(tag for tag, _ in seed_scalars(0))


def percentiles_us(samples_ns: Sequence[int]) -> dict[str, float]:
    """Median, p99 and p99.9 of per-iteration samples (ns in, µs out; nearest rank)."""
    s = sorted(samples_ns)
    n = len(s)
    if n == 0:
        return {"median_us": float("nan"), "p99_us": float("nan"), "p999_us": float("nan")}
    return {
        "median_us": statistics.median(s) / 1000,
        "p99_us": s[min(n - 1, int(n * 0.99))] / 1000,
        "p999_us": s[min(n - 1, int(n * 0.999))] / 1000,
    }


def run_threads(threads: Sequence[threading.Thread]) -> float:
    """Start ``threads``, wait for them all; the seconds from the first start."""
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t0
