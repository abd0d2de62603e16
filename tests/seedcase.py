"""A hand-written call sequence and the exact records the seed logger would write for it.

The expected records below are written out by hand from ``seed-behaviour.md`` (not
computed by aoff's code), so the tests that use them check aoff against the spec.
"""

from __future__ import annotations

from typing import Any

# (method name, args, kwargs) — the same sequence is replayed on every face.
CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("update_collector_timing", ({"env_step_ms": 2.0, "action_select_ms": 0.5},), {}),
    ("update_done_rates", (0.1, 0.05), {}),
    (
        "log_step",
        (1,),
        {
            # the legacy alias "entropy" is dropped: "policy/entropy" is present
            "metrics": {"q_loss": 1.5, "loss/actor": -2.0, "entropy": 0.3, "policy/entropy": 0.4},
            "train_time": 0.002,
        },
    ),
    ("log_collector", (4096, 10_000), {"mean_reward": -5.0}),
    ("update_ep_length", (200.0,), {}),
    ("update_collector_timing", ({"env_step_ms": 3.0, "replay_ms": 1.0},), {}),
    (
        "log_step",
        (2,),
        {
            "metrics": {"q_loss": 1.0},
            "reward": -4.0,
            "reward_metrics": {"reward/success": 0.5, "dist": 1.25},
            "reward_components": {"ctrl": -0.125, "reward/alive": 1.0},
            "train_time": 0.004,
            "wait_time": 0.001,
            "learner_incremental_h2d_time": 0.0005,
            "weight_sync_time": 0.0005,
            "extra_info": {"throughput_steps": 4096},
        },
    ),
    ("log_step", (3,), {"extra_info": {}}),  # throughput "known" but 0: no steps/sec
]

EXPECTED: list[tuple[int, list[tuple[str, float]]]] = [
    (
        1,  # total_steps is still 0, so the step is the iteration
        [
            ("axis/iteration", 1.0),
            ("axis/env_steps_total", 1.0),
            ("train/q_loss", 1.5),
            ("loss/actor", -2.0),
            ("policy/entropy", 0.4),
            ("episode/timeout_rate", 0.1),
            ("episode/terminated_rate", 0.05),
            ("timing/learner_wait_ms", 0.0),
            ("timing/learner_incremental_h2d_ms", 0.0),
            ("timing/learner_train_ms", 2.0),
            ("timing/learner_weight_sync_ms", 0.0),
            ("timing/collector_env_step_ms", 2.0),
            ("timing/collector_action_select_ms", 0.5),
            ("perf/iter_ms", 2.0),
        ],
    ),
    (
        4096,
        [
            ("axis/iteration", 2.0),
            ("axis/env_steps_total", 4096.0),
            ("train/q_loss", 1.0),
            ("reward/mean", -4.0),
            ("reward/success", 0.5),
            ("reward/dist", 1.25),
            ("reward/ctrl", -0.125),
            ("reward/alive", 1.0),
            ("episode/length", 200.0),
            ("episode/timeout_rate", 0.1),
            ("episode/terminated_rate", 0.05),
            ("timing/learner_wait_ms", 1.0),
            ("timing/learner_incremental_h2d_ms", 0.5),
            ("timing/learner_train_ms", 4.0),
            ("timing/learner_weight_sync_ms", 0.5),
            ("timing/collector_env_step_ms", 3.0),
            ("timing/collector_action_select_ms", 0.5),
            ("timing/collector_replay_ms", 1.0),
            ("perf/steps_per_sec", 4096 / 0.005),
            ("perf/iter_ms", 5.0),
        ],
    ),
    (
        4096,
        [
            ("axis/iteration", 3.0),
            ("axis/env_steps_total", 4096.0),
            ("episode/length", 200.0),
            ("episode/timeout_rate", 0.1),
            ("episode/terminated_rate", 0.05),
            ("timing/learner_wait_ms", 0.0),
            ("timing/learner_incremental_h2d_ms", 0.0),
            ("timing/learner_train_ms", 0.0),
            ("timing/learner_weight_sync_ms", 0.0),
            ("timing/collector_env_step_ms", 3.0),
            ("timing/collector_action_select_ms", 0.5),
            ("timing/collector_replay_ms", 1.0),
            ("perf/iter_ms", 0.0),
        ],
    ),
]


def thread_expected(thread: int, i: int) -> tuple[int, list[tuple[str, float]]]:
    """What one ``log_step`` of the multi-thread test must produce (no shared state set)."""
    iteration = thread * 1_000_000 + i + 1
    return (
        iteration,
        [
            ("axis/iteration", float(iteration)),
            ("axis/env_steps_total", float(iteration)),
            (f"train/t{thread}_loss", float(i)),
            (f"reward/t{thread}_part", -float(i)),
            ("episode/timeout_rate", 0.0),
            ("episode/terminated_rate", 0.0),
            ("timing/learner_wait_ms", 0.0),
            ("timing/learner_incremental_h2d_ms", 0.0),
            ("timing/learner_train_ms", 0.0),
            ("timing/learner_weight_sync_ms", 0.0),
            ("perf/iter_ms", 0.0),
        ],
    )


def thread_call(log: Any, thread: int, i: int) -> Any:
    return log.log_step(
        thread * 1_000_000 + i + 1,
        {f"t{thread}_loss": float(i)},
        reward_components={f"t{thread}_part": -float(i)},
    )


def assert_records_equal(records: Any, expected: list[tuple[int, list[tuple[str, float]]]]) -> None:
    import pytest

    got = [(r.step, [t for t, _ in r.scalars], [v for _, v in r.scalars]) for r in records]
    want = [(s, [t for t, _ in sc], [v for _, v in sc]) for s, sc in expected]
    assert len(got) == len(want)
    for (gs, gt, gv), (ws, wt, wv) in zip(got, want, strict=True):
        assert (gs, gt) == (ws, wt)
        assert gv == pytest.approx(wv, rel=1e-12, abs=1e-12)
