"""A training run that tests/test_attach.py watches with ``aoff attach``.

Run as ``python attach_child.py LOG_DIR [--seconds S] [--pump process|thread]``: the sync
face logs a step about every 20 ms into ``LOG_DIR`` (JSON Lines) for ``S`` seconds (a
file ``LOG_DIR/stop`` ends it sooner), then finishes and writes the number of steps it
logged to ``LOG_DIR/logged.txt``. Its stdout is meant to be a file, as under nohup.
"""

from __future__ import annotations

import argparse
import os
import time

from aoff import OffPolicyLogger


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("log_dir")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--pump", choices=["process", "thread"], default="process")
    args = p.parse_args()
    log = OffPolicyLogger(
        algo_name="SAC",
        env_name="AttachEnv-v0",
        max_iterations=100_000,
        log_dir=args.log_dir,
        log_backend="none",
        backends=("jsonl",),
        pump=args.pump,
    )
    log.start()
    stop = os.path.join(args.log_dir, "stop")
    deadline = time.monotonic() + args.seconds
    i = 0
    while time.monotonic() < deadline and not os.path.exists(stop):
        i += 1
        log.log_collector(i * 64, min(i * 64, 10_000))
        log.log_step(i, {"loss": 1.0 / i}, reward=float(i))
        time.sleep(0.02)  # a training step takes time (a pace, not a wait)
    log.finish()
    with open(os.path.join(args.log_dir, "logged.txt"), "w", encoding="utf-8") as f:
        f.write(f"{i}\n")


if __name__ == "__main__":
    main()
