"""``aoff.gymnasium.log_episodes``: real Gymnasium envs in ``RecordEpisodeStatistics``.

What the run holds is compared with the wrapper's own record of the same episodes (its
``return_queue``/``length_queue``), read back from the JSONL file and with TensorBoard's
reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aoff.gymnasium
from aoff import AsyncOffPolicyLogger, OffPolicyLogger

from .conftest import read_jsonl, read_tensorboard

gym = pytest.importorskip("gymnasium")

STEPS_PER_RECORD = 40


def logger(log_dir: Path, **kw: Any) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=str(log_dir),
        log_backend="tensorboard",
        backends=("jsonl",),
        pump="thread",
        handle_sigterm=False,
        system_interval=0,
        **kw,
    )


def play(env: Any, log: Any, steps: int, n_envs: int = 0) -> list[tuple[float, float, int]]:
    """Random actions; one ``log_step`` per ``STEPS_PER_RECORD`` env steps. Returns, per
    record, the mean return and length of the episodes the wrapper saw end in it."""
    env.reset(seed=0)
    env.action_space.seed(0)
    seen = 0
    expected: list[tuple[float, float, int]] = []
    for t in range(1, steps + 1):
        _, _, terminated, truncated, infos = env.step(env.action_space.sample())
        aoff.gymnasium.log_episodes(log, infos)
        if not n_envs and (terminated or truncated):
            env.reset()
        if t % STEPS_PER_RECORD == 0:
            returns = list(env.return_queue)[seen:]
            lengths = list(env.length_queue)[seen:]
            seen += len(returns)
            if returns:
                expected.append((float(np.mean(returns)), float(np.mean(lengths)), len(returns)))
            log.log_step(t // STEPS_PER_RECORD)
    return expected


def check(rows: list[dict[str, Any]], expected: list[tuple[float, float, int]]) -> None:
    got = [
        (r["episode/return"], r["episode/length"], int(r["episode/count"]))
        for r in rows
        if "episode/return" in r
    ]
    assert len(got) == len(expected) >= 3
    for (r, length, n), (er, el, en) in zip(got, expected, strict=True):
        assert (r, length, n) == (pytest.approx(er), pytest.approx(el), en)


def test_single_env(tmp_path: Path) -> None:
    env = gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"), buffer_length=1000)
    log = logger(tmp_path)
    expected = play(env, log, 400)
    report = log.finish()
    assert report.complete and not report.invalid_values
    check(read_jsonl(tmp_path / "metrics.jsonl"), expected)
    tb = read_tensorboard(tmp_path)
    assert [v for _, v in tb["episode/return"]] == pytest.approx([e[0] for e in expected])
    assert "episode/count" in tb and "episode/length" in tb


def test_vector_env_and_a_remote_collector(tmp_path: Path) -> None:
    """Gymnasium 1.x vector layout (arrays and the ``_episode`` mask), logged by a
    ``RemoteLogger`` as a collector would: its episodes are the run's."""
    envs = gym.wrappers.vector.RecordEpisodeStatistics(
        gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 3), buffer_length=1000
    )
    log = logger(tmp_path)
    remote = log.remote("collector")

    class Both:  # the collector logs episodes; the learner logs steps
        def log_episodes(self, returns: Any, lengths: Any) -> None:
            remote.log_episodes(returns, lengths)

        def log_step(self, it: int) -> None:
            remote.flush()  # the collector's episodes are in before the learner's step
            log.log_step(it)

    expected = play(envs, Both(), 200, n_envs=3)
    remote.close()
    assert log.finish().complete
    check(read_jsonl(tmp_path / "metrics.jsonl"), expected)


@pytest.mark.anyio
async def test_async_face(tmp_path: Path) -> None:
    async with AsyncOffPolicyLogger(
        log_dir=str(tmp_path), log_backend="none", backends=("jsonl",), system_interval=0
    ) as log:
        # a step with no episode ended records nothing, and is awaitable like any call
        await aoff.gymnasium.log_episodes(log, {})
        infos = {
            "episode": {"r": np.array([1.0, 9.0, 3.0]), "l": np.array([10, 0, 30])},
            "_episode": np.array([True, False, True]),
        }
        await aoff.gymnasium.log_episodes(log, infos)
        await log.log_step(1)
    rows = read_jsonl(tmp_path / "metrics.jsonl")
    assert rows[0]["episode/return"] == 2.0 and rows[0]["episode/length"] == 20.0
    assert rows[0]["episode/count"] == 2.0


def test_layouts_and_bad_input() -> None:
    single = {"episode": {"r": np.float64(5.0), "l": np.int32(7), "t": 0.1}}
    assert [a.tolist() for a in aoff.gymnasium.episodes_in(single)] == [[5.0], [7.0]]
    old = {  # Gymnasium 0.29's vector layout
        "final_info": np.array([None, {"episode": {"r": [2.0], "l": [4]}}], dtype=object),
        "_final_info": np.array([False, True]),
    }
    assert [a.tolist() for a in aoff.gymnasium.episodes_in(old)] == [[2.0], [4.0]]
    with pytest.raises(TypeError, match="infos must be the dict"):
        aoff.gymnasium.episodes_in([1.0])  # type: ignore[arg-type]
    log = OffPolicyLogger(log_backend="none", pump="thread", handle_sigterm=False)
    with pytest.raises(TypeError, match="expected a sequence of numbers, got float"):
        log.log_episodes(1.0)  # type: ignore[arg-type]
    log.log_episodes(["x", 2.0])
    assert log.finish().invalid_values == 1
