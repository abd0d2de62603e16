"""torchrun ranks: only global rank 0 draws and writes by default; other ranks are inert.

The real job runs under ``torchrun`` with the gloo backend on the CPU (2 ranks): one run
folder, one dashboard, one notice line from rank 1. The in-process tests set ``RANK`` as
a launcher would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aoff import AsyncOffPolicyLogger, OffPolicyLogger

JOB = """
import os, sys
import torch.distributed as dist
from aoff import OffPolicyLogger

dist.init_process_group("gloo")
log = OffPolicyLogger(algo_name="SAC", max_iterations=40, log_dir=sys.argv[1],
                      backends=("jsonl",), handle_sigterm=False)
log.start()
for i in range(1, 41):
    log.log_step(i, {"loss": float(dist.get_rank())}, reward=-1.0)
report = log.finish()
print(f"RANK{dist.get_rank()} steps={report.steps}", flush=True)
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.slow  # starts torchrun and two ranks that import torch
def test_torchrun_two_ranks_write_one_run_and_draw_one_dashboard(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(JOB))
    run = tmp_path / "run"
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("RANK", None)
    proc = subprocess.run(
        [
            str(torchrun),
            "--standalone",  # rendezvous on a free loopback port (the job's, not aoff's)
            "--nproc-per-node=2",
            str(script),
            str(run),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "RANK0 steps=40" in out and "RANK1 steps=0" in out
    # one run folder: rank 0's files only, no per-rank folders
    assert sorted(p.name for p in run.iterdir() if p.is_dir()) == []
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, 41))
    assert {r["train/loss"] for r in rows} == {0.0}  # rank 0's values only
    # one dashboard (one summary panel), and one notice line from rank 1
    assert out.count("Training Summary") == 1, out
    assert out.count("rank 1 of 2: this rank does not log") == 1, out


def test_rank_n_is_inert_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    log = OffPolicyLogger(log_dir=tmp_path / "run", backends=("jsonl",), handle_sigterm=False)
    assert "rank 3 of 4: this rank does not log" in capfd.readouterr().err
    log.start()
    for i in range(10):
        assert log.log_step(i, {"x": 1.0}) is None
        log.update_done_rates(0.1, 0.0)
    log.flush()
    report = log.finish()
    assert report.steps == 0 and not report.partial and report.dropped_events == 0
    assert log.finish() is report
    assert not (tmp_path / "run").exists()  # nothing written, no folder made
    assert log.algo_name == "RL"  # the seed's public attributes are still there


@pytest.mark.anyio
async def test_rank_n_is_inert_async(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    async with AsyncOffPolicyLogger(
        log_dir=tmp_path / "run", backends=("jsonl",), handle_sigterm=False
    ) as log:
        await log.log_step(1, {"x": 1.0})
        await log.aflush()
    report = await log.afinish()
    assert report.steps == 0
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_ranks_each_gives_every_rank_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pump: str
) -> None:
    monkeypatch.setenv("RANK", "2")
    log = OffPolicyLogger(
        log_dir=tmp_path / "run",
        backends=("jsonl",),
        log_backend="none",
        ranks="each",
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
    )
    for i in range(1, 6):
        log.log_step(i, {"x": 1.0})
    assert log.finish().steps == 5
    rows = (tmp_path / "run" / "rank2" / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 5


def test_rank_zero_logs_as_usual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "0")
    log = OffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        log_backend="none",
        pump="thread",
        handle_sigterm=False,
    )
    log.log_step(1, {"x": 1.0})
    assert log.finish().steps == 1
    assert (tmp_path / "metrics.jsonl").exists()


@pytest.mark.parametrize("bad", ["one", "-1"])
def test_bad_rank_variable_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("RANK", bad)
    with pytest.raises(ValueError, match="RANK environment variable"):
        OffPolicyLogger(log_backend="none", handle_sigterm=False)


def test_bad_ranks_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(ValueError, match="ranks must be one of"):
        OffPolicyLogger(log_backend="none", ranks="all", handle_sigterm=False)  # type: ignore[arg-type]


@pytest.mark.slow  # runs the benchmark script (a smoke test: no timing is asserted)
def test_bench_ranks_prints_its_table() -> None:
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_ranks.py"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    proc = subprocess.run(
        [sys.executable, str(bench), "--iterations", "2000"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| 1: inert (does not log) |" in proc.stdout
    assert "| 0: logs (process pump, JSONL) |" in proc.stdout
