"""A short run through one of aoff's doors, none of which calls ``start()`` or ``with``;
tests/test_doors.py starts it in a child process, on a pty or piped.

Run as ``python door_child.py DOOR OUT_DIR [--seconds S]``:

``sync``
    ``OffPolicyLogger(...)``, ``log_step`` and ``finish()``: the README's ``wandb.log``
    switch (with ``log_backend="none"``: the door is the face, not the backend).
``sb3``
    ``aoff.sb3.configure(OUT_DIR, ["stdout"])`` driven by SB3's own ``Logger``
    (``record``/``dump``, the keys SB3's off-policy algorithms log).
``writer``
    ``aoff.tensorboard.SummaryWriter(OUT_DIR, dashboard=True)``: ``add_scalar`` calls.
``rsl_rl``
    ``aoff.rsl_rl.LogWriter(OUT_DIR)`` as rsl_rl builds it (its dashboard is on by
    default): ``store_config`` and the ``add_scalar`` calls of an iteration, ``stop()``.
``remote``
    an ``OffPolicyLogger`` that logs nothing itself while a spawned producer
    (``log.remote()``) logs steps into its run.

Each logs for ``--seconds`` (a pace of a few ms a call), then closes. After its first
call it flushes once: on a loaded machine the agent may start later than a short run
ends, and the test is about what the first call opens, not about that race.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from typing import Any

PACE = 0.005  # a training step takes time (a pace, not a wait)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("door", choices=["sync", "sb3", "writer", "rsl_rl", "remote"])
    p.add_argument("out")
    p.add_argument("--seconds", type=float, default=1.2)
    return p.parse_args()


def run_sync(args: argparse.Namespace) -> None:
    from aoff import OffPolicyLogger

    log = OffPolicyLogger("SACDOOR", 1000, log_backend="none", refresh_per_second=8)
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < args.seconds:
        i += 1
        log.log_step(i, {"q1_loss": 1.0 / i}, reward=-300.0 + i)
        if i == 1:
            log.flush()
        time.sleep(PACE)
    log.finish()


def run_sb3(args: argparse.Namespace) -> None:
    import aoff.sb3

    logger = aoff.sb3.configure(args.out, ["stdout"], refresh_per_second=8)
    t0 = time.monotonic()
    steps = 0
    while time.monotonic() - t0 < args.seconds:
        steps += 100
        logger.record("rollout/ep_rew_mean", -900.0 + steps / 100)
        logger.record("rollout/ep_len_mean", 200.0)
        logger.record("time/fps", 1234)
        logger.record("time/total_timesteps", steps, exclude="tensorboard")
        logger.record("train/actor_loss", 12.5)
        logger.record("train/critic_loss", 0.75)
        logger.record("train/ent_coef", 0.05)
        logger.dump(step=steps)
        if steps == 100:
            logger.aoff.flush()
        time.sleep(PACE)
    logger.close()


def run_writer(args: argparse.Namespace) -> None:
    from aoff.tensorboard import SummaryWriter

    writer = SummaryWriter(args.out, dashboard=True)
    t0 = time.monotonic()
    step = 0
    while time.monotonic() - t0 < args.seconds:
        step += 1
        writer.add_scalar("losses/qf1_loss", 0.5 / step, step)
        writer.add_scalar("charts/episodic_return", -200.0 + step, step)
        if step == 1:
            writer.flush()
        time.sleep(PACE)
    writer.close()


def run_rsl_rl(args: argparse.Namespace) -> None:
    from aoff.rsl_rl import LogWriter

    writer = LogWriter(log_dir=args.out)  # what rsl_rl's Logger builds from cfg["logger"]
    writer.store_config({"task": "door"}, {"num_steps_per_env": 24})
    t0 = time.monotonic()
    it = 0
    while time.monotonic() - t0 < args.seconds:
        writer.add_scalar("Loss/value", 0.5 / (it + 1), it)
        writer.add_scalar("Train/mean_reward", -200.0 + it, it)
        if it == 0:
            writer.flush()
        it += 1
        time.sleep(PACE)
    writer.stop()


def produce(remote: Any, seconds: float) -> None:
    """The producer: a spawned process logging into the run through its socket."""
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < seconds:
        i += 1
        remote.log_collector(total_steps=i * 64, buffer_size=i * 64, mean_reward=-50.0 + i)
        remote.log_step(i, {"q1_loss": 1.0 / i})
        if i == 1:
            remote.flush()
        time.sleep(PACE)
    remote.close()


def run_remote(args: argparse.Namespace) -> None:
    from aoff import OffPolicyLogger

    log = OffPolicyLogger(
        "SACDOOR", 1000, log_dir=args.out, log_backend="none", refresh_per_second=8
    )
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=produce, args=(log.remote("c0"), args.seconds))
    child.start()
    child.join(timeout=60)
    log.finish()


def main() -> None:
    args = parse()
    doors = {"sync": run_sync, "sb3": run_sb3, "writer": run_writer, "remote": run_remote}
    doors["rsl_rl"] = run_rsl_rl
    doors[args.door](args)
    print("door child done", flush=True)


if __name__ == "__main__":
    main()
