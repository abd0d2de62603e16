"""A training process for the resume tests (``tests/test_resume.py``).

``python -m tests.resume_child LOG_DIR FIRST LAST RESUME_STEP PUMP [hang]``: logs steps
FIRST..LAST (step = iteration) to TensorBoard, JSONL and CSV in LOG_DIR, with
``resume_step=RESUME_STEP`` unless it is ``-1``. With ``hang`` it then waits to be killed
(the preemption); without, it finishes the run.
"""

from __future__ import annotations

import sys
import time

from aoff import OffPolicyLogger


def main() -> None:
    log_dir, first, last, resume, pump = sys.argv[1:6]
    hang = sys.argv[6:] == ["hang"]
    log = OffPolicyLogger(
        "SAC",
        1000,
        8,
        "Pendulum-v1",
        log_dir=log_dir,
        log_backend="none",
        backends=("tensorboard", "jsonl", "csv"),
        pump=pump,  # type: ignore[arg-type]
        config={"lr": 3e-4, "seed": 1},
        resume_step=None if resume == "-1" else int(resume),
    )
    for i in range(int(first), int(last) + 1):
        log.log_step(i, {"critic_loss": 1.0 / i}, reward=float(i % 97))
    if hang:
        log.flush()
        while True:
            time.sleep(1)  # hang on purpose until the test kills the process
    log.finish()


if __name__ == "__main__":
    main()
