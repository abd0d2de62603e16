"""System metrics: sampled off the training thread, logged as ``system/*``, shown in System.

* a real run in each pump mode (a fast ``system_interval``) writes ``system/cpu_percent``
  and ``system/rss_mb`` of *this* process (the training process, also when the sampler
  runs in the agent) to JSONL and TensorBoard; without ``nvidia-ml-py`` or a GPU there
  are no ``system/gpu_*`` keys;
* a sampler that fails (a real ``psutil.NoSuchProcess``: a pid that has exited) is
  reported once and the pump goes on writing records;
* the System column shows the sample and the compact 80x24 panel keeps its size (a
  golden, ``tests/golden/system_80x24.txt``).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest

from aoff import OffPolicyLogger
from aoff._backends._base import BackendContext
from aoff._core import _events as ev
from aoff._core._buffer import EventBuffer
from aoff._core._recorder import Recorder
from aoff._core._state import State
from aoff._display._panel import dashboard_panel, timing_table
from aoff._pump._options import PumpMode
from aoff._pump._pump import Pump, PumpSettings
from aoff._pump._sysmetrics import SystemSampler, _open_gpu, _visible
from aoff.testing import MemoryBackend, RecordingDisplay, probe

from .conftest import ahold_still, hold_still, read_jsonl, read_tensorboard
from .test_render import NOW, SMALL, assert_fits, check_golden, export, mid_run_state, sized

HAS_NVML = importlib.util.find_spec("pynvml") is not None
DEADLINE = 20.0


def run_until_sampled(log_dir: Path, pump: PumpMode) -> list[dict[str, object]]:
    """Log steps until a flushed JSONL row carries a system sample (or the deadline)."""
    log = OffPolicyLogger(
        log_dir=log_dir,
        backends=("jsonl",),
        pump=pump,
        display=RecordingDisplay() if pump == "thread" else None,
        handle_sigterm=False,
        system_interval=0.02,
    )
    rows: list[dict[str, object]] = []
    start = time.monotonic()
    i = 0
    try:
        while time.monotonic() - start < DEADLINE:
            for _ in range(10):
                i += 1
                log.log_step(i, metrics={"loss": 1.0 / i})
                hold_still(0.005, "a training step takes time")
            log.flush()
            rows = read_jsonl(log_dir / "metrics.jsonl")
            if sum("system/rss_mb" in r for r in rows) >= 2:
                break
    finally:
        log.finish()
    return read_jsonl(log_dir / "metrics.jsonl")


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_samples_of_the_training_process_reach_jsonl_and_tensorboard(
    tmp_path: Path, pump: PumpMode
) -> None:
    rows = run_until_sampled(tmp_path, pump)
    sampled = [r for r in rows if "system/rss_mb" in r]
    assert len(sampled) >= 2, "no system sample in the run"
    mine = psutil.Process().memory_info().rss / (1 << 20)
    for r in sampled:
        cpu = r["system/cpu_percent"]
        rss = r["system/rss_mb"]
        assert isinstance(cpu, float) and cpu >= 0
        # this process's memory (torch and pandas are imported here, not in the agent)
        assert isinstance(rss, float) and 0.5 * mine < rss < 2 * mine, (rss, mine)
        if not HAS_NVML:
            assert not any(k.startswith("system/gpu") for k in r)
    # each sample is logged once, at the step after it was taken: not on every row
    assert len(sampled) < len(rows)
    tb = read_tensorboard(tmp_path)
    steps = [s for s, _ in tb["system/rss_mb"]]
    assert steps == [r["step"] for r in sampled]


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.anyio
async def test_a_failing_sampler_is_reported_once_and_the_pump_goes_on() -> None:
    lines: list[str] = []
    buffer = EventBuffer()
    mem = MemoryBackend()
    sampler = SystemSampler(dead_pid(), 0.005)
    pump = Pump(
        buffer, State(), [mem], RecordingDisplay(), PumpSettings(say=lines.append), system=sampler
    )
    rec: Recorder[None] = Recorder()
    rec._init_recorder(buffer.put, time.time)
    async with anyio.create_task_group() as tg:
        await tg.start(pump.run, BackendContext())
        with anyio.fail_after(DEADLINE):
            i = 0
            while not lines or i < 20:
                i += 1
                rec.log_step(i)
                await ahold_still(0.01, "a training step takes time")
        pump.request_stop()
    sampler.join(5)
    problems = [ln for ln in lines if "system metrics" in ln]
    assert len(problems) == 1, lines
    assert "NoSuchProcess" in problems[0]
    assert [r.iteration for r in mem.records] == list(range(1, i + 1))
    assert not any(t.startswith("system/") for r in mem.records for t, _ in r.scalars)


def test_a_sample_joins_the_next_step_only() -> None:
    state = State()
    pump = Pump(EventBuffer(), state, [], RecordingDisplay())
    fold = pump._intake.folder.apply
    assert fold((ev.SYSTEM, 5.0, {"system/cpu_percent": 50.0, "system/rss_mb": 100.0})) is None
    assert state.last_wall_time is None  # a sample does not move the run's clock
    first = fold((ev.STEP, 6.0, 1, None, None, None, None, 0.0, 0.0, 0.0, 0.0, None))
    second = fold((ev.STEP, 7.0, 2, None, None, None, None, 0.0, 0.0, 0.0, 0.0, None))
    assert first is not None and second is not None
    assert first.as_dict()["system/rss_mb"] == 100.0
    assert not any(t.startswith("system/") for t, _ in second.scalars)
    assert state.system == {"system/cpu_percent": 50.0, "system/rss_mb": 100.0}


def system_state() -> State:
    s = mid_run_state()
    s.system = {
        "system/cpu_percent": 153.4,
        "system/rss_mb": 2150.0,
        "system/gpu_util": 87.0,
        "system/gpu_mem_mb": 12_600.0,
    }
    return s


def test_the_system_column_shows_the_sample_and_80x24_keeps_its_size() -> None:
    text = export(timing_table(system_state()))
    assert "CPU/RSS" in text and "153% 2.1G" in text
    assert "GPU/Mem" in text and "87% 12.3G" in text
    s = system_state()
    s.system = {"system/cpu_percent": 3.0, "system/rss_mb": 420.0}
    text = export(timing_table(s))
    assert "3% 420M" in text and "GPU" not in text
    small = sized(dashboard_panel(system_state(), NOW), *SMALL)
    assert_fits(small, *SMALL)
    check_golden("system_80x24", small)


def test_interval_is_checked_and_zero_turns_sampling_off() -> None:
    for bad in (-1, "1", True, float("nan")):
        with pytest.raises(ValueError, match="system_interval"):
            OffPolicyLogger(log_backend="none", system_interval=bad)  # type: ignore[arg-type]
    log = OffPolicyLogger(
        log_backend="none", pump="thread", display=RecordingDisplay(), system_interval=0
    )
    try:
        assert not probe(log).system_metrics
    finally:
        log.finish()


def test_gpu_keys_need_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    if not HAS_NVML:
        assert _open_gpu() is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,0,7")
    assert _visible(4) == [2, 0]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,GPU-abc")
    assert _visible(4) == [1]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert _visible(4) == []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _visible(2) == [0, 1]
