"""Smoke tests of the benchmark commands (tiny sizes; no timing is asserted here).

``benchmarks/compare.py --quick`` and ``benchmarks/slowdown.py --quick`` run end to end,
as subprocesses, side by side: each must print its table, find every contender's scalars
on disk, and write its result files. Timing claims live in the benchmarks' own output,
never in tests. Plus unit checks of the pieces the comparison's fairness rests on: the
shared workload's scalars are exactly what aoff writes for it, and the read-back checks
notice missing data.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from .conftest import make_logger

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def bench_modules() -> Iterator[dict[str, ModuleType]]:
    sys.path.insert(0, str(BENCH))
    try:
        yield {name: importlib.import_module(name) for name in ("_workload", "compare")}
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, Path]]:
    """Run both commands once, concurrently (they are independent processes)."""
    out = tmp_path_factory.mktemp("bench-out")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs = {
        name: subprocess.Popen(
            [sys.executable, str(BENCH / f"{name}.py"), "--quick", "--out", str(out / name)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for name in ("compare", "slowdown")
    }
    deadline = time.monotonic() + 240
    results = {}
    for name, proc in procs.items():
        try:
            stdout, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, _ = proc.communicate()
            pytest.fail(f"{name}.py --quick did not finish in time:\n{stdout}")
        results[name] = (proc.returncode, stdout, out / name)
    return results


def _table_rows(stdout: str, first_cell: str) -> list[list[str]]:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("| ")]
    header = [ln for ln in lines if ln.startswith(f"| {first_cell} |")]
    assert header, f"no table with a {first_cell!r} column in:\n{stdout}"
    rows = [ln for ln in lines if ln not in header and not ln.startswith("| ---")]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in rows]


@pytest.mark.slow  # runs both benchmark commands (~10 s)
def test_compare_prints_table_and_finds_every_scalar_on_disk(
    runs: dict[str, tuple[int, str, Path]],
) -> None:
    rc, stdout, out = runs["compare"]
    assert rc == 0, stdout
    rows = _table_rows(stdout, "contender")
    labels = [r[0] for r in rows]
    expected = [
        "aoff sync face (OffPolicyLogger)",
        "aoff async face (AsyncOffPolicyLogger)",
        "synchronous reference (seed-like: Rich + SummaryWriter)",
        "torch SummaryWriter alone (add_scalar x32)",
    ]
    if importlib.util.find_spec("wandb") is not None:
        expected.append("wandb.log offline")
    assert labels == expected
    assert all(r[-1] == "ok" for r in rows), stdout
    assert "on-disk check: ok" in stdout
    assert "hot-path median vs the synchronous reference's" in stdout
    # every contender's data was read back from disk, not taken on trust
    assert stdout.count("TensorBoard ok (") == 4
    assert stdout.count("JSONL ok (300 rows)") == 2

    data = json.loads((out / "results.json").read_text())
    assert [r["label"] for r in data["rows"]] == expected
    assert all(r["check_ok"] for r in data["rows"])
    assert {r["iterations"] for r in data["rows"][:2]} == {300}
    assert all(r["median_us"] > 0 and r["p99_us"] >= r["median_us"] for r in data["rows"])
    assert "| contender |" in (out / "results.md").read_text()
    assert (out / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_slowdown_prints_table_with_every_default_configuration(
    runs: dict[str, tuple[int, str, Path]],
) -> None:
    rc, stdout, out = runs["slowdown"]
    assert rc == 0, stdout
    rows = _table_rows(stdout, "configuration")
    assert [r[0] for r in rows] == [
        "no logger",
        "aoff sync face, pump='process' (TB + JSONL + dashboard in the agent)",
        "aoff sync face, pump='thread' (TB + JSONL + dashboard in-process)",
        "synchronous reference (seed-like)",
    ]
    assert [r[-1] for r in rows] == ["-", "ok", "ok", "ok"], stdout
    assert "aoff overhead, wall time: mean" in stdout
    assert "aoff overhead, CPU in the training process: " in stdout
    assert "µs an iteration beyond the no-logger floor" in stdout
    data = json.loads((out / "slowdown.json").read_text())
    by_config = {r["config"]: r for r in data["rows"]}
    # the dashboards really drew to the pseudo-terminal; the bare loop printed nothing
    assert by_config["none"]["tty_bytes"] == [0]
    assert by_config["aoff"]["tty_bytes"][0] > 1000  # drawn by the agent, same pty
    assert by_config["aoff-thread"]["tty_bytes"][0] > 1000
    assert by_config["seedlike"]["tty_bytes"][0] > 1000
    # the CPU split is computed from measurements, not left at a default
    assert all(r["rounds"][0]["work_cpu_s"] > 0 for r in data["rows"])
    assert all(math.isfinite(r["logger_cpu_us"]) for r in data["rows"])


def test_workload_scalars_are_what_aoff_writes(bench_modules: dict[str, ModuleType]) -> None:
    """SummaryWriter/wandb contenders log ``seed_scalars``; aoff must write the same."""
    from aoff.testing import MemoryBackend

    w = bench_modules["_workload"]
    mem = MemoryBackend()
    log = make_logger(mem)
    for i in range(3):
        log.update_collector_timing(w.TIMING)
        log.update_done_rates(w.TIMEOUT_RATE, w.TERMINATED_RATE)
        log.log_collector(w.total_steps(i), w.BUFFER_SIZE, w.REWARD)
        log.log_step(
            i,
            w.METRICS,
            reward=w.REWARD,
            reward_components=w.COMPONENTS,
            train_time=w.TRAIN_TIME,
            wait_time=w.WAIT_TIME,
            extra_info=w.EXTRA,
        )
    log.finish()
    assert [r.step for r in mem.records] == [w.step_of(i) for i in range(3)]
    for i, rec in enumerate(mem.records):
        assert list(rec.scalars) == w.seed_scalars(i)
    assert len(w.EXPECTED_TAGS) == 32


def test_read_back_checks_notice_missing_data(
    bench_modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    from aoff._backends._base import BackendContext
    from aoff._backends._tensorboard import TensorBoardBackend
    from aoff._core._records import StepRecord

    w, compare = bench_modules["_workload"], bench_modules["compare"]
    records = [StepRecord(w.step_of(i), i, 1.7e9 + i, tuple(w.seed_scalars(i))) for i in range(3)]

    async def write() -> None:
        tb = TensorBoardBackend(tmp_path / "tb")
        await tb.open(BackendContext())
        await tb.write(records)
        await tb.close()

    anyio.run(write)
    ok, text = compare.check_tensorboard(str(tmp_path / "tb"), 3)
    assert ok, text
    ok, text = compare.check_tensorboard(str(tmp_path / "tb"), 4)
    assert not ok and "3/4 steps" in text

    rows = [{"step": r.step, **dict(r.scalars)} for r in records]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert compare.check_jsonl(str(path), 3)[0]
    assert not compare.check_jsonl(str(path), 4)[0]
    del rows[1]["train/q1_loss"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok, text = compare.check_jsonl(str(path), 3)
    assert not ok and "1 rows missing tags" in text


def _bench(*args: str, timeout: float = 120) -> str:
    """A benchmark script's output (``args``: its file name under benchmarks/, then its
    arguments); a failing run raises."""
    return subprocess.run(
        [sys.executable, str(BENCH / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    ).stdout


def test_bench_neighbour_prints_its_ratio() -> None:
    """Smoke test at a tiny size: it pins itself to one CPU and spins the other."""
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs Linux and 2 CPUs")
    out = _bench("bench_neighbour.py", "--rounds", "2", "--n", "3", timeout=60)
    assert "while CPU" in out and "median per-round ratio" in out, out
    alone = out.split("alone: ")[1].split("\n")[0].split(", ")
    assert len(alone) == 2 and all(float(x) > 0 for x in alone), out


@pytest.mark.slow  # starts agents
def test_bench_agent_cpu_and_loop_lag_print_their_figures(tmp_path: Path) -> None:
    """Smoke tests at tiny sizes: each prints its lines with numbers, and the agent
    benchmark's runs wrote every step they counted (nothing dropped)."""
    figures = tmp_path / "agent.json"
    out = _bench("bench_agent_cpu.py", "--quick", "--out", str(figures))
    assert "us an iteration" in out and "scalars/s" in out, out
    got = json.loads(figures.read_text())
    assert got["flat"]["written"] == 1500 and got["flat"]["dropped"] == 0
    assert got["cold"]["written"] == 1500 and got["cold"]["dropped"] == 0
    assert got["threads"]["written"] == 1500 and got["threads"]["dropped"] == 0
    assert got["eight"]["written"] == 1500 and got["paced"]["agent_us_per_iteration"] > 0
    assert got["flat32"]["written"] == 1500 and got["flat32"]["dropped"] == 0
    assert got["flat32"]["agent_faults_per_iteration"] >= 0, got["flat32"]
    assert "page faults" in out, out
    assert got["group"]["written"] == 8 * 1000 and got["group"]["dropped"] == 0
    out = _bench("bench_loop_lag.py", "--quick")
    assert out.count(" p99 ") >= 3 and "median: none mean" in out, out


def test_gpu_check_skips_cleanly_without_cuda_and_its_read_back_works_on_cpu() -> None:
    """CI has no GPU: ``gpu_check.py`` says SKIP and exits 0; its agent read-back (the one
    check written for it alone) passes on CPU tensors, so a failure on a GPU machine
    is the device path's, not the script's."""
    torch = pytest.importorskip("torch")
    script = str(BENCH / "gpu_check.py")
    if not torch.cuda.is_available():
        res = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == "SKIP gpu_check: no CUDA device"
    res = subprocess.run(
        [sys.executable, script, "--cpu-dry-run"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert "agent-tensors   PASS    50 steps" in res.stdout


@pytest.mark.slow  # starts agents; each command takes 1-3 s at these sizes
def test_issue_26_benchmarks_print_their_side_by_side_figures() -> None:
    """Smoke tests at tiny sizes of the hot path against its floor, the burst in both
    modes, and memory under a stalled pump: each prints its table with numbers, and the
    runs behind it wrote every step (no timing is asserted)."""
    out = _bench("bench_hotpath_floor.py", "--iterations", "200", "--blocks", "1")
    rows = _table_rows(out, "contender")
    assert [r[0] for r in rows] == [
        "aoff process",
        "aoff thread",
        "floor: event + append",
        "floor: bare append",
    ], out
    assert all(float(r[1].split()[0]) > 0 for r in rows), out
    assert "aoff process: 1,200 steps written, 0 dropped" in out
    assert "aoff thread: 1,200 steps written, 0 dropped" in out
    assert "per-block ratio to the event floor" in out

    out = _bench("bench_burst.py", "--calls", "300", "--runs", "1")
    rows = _table_rows(out, "pump")
    assert [r[0] for r in rows] == ["process", "thread"], out
    assert all(float(r[-2].split()[0]) > 0 for r in rows), out  # the caller's CPU
    assert [r[-1] for r in rows] == ["0", "0"], out  # 300 calls: nothing dropped
    assert out.count("median of per-pair ratios") == 3, out

    out = _bench(
        "bench_memory.py", "--iterations", "2000", "--only", "no aoff;process, stalled pump"
    )
    rows = {r[0]: r for r in _table_rows(out, "scenario")}
    assert list(rows) == ["no aoff", "process, stalled pump"], out
    stalled = rows["process, stalled pump"]
    assert float(stalled[1]) > float(rows["no aoff"][1]) > 0, out  # training process RSS
    assert float(stalled[5]) > 0 and stalled[-1] == "0", out  # the agent's RSS; none dropped


def test_bench_turns_prints_each_job_in_pieces() -> None:
    """Smoke test at a tiny size: a line per job, frames and batches cut into pieces."""
    out = _bench("bench_turns.py", "--frames", "2")
    pieces = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^  (\S.*?)\s+(\d+) pieces ", out, flags=re.MULTILINE)
    }
    assert len(pieces) == 7, out
    assert all(pieces[f"dashboard frame {size}"] >= 6 for size in ("80x24", "120x40", "200x60"))
    from aoff._pump._intake import TURN_SLICE
    from aoff._pump._turns import RECORDS_A_PIECE

    assert pieces["TensorBoard encode, 1,024 records"] == 1024 // RECORDS_A_PIECE
    assert pieces["JSONL encode, 1,024 records"] == 1024 // RECORDS_A_PIECE
    assert pieces[f"fold slice of {TURN_SLICE} events"] == 1, out


@pytest.mark.slow  # five fresh processes, torch's writer among them (~5 s unloaded)
def test_bench_read_prints_each_reader_and_checks_its_files() -> None:
    """Smoke test at a tiny size: the built file is torch's bytes, aoff's points are
    EventAccumulator's, and each reader's line and the ratios are printed."""
    out = _bench("bench_read.py", "--quick", timeout=180)
    assert "built file == torch SummaryWriter's bytes (900 records)" in out, out
    assert "aoff == EventAccumulator on the small file (10,000 points)" in out, out
    rows = {r[0] + " " + r[1]: r for r in _table_rows(out, "reader")}
    assert list(rows) == ["aoff small", "EventAccumulator small", "tbparse small", "aoff big"]
    assert all(float(r[3]) > 0 and float(r[5]) > 0 for r in rows.values()), out
    assert [r[-1] for r in rows.values()] == ["10,000", "10,000", "10,000", "200,000"], out
    assert "aoff / EventAccumulator on the small file: " in out, out
    out = _bench("bench_read.py", "--warm", "sb3", "--quick", timeout=180)
    rows = _table_rows(out, "shape")
    assert [r[0] for r in rows] == ["sb3"], out
    assert len(rows[0][2].split()) == 3 and all(float(v) > 0 for v in rows[0][2].split()), out


@pytest.mark.slow  # starts an agent; ~2 s at this size
def test_bench_axes_prints_both_rows_and_the_difference() -> None:
    """Smoke test at tiny sizes of ``axes=``'s cost (issue #50): the logger's table with
    both contenders, every step written (the script checks its report), and the
    recorder-alone figures; no timing is asserted."""
    out = _bench("bench_axes.py", "--iterations", "200", "--blocks", "2")
    rows = _table_rows(out, "contender")
    assert [r[0] for r in rows] == ["log_step", "log_step + axes (3 ints)"], out
    assert "axes= costs" in out and "load:" in out
    out = _bench("bench_axes.py", "--recorder", "--iterations", "200", "--blocks", "2")
    assert "fastest block: log_step" in out and "axes= costs" in out
    src = str(Path(__file__).resolve().parent.parent / "src")  # A/B/A' against itself
    out = _bench("bench_axes.py", "--recorder", "--iterations", "200", "--blocks", "1",
                 "--base", src)  # fmt: skip
    assert "this tree / base: median" in out and "this tree / itself (noise)" in out, out


@pytest.mark.slow  # imports rsl_rl and starts an agent
def test_bench_episode_stats_prints_both_figures() -> None:
    out = _bench("bench_episode_stats.py", "--quick", "--envs", "256")
    assert "rsl_rl process_env_step" in out and "update + log_to every 24" in out, out
    assert "aoff.rsl_rl.LogWriter" in out and out.count(" us ") == 5, out


def test_bench_columnar_prints_each_stage_both_ways() -> None:
    """Smoke test at a tiny size; the script checks that both folds made the same records."""
    out = _bench("bench_columnar.py", "--iterations", "40", "--rounds", "1")
    assert "standard iteration" in out and "log_step of 32 metrics" in out, out
    folds = [ln.split() for ln in out.splitlines() if ln.strip().startswith("fold ")]
    assert len(folds) == 2 and all(float(x) > 0 for row in folds for x in row[1:]), out
    out = _bench("bench_agent_stages.py", "--iterations", "40", "--rounds", "1", "--batch", "8")
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  ")]
    assert [r[0] for r in rows] == ["standard", "log_step_32"], out
    assert all(float(r[r.index(s) + 1]) > 0 for r in rows for s in ("unpickle", "csv", "total"))
    # frames as the sender makes them, read as the agent's backlog reads them
    out = _bench("bench_agent_stages.py", "--iterations", "200", "--rounds", "1", "--sender")
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  ")]
    assert [r[0] for r in rows] == ["standard", "log_step_32"], out
    assert all("read" in r and float(r[r.index("fold") + 1]) > 0 for r in rows), out


def test_bench_agent_flat_prints_both_workloads() -> None:
    """Smoke test: the two flat-out workloads of ``bench_agent_cpu.py`` alone."""
    out = _bench("bench_agent_flat.py", "--iterations", "400")
    assert "standard" in out and "32-metric log_step" in out and "dropped 0, 0" in out, out


def test_bench_agent_kernel_prints_both_workloads_and_the_append_cost() -> None:
    """Smoke test: the agent's system part by workload (no tracer attached), and the
    CPU a MiB appended against a MiB rewritten."""
    out = _bench(
        "bench_agent_kernel.py",
        "--iterations",
        "300",
        "--tool",
        "none",
        "--append",
        "--append-mib",
        "2",
    )
    assert "32-metric log_step" in out and "standard iteration" in out, out
    assert out.count("dropped 0") == 2 and "rewritten in place" in out, out


def test_bench_agent_group_prints_the_groups_share_of_a_core() -> None:
    """Smoke test: ``bench_agent_cpu.py``'s 8-run group line alone, every step written."""
    out = _bench("bench_agent_group.py", "--iterations", "300")
    assert "% of a core" in out and "dropped 0, written 2,400" in out, out


def test_bench_jsonl_parts_prints_each_part_of_both_workloads() -> None:
    """Smoke test at a tiny size; the parts' lines are checked against the encoder's."""
    out = _bench("bench_jsonl_parts.py", "--iterations", "200", "--rounds", "1")
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  ")]
    assert [r[0] for r in rows] == ["standard", "log_step_32"], out
    assert all(float(r[r.index(s) + 1]) > 0 for r in rows for s in ("msgspec", "sum")), out


def test_bench_frame_pack_and_agent_split_print_their_figures() -> None:
    """Smoke tests at tiny sizes; the packer's frame is checked against its events."""
    out = _bench("bench_frame_pack.py", "--iterations", "64", "--rounds", "1")
    lines = [ln for ln in out.splitlines() if "slices of" in ln]
    assert len(lines) == 4 and all("sender pickle" in r and "columns" in r for r in lines), out
    # the agent's whole CPU is read from /proc in clock ticks (10 ms): 2,000 iterations are
    # tens of milliseconds of it, so a nonzero figure is a real reading, not a rounding
    out = _bench(
        "bench_agent_split.py", "--iterations", "2000", "--only", "standard", "--jsonl-parts"
    )
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("  ")]
    assert [r[0] for r in rows] == ["standard"], out
    named = ("fold", "jsonl", "agent", "(j.encode", "j.msgspec", "j.write")
    assert all(float(r[r.index(s) + 1].rstrip(")")) > 0 for r in rows for s in named), out


@pytest.mark.slow  # torch's writer, four `aoff` processes, a worker pool (~40 s loaded)
def test_bench_scale_prints_each_figure_beside_tensorboard() -> None:
    """Smoke test at a tiny size of the thousands-of-runs benchmark: its files are torch's
    bytes, ls --where keeps what TensorBoard's way keeps, and every row has both sides."""
    out = _bench("bench_scale.py", "--quick", timeout=300)
    assert "built file == torch SummaryWriter's bytes (1000 records)" in out, out
    assert (
        "ls --where kept 5 runs, 5 of them among the 24 TensorBoard read, which its way kept 5 of"
        in out
    ), out
    rows = {r[0]: r for r in _table_rows(out, "what")}
    for what in (
        "aoff ls --where, first look (builds the index)",
        "aoff ls --where, warm (index checked by stats)",
        "read_scalars of one tag, workers=1",
        "read_scalars of one tag, workers=2",
        "aoff compare (read + IQM, bootstrap)",
    ):
        assert float(rows[what][1]) > 0 and float(rows[what][3]) > 0, out
    assert "workers scaling (workers=1 time / workers=N time): 1: 1.00x, 2: " in out, out
    assert "compare: 4 groups over 24 runs" in out, out


def test_bench_groupfold_prints_both_paths_and_their_ratio() -> None:
    out = _bench(
        "bench_groupfold.py", "--runs", "2", "--keys", "3", "--steps", "40", "--rounds", "1"
    )
    [row] = [ln.split() for ln in out.splitlines() if ln.strip().startswith("0 ")]
    assert len(row) == 4 and all(float(x) > 0 for x in row[1:]), out
