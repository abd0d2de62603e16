"""``aoff.torch.EpisodeStats`` (``_adapters/_episodes.py``) and per-env vectors in
``log_step`` (``_core/_vectors.py``, ``_core/_tensors.py``): values equal a host reference
computed afterwards, and the training thread never reads a tensor back."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from aoff._core._pending import PendingEvent, event_ready, resolve_event
from aoff.testing import MemoryBackend, wait_until
from aoff.torch import EpisodeStats

from .conftest import jsonl_agent_logger, make_async_logger, make_logger, read_jsonl

#: every way a tensor's value reaches Python (each one waits for a device)
_READS = ("item", "cpu", "tolist", "numpy", "to", "__float__", "__int__", "__bool__", "__index__")


@contextmanager
def no_tensor_reads_on_this_thread() -> Iterator[None]:
    """Each of :data:`_READS` raises when called on this thread (the training loop's);
    whoever drains the events (the pump's thread) may read."""
    me = threading.current_thread()
    originals = {name: getattr(torch.Tensor, name) for name in _READS}

    def guarded(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
        def read(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is me:
                raise AssertionError(f"Tensor.{name}() on the training thread")
            return f(self, *args, **kwargs)

        return read

    for name, f in originals.items():
        setattr(torch.Tensor, name, guarded(name, f))
    try:
        yield
    finally:
        for name, f in originals.items():
            setattr(torch.Tensor, name, f)


def steps(n_iters: int, n_steps: int, n_envs: int, seed: int = 0) -> list[list[Any]]:
    """Rewards and done flags, made before the loop (random numbers are not under test)."""
    g = torch.Generator().manual_seed(seed)
    return [
        [
            (
                torch.rand(n_envs, generator=g) - 0.25,
                torch.rand(n_envs, generator=g) < 0.2,
                torch.rand(n_envs, generator=g) < 0.1,
            )
            for _ in range(n_steps)
        ]
        for _ in range(n_iters)
    ]


def reference(data: list[list[Any]], n_envs: int) -> list[tuple[list[float], list[int]]]:
    """Each iteration's finished episodes (returns, lengths) in the order they ended,
    computed on the host with plain float32 sums, one environment at a time."""
    ret = [np.float32(0.0)] * n_envs
    length = [0] * n_envs
    out = []
    for it in data:
        returns: list[float] = []
        lengths: list[int] = []
        for rewards, term, trunc in it:
            r = rewards.numpy()
            d = (term | trunc).numpy()
            for e in range(n_envs):
                ret[e] = np.float32(ret[e] + r[e])
                length[e] += 1
                if d[e]:
                    returns.append(float(ret[e]))
                    lengths.append(length[e])
                    ret[e], length[e] = np.float32(0.0), 0
        out.append((returns, lengths))
    return out


def test_a_training_loop_reads_no_tensor_and_logs_the_host_reference() -> None:
    n_envs = 16
    data = steps(3, 7, n_envs)
    per_env = [torch.linspace(-1, 1, n_envs) * (i + 1) for i in range(3)]
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread")
    stats = EpisodeStats(n_envs)
    with no_tensor_reads_on_this_thread():
        with pytest.raises(AssertionError, match="training thread"):
            float(torch.tensor(1.0))  # the guard itself can fail
        for it, iteration in enumerate(data):
            for rewards, term, trunc in iteration:
                stats.update(rewards, term, trunc)
            stats.log_to(log)
            log.log_step(it, {"per_env": per_env[it]}, reward=per_env[it] + 1)  # type: ignore[arg-type]
    log.finish()
    assert len(mem.records) == 3
    for rec, (returns, lengths), vec in zip(
        mem.records, reference(data, n_envs), per_env, strict=True
    ):
        d = rec.as_dict()
        assert returns  # the seed gives each iteration finished episodes
        assert d["episode/count"] == len(returns)
        assert d["episode/return"] == pytest.approx(sum(returns) / len(returns), rel=1e-12)
        assert d["episode/length"] == pytest.approx(sum(lengths) / len(lengths), rel=1e-12)
        hist = {h.tag: h for h in rec.histograms}
        h = hist["episode/returns"]
        assert (h.count, h.min, h.max) == (len(returns), min(returns), max(returns))
        v = vec.double().numpy()
        assert d["train/per_env"] == pytest.approx(v.mean(), rel=1e-9)
        assert d["train/per_env/envs/min"] == v.min()
        assert d["train/per_env/envs/max"] == v.max()
        assert d["reward/mean"] == pytest.approx((vec + 1).double().numpy().mean(), rel=1e-9)
        assert hist["reward/envs"].count == n_envs


def test_episodes_reach_the_run_in_the_order_they_ended() -> None:
    class Events:
        def __init__(self) -> None:
            self.events: list[Any] = []

        def _clock(self) -> float:
            return 0.0

        def _put(self, event: Any) -> None:
            self.events.append(event)

    n_envs = 5
    data = steps(2, 9, n_envs, seed=3)
    sink = Events()
    stats = EpisodeStats(n_envs)
    for iteration in data:
        for rewards, term, trunc in iteration:
            stats.update(rewards, term, trunc)
        stats.log_to(sink)
    got = []
    for e in sink.events[::2]:  # the EPISODES events (each has its histogram after it)
        assert type(e) is PendingEvent and event_ready(e)
        plain: Any = resolve_event(e)
        got.append((list(plain[2]), list(plain[3])))
    want = reference(data, n_envs)
    assert [lengths for _, lengths in got] == [lengths for _, lengths in want]
    for (returns, _), (ref, _) in zip(got, want, strict=True):
        assert returns == pytest.approx(ref, rel=1e-6)


def test_an_iteration_without_a_finished_episode_writes_no_episode_scalars() -> None:
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread")
    stats = EpisodeStats(3)
    stats.update(torch.ones(3), torch.zeros(3, dtype=torch.bool))
    stats.log_to(log)
    log.log_step(1)
    stats.update(torch.ones(3), torch.tensor([0, 1, 0]))  # numeric done flags: non-zero ends
    stats.log_to(log)
    log.log_step(2)
    log.finish()
    first, second = (r.as_dict() for r in mem.records)
    assert "episode/count" not in first and not mem.records[0].histograms
    assert (second["episode/count"], second["episode/return"], second["episode/length"]) == (
        1.0,
        2.0,
        2.0,
    )


def test_through_the_agent_process(tmp_path: Path) -> None:
    """The default pump: the copies travel to the agent, which reduces the vector."""
    log = jsonl_agent_logger(tmp_path)
    stats = EpisodeStats(4)
    stats.update(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([True, False, True, False]))
    stats.log_to(log)
    log.log_step(1, {"success": torch.tensor([1, 0, 1, 1])})
    log.finish()
    (row,) = [r for r in read_jsonl(tmp_path / "metrics.jsonl") if "train/success" in r]
    assert (row["episode/return"], row["episode/count"]) == (2.0, 2.0)
    assert (row["train/success"], row["train/success/envs/min"]) == (0.75, 0.0)


@pytest.mark.anyio
async def test_the_async_face() -> None:
    mem = MemoryBackend()
    stats = EpisodeStats(2)
    async with make_async_logger(mem) as log:
        stats.update(torch.tensor([0.5, 1.5]), torch.tensor([True, True]))
        await stats.log_to(log)
        await log.log_step(1, reward=torch.tensor([1.0, 3.0]))  # type: ignore[arg-type]
    d = mem.records[0].as_dict()
    assert (d["episode/return"], d["reward/mean"]) == (1.0, 2.0)


def test_vectors_are_the_value_at_the_call_of_any_real_dtype() -> None:
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread")
    floats = torch.tensor([1.0, 2.0], requires_grad=True) * 2
    ints = torch.tensor([[1, 2], [3, 6]])
    flags = torch.tensor([True, False, False, False])
    log.log_step(1, {"f": floats, "i": ints}, reward_components={"ok": flags})
    ints.add_(100)  # changed after the call: the logged value stays
    wait_until(lambda: bool(mem.records), what="the step's record")
    log.finish()
    d = mem.records[0].as_dict()
    assert (d["train/f"], d["train/i"], d["train/i/envs/max"], d["reward/ok"]) == (
        3.0,
        3.0,
        6.0,
        0.25,
    )


def test_vectors_are_refused_where_a_vector_means_nothing() -> None:
    log = make_logger(MemoryBackend(), pump="thread")
    try:
        with pytest.raises(ValueError, match=r"'train_time'.*shape \(2,\).*per-env vectors"):
            log.log_step(1, train_time=torch.zeros(2))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"'q'.*complex"):
            log.log_step(1, {"q": torch.zeros(2, dtype=torch.complex64)})
        with pytest.raises(ValueError, match=r"'q'.*shape \(0,\)"):
            log.log_step(1, {"q": torch.zeros(0)})
    finally:
        log.finish()


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="num_envs must be an int"):
        EpisodeStats(4.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_envs must be at least 1"):
        EpisodeStats(0)
    stats = EpisodeStats(3, max_steps=2)
    done = torch.zeros(3, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"rewards has shape \(4,\); expected 3"):
        stats.update(torch.zeros(4), done)
    with pytest.raises(TypeError, match="terminated must be a tensor"):
        stats.update(torch.zeros(3), [False] * 3)
    with pytest.raises(ValueError, match="truncated is on meta"):
        stats.update(torch.zeros(3), done, torch.zeros(3, device="meta"))
    stats.update(torch.zeros(3), done)
    stats.update(torch.zeros(3, 1), done.reshape(3, 1))  # (num_envs, 1) is one per env too
    with pytest.raises(RuntimeError, match=r"2 env steps recorded since the last log_to"):
        stats.update(torch.zeros(3), done)
    with pytest.raises(TypeError, match="expected an aoff logger"):
        stats.log_to(object())


def test_a_set_of_rows_read_after_the_buffers_grew_is_not_reused() -> None:
    """Rows go into buffers that double as an iteration grows, and handed-over sets come
    back once read; one handed over before a growth (a slow drain) is too small to
    come back into use."""

    class Events:
        def __init__(self) -> None:
            self.events: list[Any] = []

        def _clock(self) -> float:
            return 0.0

        def _put(self, event: Any) -> None:
            self.events.append(event)

    sink = Events()
    stats = EpisodeStats(2)
    done = torch.tensor([True, False])  # env 0 ends every step: one episode a step

    def iteration(n_steps: int) -> list[Any]:
        for _ in range(n_steps):
            stats.update(torch.ones(2), done)
        stats.log_to(sink)
        events, sink.events[:] = list(sink.events), []
        return events

    slow = iteration(3)  # 8-row buffers; read only after the next iteration grew them
    grown = iteration(20)
    for e in slow:
        resolve_event(e)  # its 8-row set is offered back
    after = iteration(20)  # its take() is offered the 8-row set: refused
    last = iteration(20)  # 20 rows: a set of 8 would not hold them
    for events, n in ((slow, 3), (grown, 20), (after, 20), (last, 20)):
        returns = resolve_event(events[0])[2]
        assert returns == (1.0,) * n


def test_a_collector_s_episodes_count_for_the_run(tmp_path: Path) -> None:
    """From a RemoteLogger (a collector), as ``log_episodes``' do."""
    log = jsonl_agent_logger(tmp_path, pump="thread")
    remote = log.remote("collector")
    stats = EpisodeStats(4)
    stats.update(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([True, True, False, False]))
    stats.log_to(remote)
    remote.close()
    log.log_step(1)
    log.finish()
    (row,) = read_jsonl(tmp_path / "metrics.jsonl")
    assert (row["episode/return"], row["episode/count"], row["episode/length"]) == (1.5, 2.0, 1.0)


def test_episodes_handed_over_after_the_last_step_join_the_run_s_last_record() -> None:
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread")
    stats = EpisodeStats(2)
    log.log_step(1)
    stats.update(torch.ones(2), torch.tensor([True, True]))
    stats.log_to(log)
    log.finish()
    tail = mem.records[-1]
    assert (tail.step, tail.as_dict()["episode/count"]) == (1, 2.0)
    assert [h.tag for h in tail.histograms] == ["episode/returns"]
