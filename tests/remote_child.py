"""Targets for the producer processes of tests/test_remote.py (spawned: importable)."""

from __future__ import annotations

import time
from typing import Any


def collector(remote: Any, steps: int) -> None:
    """Log ``steps`` iterations as a collector would, then close."""
    for i in range(1, steps + 1):
        remote.log_collector(total_steps=i * 10, buffer_size=i, mean_reward=float(i))
        remote.update_collector_timing({"env_step_ms": 2.0})
        remote.log_step(i, {"x": float(i)})
    report = remote.close()
    assert report.complete, report


def forever(remote: Any, ready: Any) -> None:
    """Log slowly until killed; ``ready`` is set once the run has its first steps."""
    i = 0
    while True:
        i += 1
        remote.log_step(i, {"x": float(i)})
        if i == 5:
            remote.flush()
            ready.set()
        time.sleep(0.01)  # log slowly (a pace, not a wait) until the test kills it


def nan_collector(remote: Any, steps: int, nan_at: int) -> None:
    """Log ``steps`` iterations whose ``x`` is NaN from ``nan_at`` on, then close."""
    for i in range(1, steps + 1):
        remote.log_step(i, {"x": float("nan") if i >= nan_at else float(i)})
    report = remote.close()
    assert report.complete, report
