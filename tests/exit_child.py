"""A training loop that tests/test_exits.py runs in a child process and then ends.

``python exit_child.py MODE LOG_DIR`` logs TensorBoard (into LOG_DIR) and JSONL
(LOG_DIR/metrics.jsonl) through the sync face, never calling ``finish()``:

``return``      log 300 iterations, then fall off the end of the script
``raise``       log 300 iterations, then let a ``RuntimeError`` escape
``forever``     log until a signal ends the process (SIGINT, SIGTERM, SIGKILL)
``idle``        log 300 iterations, then sleep until killed

After each ``log_step`` returns, ``LOG_DIR/progress.txt`` gets the iteration (one line,
flushed): the parent waits on it before it sends a signal. In ``forever`` mode a
``finally`` writes how many ``log_step`` calls had returned to ``LOG_DIR/count.txt``
(a signal may land between a call and the count, so the output may hold one more).
"""

from __future__ import annotations

import os
import signal
import sys
import time

from aoff import OffPolicyLogger

N = 300


def main() -> None:
    mode, log_dir = sys.argv[1], sys.argv[2]
    # pytest (or a CI shell) may run us with SIGINT ignored; a training script has the default
    signal.signal(signal.SIGINT, signal.default_int_handler)
    log = OffPolicyLogger(
        algo_name="EXIT",
        log_dir=log_dir,
        backends=("jsonl",),
        flush_secs=0.5,
        refresh_per_second=2,
    )
    log.start()
    progress = open(os.path.join(log_dir, "progress.txt"), "a", encoding="utf-8")  # noqa: SIM115
    metrics = {"critic_loss": 0.5, "actor_loss": -2.0, "nan_metric": float("nan")}
    i = 0
    try:
        while mode == "forever" or i < N:
            log.log_step(i + 1, metrics, reward=-1.0, train_time=0.001)
            i += 1
            progress.write(f"{i}\n")
            progress.flush()
            if i % 20 == 0:
                time.sleep(0.002)  # a training step takes time
    finally:
        if mode == "forever":
            with open(os.path.join(log_dir, "count.txt"), "w", encoding="utf-8") as f:
                f.write(str(i))
    if mode == "raise":
        raise RuntimeError("training blew up")
    if mode == "idle":
        while True:
            time.sleep(1)  # idle on purpose until the test's signal ends the process


if __name__ == "__main__":
    main()
