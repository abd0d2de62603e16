"""A run whose dashboard is as tall as a dashboard gets, for tests/test_terminal_fit.py.

Run as ``python fit_child.py DOOR LOG_DIR [SECONDS ITERATIONS]``: ``logger`` is the
sync face (thread mode), 200 iterations or 30 s by default,
with many metrics, nested collector timings, a NaN that raises an alert (the banner
above the panel) and the logger's cost (the footer under it) from its first second;
``sb3`` is a real, tiny Stable-Baselines3 PPO run logging through ``aoff.sb3``;
``names`` logs two metrics whose names are too long for their column. The
cost's interval is shortened here (5 s in a run) so the footer shows within a second.
A file ``LOG_DIR/stop`` ends the ``logger`` run early (``aoff attach`` tests).
"""

from __future__ import annotations

import math
import os
import sys
import time

from aoff._pump import _cost

_cost.COST_INTERVAL = 0.3  # the footer within a second, not five


def logger(log_dir: str, seconds: float, iterations: int) -> None:
    from aoff import OffPolicyLogger, rules

    log = OffPolicyLogger(
        "SAC",
        200,
        num_envs=16,
        env_name="Fit-v0",
        log_dir=log_dir,
        log_backend="none",
        backends=("jsonl",),
        pump="thread",
        rules=[rules.nonfinite()],
    )
    log.start()
    stop = os.path.join(log_dir, "stop")
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline and not os.path.exists(stop) and i < iterations:
        i += 1
        log.update_collector_timing(
            {"env_step": 3.0, "env_step/backend_ms": 2.5, "env_step/reset_done_ms": 0.3,
             "replay": 0.5, "action_select": 0.9, "weight_sync": 0.2}
        )  # fmt: skip
        log.log_collector(i * 64, min(i * 64, 10_000))
        metrics = {f"loss/q{k}_loss": 1.0 / i + k for k in range(4)}
        metrics.update({f"stat_{k}": float(k * i) for k in range(8)})
        metrics["stat_0"] = math.nan if i == 5 else 0.0  # the banner
        log.log_step(i, metrics, reward=float(i), reward_components={"a": 1.0, "b": -1.0},
                     extra_info={"throughput_steps": 64}, train_time=0.01)  # fmt: skip
        time.sleep(0.015)  # a training step takes time (a pace, not a wait)
    log.finish()


#: metric names too long for their column at 80 columns, with spaces once title-cased
LONG_NAMES = ("critic/q_value_loss_of_the_first_network", "actor/entropy_temperature_alpha")


def names(log_dir: str) -> None:
    """Two long metric names and nothing else (the wide layout's room): each is cut with
    an ellipsis in its column, never wrapped at its spaces."""
    from aoff import OffPolicyLogger

    log = OffPolicyLogger("SAC", 40, log_dir=log_dir, log_backend="none", pump="thread")
    log.start()
    for i in range(1, 41):
        log.log_step(i, {name: 1.0 / i for name in LONG_NAMES})
        time.sleep(0.015)  # a training step takes time (a pace, not a wait)
    log.finish()


def sb3(log_dir: str) -> None:
    from stable_baselines3 import PPO

    import aoff.sb3

    logger = aoff.sb3.configure(log_dir, ["stdout"], pump="thread", algo_name="PPO")
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.set_logger(logger)
    model.learn(total_timesteps=64 * 6)
    logger.close()


if __name__ == "__main__":
    door, where = sys.argv[1], sys.argv[2]
    if door == "sb3":
        sb3(where)
    elif door == "names":
        names(where)
    else:
        seconds, iterations = (
            (float(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (30, 200)
        )
        logger(where, seconds, iterations)
