"""PyTorch tensors as values: captured at call time, never waiting for a device.

CPU-only (CI has no GPU): real CPU tensors go through the public faces; the CUDA path's
grouping and the pump's "wait for the device, keep order" logic are exercised with fake
readiness (placeholders / events whose ``ready()``/``query()`` flip after N polls).
The real-CUDA check lives in ``tests/gpu/test_cuda_nosync.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import torch

from aoff import AsyncOffPolicyLogger, OffPolicyLogger
from aoff._core import _events as ev
from aoff._core import _tensors
from aoff._core._buffer import EventBuffer
from aoff._core._capture import capture, finish, plain_step
from aoff._core._pending import (
    Gather,
    PendingEvent,
    Placeholder,
    event_ready,
    pending_event,
)
from aoff._core._recorder import Recorder
from aoff._core._state import State
from aoff._pump._pump import Pump
from aoff.testing import ManualClock, MemoryBackend, RecordingDisplay, wait_until
from aoff.testing._faults import aput_event, put_event, record_report_lines

from .conftest import make_async_logger, make_logger

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool]
SHAPES = [(), (1,), (1, 1)]


# a manual clock: the timing scalars (perf/steps_per_sec) do not depend on the machine
def make_sync(mem: MemoryBackend, finish_timeout: float = 10.0) -> OffPolicyLogger:
    return make_logger(mem, clock=ManualClock(), finish_timeout=finish_timeout)


def make_async(mem: MemoryBackend) -> AsyncOffPolicyLogger:
    return make_async_logger(mem, clock=ManualClock())


def rows(mem: MemoryBackend) -> list[tuple[int, int, tuple[tuple[str, float], ...]]]:
    return [(r.step, r.iteration, r.scalars) for r in mem.records]


def mutate(t: torch.Tensor) -> None:
    """Change a tensor in place, the way a training loop reuses its buffers."""
    with torch.no_grad():
        if t.dtype == torch.bool:
            t.logical_not_()
        else:
            t.add_(100)


class Values:
    """Makes the values of one run: tensors (remembered, to mutate later) or plain numbers."""

    def __init__(self, dtype: torch.dtype | None, shape: tuple[int, ...] = ()) -> None:
        self.dtype, self.shape = dtype, shape
        self.made: list[torch.Tensor] = []

    def __call__(self, x: float) -> Any:
        if self.dtype is None:
            return x
        t = torch.tensor(x).to(self.dtype).reshape(self.shape)
        self.made.append(t)
        return t

    def mutate_all(self) -> None:
        for t in self.made:
            mutate(t)
        self.made.clear()


def plain_of(dtype: torch.dtype) -> Callable[[float], Any]:
    """The float equivalent of a value as a ``dtype`` tensor holds it."""
    return lambda x: torch.tensor(x).to(dtype).item()


SCRIPT: list[tuple[str, Callable[[Callable[[float], Any]], tuple[tuple[Any, ...], dict[str, Any]]]]]
SCRIPT = [
    ("update_collector_timing", lambda v: (({"env_step_ms": v(2.5), "replay_ms": v(0.75)},), {})),
    ("update_done_rates", lambda v: ((v(0.25), v(0.5)), {})),
    ("update_buffer_utilization", lambda v: ((v(0.125),), {})),
    ("update_staging_pool", lambda v: ((v(3), v(8)), {})),
    ("set_collection_sync", lambda v: ((v(1), v(2)), {})),
    ("update_ep_length", lambda v: ((v(200),), {})),
    ("log_buffer_fill", lambda v: ((v(50), v(100)), {})),
    ("log_collector", lambda v: ((v(4096), v(1000), v(-3.0)), {})),
    (
        "log_step",
        lambda v: (
            (v(1),),
            {
                "metrics": {"q_loss": v(0.1), "actor_loss": v(-2.5), "alpha": v(1)},
                "reward": v(7.0),
                "reward_metrics": {"max": v(9.5)},
                "reward_components": {"forward": v(1.2), "ctrl": v(-0.05)},
                "train_time": v(0.004),
                "wait_time": v(0.0002),
                "learner_incremental_h2d_time": v(0.001),
                "weight_sync_time": v(0.003),
                "extra_info": {"throughput_steps": v(4096)},
            },
        ),
    ),
    ("log_collector", lambda v: ((v(8192), v(2000), v(0.0)), {})),
    ("log_step", lambda v: ((v(2), {"q_loss": v(0.3)}), {"reward": v(-1.5), "train_time": v(2)})),
]


def run_script_sync(mem: MemoryBackend, values: Values) -> None:
    log = make_sync(mem)
    log.start()
    for name, build in SCRIPT:
        args, kwargs = build(values)
        assert getattr(log, name)(*args, **kwargs) is None
        values.mutate_all()  # right after the call: must not change what was logged
    report = log.finish()
    assert report.complete and report.invalid_values == 0, report


async def run_script_async(mem: MemoryBackend, values: Values) -> None:
    async with make_async(mem) as log:
        await log.start()
        for name, build in SCRIPT:
            args, kwargs = build(values)
            await getattr(log, name)(*args, **kwargs)
            values.mutate_all()


class Cast(Values):
    """Plain Python numbers, rounded as a ``dtype`` tensor holds them (the float equivalents)."""

    def __call__(self, x: float) -> Any:
        assert self.dtype is not None
        return plain_of(self.dtype)(x)


def expected_rows(dtype: torch.dtype) -> list[tuple[int, int, tuple[tuple[str, float], ...]]]:
    mem = MemoryBackend()
    run_script_sync(mem, Cast(dtype))
    return rows(mem)


# -- the sync face -----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"shape{s}")
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_sync_face_tensors_log_their_float_equivalents(
    dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    mem = MemoryBackend()
    run_script_sync(mem, Values(dtype, shape))
    got = rows(mem)
    assert len(got) == 2
    assert got == expected_rows(dtype)
    # every scalar is a real float (not a tensor, not a placeholder)
    assert all(type(v) is float for r in mem.records for _, v in r.scalars)


def test_expected_values_are_the_dtype_roundings() -> None:
    """Guard the comparison itself: float16 0.1 is not 0.1, and the records say so."""
    assert plain_of(torch.float16)(0.1) == 0.0999755859375
    rows16 = dict(expected_rows(torch.float16)[0][2])
    rows32 = dict(expected_rows(torch.float32)[0][2])
    assert rows16["train/q_loss"] == 0.0999755859375
    assert rows32["train/q_loss"] == float(torch.tensor(0.1, dtype=torch.float32))
    assert dict(expected_rows(torch.bool)[0][2])["train/actor_loss"] == 1.0


def test_mixed_tensors_and_floats_in_one_call() -> None:
    mem = MemoryBackend()
    log = make_sync(mem)
    t = torch.tensor(0.5)
    i = torch.tensor([3], dtype=torch.int64)
    # tensors where the signatures say int/float: accepted at the call (captured)
    log.log_collector(i * 1000, 10, 0.0)  # type: ignore[arg-type]
    log.log_step(
        1,
        {"a": t, "b": 0.25, "c": 2, "d": torch.tensor([[1.5]], dtype=torch.float64)},
        reward=torch.tensor(-1.0, dtype=torch.bfloat16),  # type: ignore[arg-type]
        train_time=0.002,
        wait_time=torch.tensor(0.001, dtype=torch.float64),  # type: ignore[arg-type]
    )
    t.add_(100)
    i.add_(100)
    log.finish()
    (rec,) = mem.records
    d = rec.as_dict()
    assert rec.step == 3000
    assert (d["train/a"], d["train/b"], d["train/c"], d["train/d"]) == (0.5, 0.25, 2.0, 1.5)
    assert d["reward/mean"] == -1.0
    assert d["timing/learner_train_ms"] == 2.0
    assert d["timing/learner_wait_ms"] == 1.0


@pytest.mark.parametrize(
    ("call", "where", "key"),
    [
        # (log_step's reward and dicts take per-env vectors: tests/test_episode_stats.py)
        (lambda log, t: log.log_step(1, train_time=t), "log_step", "train_time"),
        (
            lambda log, t: log.update_collector_timing({"env_ms": t}),
            "update_collector_timing",
            "env_ms",
        ),
        (lambda log, t: log.update_done_rates(0.1, t), "update_done_rates", "terminated_rate"),
        (lambda log, t: log.log_collector(t, 1), "log_collector", "total_steps"),
    ],
)
def test_multi_element_tensor_is_a_value_error_naming_argument_and_key(
    call: Callable[[OffPolicyLogger, torch.Tensor], None], where: str, key: str
) -> None:
    mem = MemoryBackend()
    log = make_sync(mem)
    with pytest.raises(ValueError, match=rf"{re.escape(where)}.*'{key}'.*shape \(3,\).*\.mean\(\)"):
        call(log, torch.ones(3))
    with pytest.raises(ValueError, match=r"shape \(1, 2\)"):
        call(log, torch.ones(1, 2))
    log.log_step(7, {"q_loss": torch.tensor(0.5)})  # the logger is unharmed
    log.finish()
    assert [r.iteration for r in mem.records] == [7]  # the failed calls recorded nothing
    assert mem.records[0].as_dict()["train/q_loss"] == 0.5


def test_empty_tensor_is_a_value_error_too() -> None:
    log = make_sync(MemoryBackend())
    with pytest.raises(ValueError, match=r"'x'.*shape \(0,\)"):
        log.log_step(1, {"x": torch.ones(0)})
    log.close()


def test_an_unreadable_tensor_is_reported_by_the_pump_not_raised() -> None:
    mem = MemoryBackend()
    log = make_sync(mem)
    lines = record_report_lines(log)
    log.log_step(1, {"meta": torch.empty((), device="meta"), "ok": torch.tensor(0.5)})
    report = log.finish()
    assert mem.records[0].as_dict()["train/ok"] == 0.5
    assert "train/meta" not in mem.records[0].as_dict()
    assert report.invalid_values == 1 and any("'meta'" in m for m in lines), lines


def test_requires_grad_tensors_log_without_warnings() -> None:
    mem = MemoryBackend()
    log = make_sync(mem)
    w = torch.tensor(2.0, requires_grad=True)
    loss = (w * 3).sum()  # a non-leaf with a grad_fn
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log.log_step(1, {"loss": loss, "w": w}, reward=loss.reshape(1))  # type: ignore[arg-type]
        torch.autograd.backward(loss)  # the graph is untouched by logging
    log.finish()
    assert w.grad is not None and w.grad.item() == 3.0
    d = mem.records[0].as_dict()
    assert (d["train/loss"], d["train/w"], d["reward/mean"]) == (6.0, 2.0, 6.0)


def test_a_tensor_subclass_and_numpy_values_are_captured_at_call_time() -> None:
    np = pytest.importorskip("numpy")
    mem = MemoryBackend()
    log = make_sync(mem)
    p = torch.nn.Parameter(torch.tensor(1.25))
    a = np.array(2.5)  # 0-d: mutable, read at the call
    log.log_step(1, {"p": p, "a": a, "s": np.float32(0.5)})
    with torch.no_grad():
        p.add_(1)
    a[()] += 1
    log.finish()
    d = mem.records[0].as_dict()
    assert (d["train/p"], d["train/a"], d["train/s"]) == (1.25, 2.5, 0.5)


# -- the async face, on asyncio and trio -------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"shape{s}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool], ids=str)
async def test_async_face_tensors_log_their_float_equivalents(
    dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    mem = MemoryBackend()
    await run_script_async(mem, Values(dtype, shape))
    assert rows(mem) == expected_rows(dtype)


@pytest.mark.anyio
async def test_async_face_multi_element_tensor_raises_at_the_call() -> None:
    mem = MemoryBackend()
    async with make_async(mem) as log:
        with pytest.raises(ValueError, match=r"update_collector_timing\(timing_ms\).*'max'"):
            log.update_collector_timing({"max": torch.zeros(2, 2)})
        await log.log_step(2, reward_metrics={"max": torch.zeros(1, 1)})
    assert [r.iteration for r in mem.records] == [2]


# -- torch stays optional ----------------------------------------------------------------------
@pytest.mark.slow  # a subprocess that imports torch
def test_capture_turns_on_only_after_torch_is_imported() -> None:
    code = textwrap.dedent(
        """
        import sys
        import aoff
        from aoff.testing import MemoryBackend, RecordingDisplay, probe
        assert "torch" not in sys.modules and "aoff._core._tensors" not in sys.modules

        def logger(mem):
            return aoff.OffPolicyLogger(log_backend="none", backends=[mem],
                display=RecordingDisplay(), handle_sigterm=False)

        mem = MemoryBackend()
        log = logger(mem)
        log.log_step(1, {"x": 0.5})
        log.finish()
        assert not probe(log).captures_tensors
        assert "torch" not in sys.modules and "aoff._core._tensors" not in sys.modules

        import torch
        mem = MemoryBackend()
        log = logger(mem)  # a logger built after import torch captures
        assert probe(log).captures_tensors and "aoff._core._tensors" in sys.modules
        t = torch.tensor(0.25)
        log.log_step(2, {"x": t})
        t.add_(1)
        log.finish()
        print(mem.records[0].as_dict()["train/x"])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0.25"


def test_gather_reads_cpu_tensors_now_and_leaves_plain_events() -> None:
    rec: Recorder[None] = Recorder()
    rec._init_recorder(lambda _: None, lambda: 0.0)
    assert rec._refresh_capture()  # torch is imported in this process
    g: Gather = []
    v = capture(torch.tensor(1.5, dtype=torch.float16), g, "w", "k")
    assert v == 1.5 and type(v) is float
    assert capture(torch.tensor(7), g, "w", "k") == 7
    assert capture(3, g, "w", "k") == 3
    assert g == []  # no CUDA tensor: nothing to copy, the recorder puts the plain event
    assert capture("nope", g, "w", "k") == "nope"  # the pump reports non-numbers


def test_log_step_with_axes_captures_tensors_anywhere_and_keeps_plain_events() -> None:
    events: list[ev.Event] = []
    rec: Recorder[None] = Recorder()
    rec._init_recorder(events.append, lambda: 0.0)
    assert rec._refresh_capture()  # torch is imported in this process
    rec.log_step(1, {"q": 0.5}, axes={"grad_steps": 4})
    rec.log_step(2, {"q": torch.tensor(0.25)}, axes={"grad_steps": 8})
    rec.log_step(3, {"q": 0.5}, extra_info={"throughput_steps": torch.tensor(9)}, axes={"g": 1})
    rec.log_step(4, {"q": 0.5}, axes={"grad_steps": torch.tensor(12)})
    assert [plain_step(e) for e in events] == [True] * 4  # each captured to plain numbers
    assert [(e[ev.S_METRICS]["q"], e[ev.S_THROUGHPUT], e[ev.S_AXES]) for e in events] == [
        (0.5, None, {"grad_steps": 4}),
        (0.25, None, {"grad_steps": 8}),
        (0.5, 9, {"g": 1}),
        (0.5, None, {"grad_steps": 12}),
    ]
    got = [(type(e[ev.S_METRICS]["q"]), *map(type, e[ev.S_AXES].values())) for e in events]
    assert got == [(float, int)] * 4 and type(events[2][ev.S_THROUGHPUT]) is int
    assert not plain_step((*events[0][:-1], {"g": torch.tensor(1)}))
    assert not plain_step((*events[0][:4], torch.tensor(1.0), *events[0][5:]))


# -- waiting for device values, in order (fake readiness, no CUDA needed) ------------------------
class FlipAfter(Placeholder):
    """A placeholder whose value becomes ready after ``n`` polls."""

    __slots__ = ("n", "polls", "v")

    def __init__(self, v: float, n: int) -> None:
        self.v, self.n, self.polls = v, n, 0

    def ready(self) -> bool:
        self.polls += 1
        return self.polls > self.n

    def value(self) -> float:
        assert self.polls > self.n, "value() read before ready()"
        return self.v


def step_event(iteration: Any, q: Any, reward: Any = None) -> tuple[object, ...]:
    return (ev.STEP, 0.0, iteration, {"q": q}, reward, None, None, 0.0, 0.0, 0.0, 0.0, None)


def test_pending_event_collects_its_placeholders() -> None:
    a, b = FlipAfter(1.0, 0), FlipAfter(2.0, 0)
    e = pending_event(step_event(1, a, reward=b))
    assert type(e) is PendingEvent and set(map(id, e.waits)) == {id(a), id(b)}
    plain = step_event(1, 0.5)
    assert pending_event(plain) == plain and type(pending_event(plain)) is tuple


@pytest.mark.anyio
async def test_pump_holds_back_until_ready_and_keeps_order() -> None:
    buf = EventBuffer()
    state = State()
    pump = Pump(buf, state, [], RecordingDisplay())
    slow = FlipAfter(0.5, 3)
    buf.put((ev.COLLECTOR, 0.0, 100, 10, 0.0))
    buf.put(step_event(1, 0.25))
    buf.put(pending_event(step_event(2, slow)))
    buf.put((ev.COLLECTOR, 0.0, 200, 20, 0.0))  # must not overtake step 2
    buf.put(step_event(3, 0.75))

    assert await pump._intake.drain_once() == 5
    assert state.steps_logged == 1 and state.total_steps == 100  # stopped at step 2
    assert len(pump._intake.held) == 3 and len(buf) == 0
    buf.put(step_event(4, 1.0))  # newer than the held events: stays behind them
    for _ in range(2):  # polls 2 and 3: still not ready
        await pump._intake.drain_once()
        assert state.steps_logged == 1 and len(buf) == 1
    await pump._intake.drain_once()  # poll 4: ready; held events first, then the buffer
    assert state.steps_logged == 4 and state.iteration == 4 and not pump._intake.held
    assert state.latest_metrics["q"] == 1.0 and slow.polls == 4


@pytest.mark.anyio
async def test_pump_records_keep_steps_when_values_wait() -> None:
    mem = MemoryBackend()
    slow = [FlipAfter(float(i), i % 3 * 2) for i in range(30)]
    async with make_async(mem) as log:
        for i in range(30):
            await log.log_collector(1000 * (i + 1), i)
            if i % 2:
                await log.log_step(i, {"q": float(i)})
            else:
                await aput_event(
                    log, pending_event(step_event(i, slow[i], reward=FlipAfter(-i, 1)))
                )
            await anyio.lowlevel.checkpoint()
    assert [r.iteration for r in mem.records] == list(range(30))
    assert [r.step for r in mem.records] == [1000 * (i + 1) for i in range(30)]
    assert [r.as_dict()["train/q"] for r in mem.records] == [float(i) for i in range(30)]
    assert [r.as_dict().get("reward/mean") for r in mem.records][:4] == [0.0, None, -2.0, None]


def test_sync_flush_waits_for_pending_values() -> None:
    mem = MemoryBackend()
    log = make_sync(mem)
    slow = FlipAfter(0.5, 5)
    put_event(log, pending_event(step_event(1, slow)))
    log.log_step(2, {"q": 1.5})
    log.flush()  # returns only once both are written, in order
    assert [(r.iteration, r.as_dict()["train/q"]) for r in mem.records] == [(1, 0.5), (2, 1.5)]
    log.finish()


class Never(Placeholder):
    __slots__ = ()

    def ready(self) -> bool:
        return False

    def value(self) -> float:  # pragma: no cover - must not be called
        raise AssertionError("value() of a placeholder that never became ready")


class Broken(Placeholder):
    __slots__ = ()

    def ready(self) -> bool:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    def value(self) -> float:  # pragma: no cover - must not be called
        raise AssertionError("value() of a broken placeholder")


def test_values_that_never_arrive_are_dropped_at_finish_and_counted() -> None:
    mem = MemoryBackend()
    log = make_sync(mem, finish_timeout=0.3)
    lines = record_report_lines(log)
    log.log_step(1, {"q": 0.5})
    put_event(log, pending_event(step_event(2, Never())))
    log.log_step(3, {"q": 1.5})
    report = log.finish()
    assert [r.iteration for r in mem.records] == [1, 3]
    assert report.dropped_events == 1 and not report.complete
    assert any("device values still not copied" in m for m in lines), lines
    assert not any("buffer was full" in m for m in lines), lines


@pytest.mark.anyio
async def test_a_placeholder_that_fails_drops_its_event_not_the_pump() -> None:
    mem = MemoryBackend()
    log = make_async(mem)
    lines = record_report_lines(log)
    async with log:
        await log.log_step(1, {"q": 0.5})
        await aput_event(log, pending_event(step_event(2, Broken())))
        await log.log_step(3, {"q": 1.5})
        await log.aflush()
        assert [r.iteration for r in mem.records] == [1, 3]
    assert any("illegal memory access" in m for m in lines), lines


# -- the CUDA copy path, run on CPU tensors with fake events ------------------------------------
class FakeEvent:
    def __init__(self, device: int, n: int) -> None:
        self.device, self.n, self.queries = device, n, 0

    def query(self) -> bool:
        self.queries += 1
        return self.queries > self.n


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Unpinned host buffers and fake events: ``_tensors.launch`` runs on CPU tensors."""
    seen: dict[str, list[Any]] = {"hosts": [], "events": [], "stacks": []}

    def host_empty(shape: Any, dtype: Any) -> torch.Tensor:
        t = torch.empty(shape, dtype=dtype)
        seen["hosts"].append(t)
        return t

    def record_event(device: int) -> FakeEvent:
        e = FakeEvent(device, 2)
        seen["events"].append(e)
        return e

    real_stack = torch.stack

    def stack(tensors: list[torch.Tensor]) -> torch.Tensor:
        seen["stacks"].append(len(tensors))
        return real_stack(tensors)

    monkeypatch.setattr(_tensors, "_host_empty", host_empty)
    monkeypatch.setattr(_tensors, "_record_event", record_event)
    monkeypatch.setattr(torch, "stack", stack)  # _tensors calls torch.stack
    return seen


def test_cuda_path_groups_one_call_into_few_copies(fake_cuda: dict[str, list[Any]]) -> None:
    g: Gather = []
    specs = [
        (0.1, torch.float32, ()),
        (0.2, torch.float32, ()),
        (2**40 + 1, torch.int64, ()),  # exact: an int64 group stays int64
        (0.3, torch.float32, ()),
        (0.1, torch.bfloat16, (1,)),
        (True, torch.bool, (1, 1)),
        (0.4, torch.float32, (1,)),
    ]
    ts = [torch.tensor(x).to(d).reshape(s) for x, d, s in specs]
    ts[1].requires_grad_(True)
    phs = [_tensors.defer(g, t) for t in ts]
    event = (
        ev.STEP,
        0.0,
        1,
        {f"k{i}": p for i, p in enumerate(phs)},
        *[None] * 3,
        *[0.0] * 4,
        None,
    )
    out = finish(g, event)
    assert type(out) is PendingEvent
    # groups: (float32, 0-d) x3 stacked, int64, bfloat16, bool, (float32, 1-d): one copy each
    assert fake_cuda["stacks"] == [3]
    assert [tuple(h.shape) for h in fake_cuda["hosts"]] == [(3,), (), (1,), (1, 1), (1,)]
    assert len(fake_cuda["events"]) == 1  # one device: one event
    for t in ts:
        mutate(t)
    assert not event_ready(out) and not event_ready(out)  # the event is polled, not waited
    assert event_ready(out)
    values = [p.value() for p in phs]
    assert values == [torch.tensor(x).to(d).item() for x, d, _ in specs]
    assert values[2] == 2**40 + 1 and type(values[5]) is bool
    assert fake_cuda["events"][0].queries == 3
    assert event_ready(out) and fake_cuda["events"][0].queries == 3  # resolved once


def test_cuda_path_one_event_per_device(fake_cuda: dict[str, list[Any]]) -> None:
    class OnDevice(torch.Tensor):
        """A CPU tensor that says it is on another device index (grouping only)."""

        def get_device(self) -> int:
            return 1

    g: Gather = []
    a = _tensors.defer(g, torch.tensor(1.0))
    b = _tensors.defer(g, torch.tensor(2.0).as_subclass(OnDevice))
    c = _tensors.defer(g, torch.tensor(3.0))
    out = finish(g, (ev.DONE_RATES, 0.0, a, b))
    assert sorted(e.device for e in fake_cuda["events"]) == [-1, 1]
    assert fake_cuda["stacks"] == [2]
    assert type(out) is PendingEvent
    wait_until(lambda: event_ready(out), what="the fake device copies to land")
    assert (a.value(), b.value(), c.value()) == (1.0, 2.0, 3.0)


def test_cuda_path_end_to_end_through_the_sync_face(
    fake_cuda: dict[str, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pretend every tensor is a CUDA tensor: the faces route them through the copy path."""
    real_capture = _tensors.capture

    def capture(g: Gather, t: Any, where: str, key: object) -> Any:
        if t.numel() != 1:
            return real_capture(g, t, where, key)
        return _tensors.defer(g, t)

    import aoff._core._capture as cap

    # capture on first (as a logger built after `import torch` turns it on): once the
    # stand-in is set, activate() takes capture as on already and would not note
    # torch.Tensor, so alone (no test before it built a logger) nothing was captured
    assert cap.activate()
    monkeypatch.setattr(cap, "_capture_tensor", capture)
    for dtype in (torch.float32, torch.int64):
        mem = MemoryBackend()
        values = Values(dtype, ())
        run_script_sync(mem, values)
        assert rows(mem) == expected_rows(dtype)
    assert fake_cuda["events"] and all(e.queries >= 3 for e in fake_cuda["events"])
    # the first log_step's 13 tensors (one dtype, one shape): a single stack of 13
    assert 13 in fake_cuda["stacks"]
