"""``state_dict()`` / ``load_state_dict()``: aoff's own counters survive a restart.

A resumed run keeps its clock (the ETA counts training time across sessions, downtime
excluded), its reward history and best mean reward, and the dashboard's dropped total.
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path
from typing import Any

import pytest

from aoff import AsyncOffPolicyLogger, OffPolicyLogger
from aoff._core._checkpoint import checked_state_dict, load_into, to_state_dict
from aoff._core._records import RunConfig
from aoff._core._state import State
from aoff._display._content import eta_seconds, header_fields
from aoff.testing import ManualClock


def _run(log: OffPolicyLogger, first: int, last: int) -> None:
    for i in range(first, last + 1):
        log.log_step(i, {"loss": 1.0}, reward=float(i))


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_counters_carry_over_to_the_next_session(tmp_path: Path, pump: str) -> None:
    kw: dict[str, Any] = dict(
        log_dir=tmp_path, log_backend="none", backends=("jsonl",), handle_sigterm=False
    )
    log = OffPolicyLogger(pump=pump, **kw)  # type: ignore[arg-type]
    log.start()
    log.start_training_timer()
    _run(log, 1, 10)
    d = log.state_dict()  # flushes first: all 10 steps are in it
    assert d["version"] == 1
    assert d["reward_history"] == [float(i) for i in range(1, 11)]
    assert d["reward_best"] == 10.0 and d["reward_last"] == 10.0
    assert d["dropped_events"] == 0 and d["elapsed_seconds"] >= 0
    assert json.loads(json.dumps(d)) == d and pickle.loads(pickle.dumps(d)) == d
    log.finish()
    after = log.state_dict()  # after finish: the final counters, no error
    assert after["reward_history"] == d["reward_history"]

    d = {**d, "elapsed_seconds": 3600.0, "dropped_events": 7}
    log2 = OffPolicyLogger(pump=pump, resume_step=10, **kw)  # type: ignore[arg-type]
    log2.load_state_dict(d)
    log2.start()
    _run(log2, 11, 12)
    d2 = log2.state_dict()
    assert d2["reward_history"] == [float(i) for i in range(1, 13)]
    assert d2["reward_best"] == 12.0
    assert d2["elapsed_seconds"] >= 3600.0  # the first session's hour goes on
    assert d2["dropped_events"] == 7  # the run's total; this session dropped nothing
    report = log2.finish()
    assert report.dropped_events == 0  # a session's report counts its own only


def test_eta_and_clock_count_the_earlier_sessions() -> None:
    s = State(config=RunConfig(max_iterations=1000))
    load_into(s, checked_state_dict(_valid(elapsed_seconds=500.0)))
    s.start_time = s.training_start_time = 10_000.0
    s.iteration = 500  # resumed at 500; 100 s of this session so far
    eta = eta_seconds(s, 10_100.0)
    assert eta is not None and math.isclose(eta, 500 * 600.0 / 500)
    text = "".join(t for c in header_fields(s, 10_100.0) for t, _ in c.spans)
    assert "10m00s" in text, text  # 500 s before + 100 s of this session


def test_state_dict_is_taken_where_the_fold_runs() -> None:
    s = State()
    s.start_time = 100.0
    s.reward_history.extend([1.0, 2.0])
    s.dropped_before = 2
    d = to_state_dict(s, 160.0, dropped=1)
    assert d["elapsed_seconds"] == 60.0 and d["reward_history"] == [1.0, 2.0]
    assert d["dropped_events"] == 3


def _valid(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "version": 1,
        "elapsed_seconds": 1.0,
        "reward_history": [1.0],
        "reward_last": 1.0,
        "reward_best": None,
        "dropped_events": 0,
    }
    d.update(over)
    return d


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        ([1, 2], TypeError, "expected a dict from state_dict"),
        ({"version": 1}, ValueError, "not a dict from aoff's state_dict"),
        (_valid(version=99), ValueError, "version 99"),
        (_valid(elapsed_seconds=-1), ValueError, "must be >= 0"),
        (_valid(elapsed_seconds=float("nan")), ValueError, "finite number"),
        (_valid(reward_history="abc"), ValueError, "must be a list"),
        (_valid(reward_history=[1.0, "x"]), ValueError, "finite number"),
        (_valid(dropped_events=True), ValueError, "int >= 0"),
        (_valid(reward_best="high"), ValueError, "'reward_best'"),
    ],
)
def test_bad_state_dict_is_a_clear_error_at_the_call(bad: object, error: type, match: str) -> None:
    log = OffPolicyLogger(log_backend="none", pump="thread", handle_sigterm=False)
    try:
        with pytest.raises(error, match=match):
            log.load_state_dict(bad)  # type: ignore[arg-type]
    finally:
        log.close()


@pytest.mark.anyio
@pytest.mark.parametrize("pump", ["thread", "process"])
async def test_async_face_twin(tmp_path: Path, pump: str) -> None:
    async with AsyncOffPolicyLogger(
        log_dir=tmp_path,
        log_backend="none",
        backends=("jsonl",),
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
    ) as log:
        await log.load_state_dict(_valid(reward_history=[5.0], reward_best=5.0))
        await log.log_step(1, {"x": 1.0}, reward=2.0)
        d = await log.astate_dict()
        assert d["reward_history"] == [5.0, 2.0] and d["reward_best"] == 5.0
        with pytest.raises(TypeError, match=r"await log\.astate_dict\(\)"):
            log.state_dict()


@pytest.mark.anyio
async def test_sync_face_names_its_own_twin() -> None:
    log = OffPolicyLogger(log_backend="none", pump="thread", handle_sigterm=False)
    try:
        with pytest.raises(AttributeError, match=r"use state_dict\(\)"):
            await log.astate_dict()
    finally:
        log.close()


def test_manual_clock_elapsed(tmp_path: Path) -> None:
    clock = ManualClock()
    log = OffPolicyLogger(log_backend="none", clock=clock, handle_sigterm=False)
    log.start()
    log.start_training_timer()
    clock.advance(30.0)
    log.log_step(1, {"x": 1.0})
    assert log.state_dict()["elapsed_seconds"] == 30.0
    log.close()
