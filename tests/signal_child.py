"""A training script for ``test_signals.py``: logs N steps, says FINISHING, finishes."""

from __future__ import annotations

import signal
import sys

from aoff import OffPolicyLogger
from aoff._options import PumpMode


def main() -> None:
    run, n = sys.argv[1], int(sys.argv[3])
    mode: PumpMode = "process" if sys.argv[2] == "process" else "thread"
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in an interactive shell
    log = OffPolicyLogger(
        log_dir=run, backends=("jsonl",), pump=mode, overflow="block", log_backend="tensorboard"
    )
    for i in range(1, n + 1):
        log.log_step(i, {"x": float(i)})
    print("FINISHING", flush=True)
    report = log.finish()
    print("DONE", report.steps, flush=True)


if __name__ == "__main__":
    main()
