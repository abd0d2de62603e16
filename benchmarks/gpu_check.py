"""One prepared run of every CUDA check, for a machine with a GPU (CI has none).

aoff promises that logging CUDA tensors and CUDA histograms never synchronises the
training thread: values are stacked, copied to pinned memory with ``non_blocking=True``
and an event is recorded; the pump (in-process or in the agent) reads them once the
event has completed. None of that can be exercised without a device, so this script
gathers the checks in one place, each printing PASS or FAIL, in a few minutes:

``tests/gpu``            the pytest suite for CUDA tensors, histograms, EpisodeStats and
                         per-env vectors under
                         ``torch.cuda.set_sync_debug_mode("error")`` (thread pump, test
                         backends)
``agent-tensors``        the default ``pump="process"`` (the agent): 500 steps of 30 CUDA
                         tensors and a CUDA histogram a step under the same debug mode;
                         the JSONL and TensorBoard files are read back and every value
                         compared with the value at the call
``episode-stats``        a training-shaped loop with 4,096 environments in the agent:
                         ``aoff.torch.EpisodeStats.update`` every env step, ``log_to``
                         and a ``log_step`` with a per-env ``(4096,)`` vector every
                         iteration, under the same debug mode; the JSONL rows are
                         compared with a host reference computed afterwards
``launch-bound``         ``bench_cuda_tensors.py`` on a small SAC-sized update (batch 256,
                         width 256): aoff's deferred copy vs ``.item()`` per value; passes
                         when aoff costs less than the ``.item()`` habit per step
``gpu-bound``            the same benchmark with a large update (batch 8192, width 4096):
                         the device is the bottleneck, and aoff's end-to-end step time
                         stays within 5 % of logging nothing

    python benchmarks/gpu_check.py [--quick]

Without CUDA it prints one SKIP line and exits 0. Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _run(name: str, cmd: list[str], timeout: float) -> tuple[bool, str]:
    print(f"--- {name}: {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    try:
        res = subprocess.run(cmd, cwd=ROOT, timeout=timeout, text=True, capture_output=True)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s"
    out = (res.stdout + res.stderr).strip()
    print(out[-4000:], flush=True)
    return res.returncode == 0, f"exit {res.returncode} in {time.monotonic() - t0:.0f} s"


def check_agent_tensors(steps: int, device: str = "cuda") -> tuple[bool, str]:
    """The agent path: CUDA tensors and a CUDA histogram, read back from disk."""
    import torch
    from tensorboard.backend.event_processing.event_accumulator import (
        HISTOGRAMS,
        SCALARS,
        EventAccumulator,
    )

    from aoff import OffPolicyLogger

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    vals = torch.arange(30, dtype=torch.float32, device=dev)
    acts = torch.randn(10_000, device=dev)
    with tempfile.TemporaryDirectory() as tmp:
        log = OffPolicyLogger(
            log_backend="tensorboard",
            log_dir=tmp,
            backends=("jsonl",),
            refresh_per_second=4,
            handle_sigterm=False,
        )
        log.start()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
        try:
            for i in range(1, steps + 1):
                metrics = {f"m{j}": vals[j] for j in range(29)}
                log.log_histogram("actions", acts)  # written at the next log_step's step
                log.log_step(i, metrics, reward=vals[29])
                vals.add_(1000.0)  # in place, right after the call: records keep the call's
                acts.mul_(1.0001)
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
        report = log.finish()
        if not report.complete or report.invalid_values:
            return False, f"report not complete: {report}"
        rows = [json.loads(line) for line in Path(tmp, "metrics.jsonl").read_text().splitlines()]
        by_it = {int(r["iteration"]): r for r in rows}
        bad = 0
        for i in range(1, steps + 1):
            base = (i - 1) * 1000.0
            r = by_it.get(i)
            if r is None or any(
                not math.isclose(float(r[f"train/m{j}"]), base + j, rel_tol=1e-6) for j in range(29)
            ):
                bad += 1
        acc = EventAccumulator(tmp, size_guidance={SCALARS: 0, HISTOGRAMS: 0})
        acc.Reload()
        hist_tags = acc.Tags().get("histograms", [])
        n_hist = sum(len(acc.Histograms(t)) for t in hist_tags)
    if bad:
        return False, f"{bad} of {steps} steps missing or wrong in metrics.jsonl"
    if n_hist != steps:
        return False, f"{n_hist} histogram records for {steps} steps ({hist_tags})"
    return True, f"{steps} steps x 30 CUDA values and {n_hist} CUDA histograms, no sync"


def check_episode_stats(iters: int, device: str = "cuda") -> tuple[bool, str]:
    """EpisodeStats and a per-env vector, no sync, against a host reference."""
    import torch

    from aoff import OffPolicyLogger
    from aoff.torch import EpisodeStats

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    n_envs, n_steps = 4096, 24
    g = torch.Generator(device=dev).manual_seed(0)
    kept: list[tuple[Any, Any, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        log = OffPolicyLogger(
            log_backend="none", log_dir=tmp, backends=("jsonl",), handle_sigterm=False
        )
        log.start()
        stats = EpisodeStats(n_envs, dev)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
        try:
            for it in range(iters):
                for _ in range(n_steps):
                    r = torch.rand(n_envs, device=dev, generator=g)
                    term = torch.rand(n_envs, device=dev, generator=g) < 0.02
                    trunc = torch.rand(n_envs, device=dev, generator=g) < 0.01
                    stats.update(r, term, trunc)
                    kept.append((r, term, trunc))
                stats.log_to(log)
                log.log_step(it, {"per_env": r})  # the last step's rewards, a (4096,) vector
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
        report = log.finish()
        if not report.complete or report.invalid_values:
            return False, f"report not complete: {report}"
        rows = [json.loads(line) for line in Path(tmp, "metrics.jsonl").read_text().splitlines()]
    by_it = {int(r["iteration"]): r for r in rows if "train/per_env" in r}
    ret = torch.zeros(n_envs, dtype=torch.float32)
    length = torch.zeros(n_envs, dtype=torch.int64)
    bad = []
    for it in range(iters):
        returns, lengths = [], []
        for r, term, trunc in kept[it * n_steps : (it + 1) * n_steps]:
            ret += r.cpu()
            length += 1
            done = (term | trunc).cpu()
            returns += ret[done].tolist()
            lengths += length[done].tolist()
            ret[done] = 0
            length[done] = 0
        row = by_it.get(it, {})
        want = (len(returns), sum(returns) / len(returns), sum(lengths) / len(lengths))
        got = (row.get("episode/count"), row.get("episode/return"), row.get("episode/length"))
        vec = kept[(it + 1) * n_steps - 1][0].double().mean().item()
        if (
            got[0] != want[0]
            or not math.isclose(got[1] or 0.0, want[1], rel_tol=1e-9)
            or not math.isclose(got[2] or 0.0, want[2], rel_tol=1e-9)
            or not math.isclose(row.get("train/per_env", math.nan), vec, rel_tol=1e-6)
        ):
            bad.append((it, got, want))
    if bad:
        return False, f"{len(bad)} of {iters} iterations differ from the host reference: {bad[:2]}"
    return True, f"{iters} iterations x {n_steps} env steps x {n_envs} envs, no sync, exact"


def bench(name: str, args: list[str], timeout: float, test: Any) -> tuple[bool, str]:
    out = Path(tempfile.mkdtemp()) / f"{name}.json"
    cmd = [sys.executable, str(HERE / "bench_cuda_tensors.py"), *args, "--json", str(out)]
    ok, why = _run(name, cmd, timeout)
    if not ok:
        return ok, why
    summary = json.loads(out.read_text())["summary"]
    return test(summary)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    ap.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="run only the agent read-back check on CPU tensors (checks this script itself)",
    )
    args = ap.parse_args()
    if args.cpu_dry_run:
        ok, why = check_agent_tensors(50, "cpu")
        print(f"agent-tensors   {'PASS' if ok else 'FAIL':<7} {why} (CPU dry run)")
        ok2, why = check_episode_stats(5, "cpu")
        print(f"episode-stats   {'PASS' if ok2 else 'FAIL':<7} {why} (CPU dry run)")
        return 0 if ok and ok2 else 1
    try:
        import torch
    except ImportError:
        print("SKIP gpu_check: torch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("SKIP gpu_check: no CUDA device")
        return 0
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    steps = "300" if args.quick else "1000"
    rounds = "1" if args.quick else "3"
    env_py = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider"]
    results: list[tuple[str, bool, str]] = []

    ok, why = _run("tests/gpu", [*env_py, "tests/gpu"], 240)
    results.append(("tests/gpu", ok, why))

    try:
        ok, why = check_agent_tensors(200 if args.quick else 500)
    except Exception as exc:  # a failed check is a line in the table, not a crash
        ok, why = False, f"{type(exc).__name__}: {exc}"
    results.append(("agent-tensors", ok, why))

    try:
        ok, why = check_episode_stats(20 if args.quick else 60)
    except Exception as exc:
        ok, why = False, f"{type(exc).__name__}: {exc}"
    results.append(("episode-stats", ok, why))

    def launch_bound(s: dict[str, dict[str, float]]) -> tuple[bool, str]:
        t, it = s["tensors"]["per_step_us"], s["item"]["per_step_us"]
        none = s["none"]["per_step_us"]
        return t < it, f"per step: none {none:.0f} us, aoff {t:.0f} us, .item() {it:.0f} us"

    def gpu_bound(s: dict[str, dict[str, float]]) -> tuple[bool, str]:
        t, none = s["tensors"]["per_step_us"], s["none"]["per_step_us"]
        why = f"per step: none {none:.0f} us, aoff {t:.0f} us ({t / none - 1:+.1%})"
        return t <= none * 1.05, why

    common = ["--steps", steps, "--rounds", rounds]
    results.append(("launch-bound", *bench("launch-bound", common, 240, launch_bound)))
    big = ["--steps", "200", "--rounds", "1", "--batch", "8192", "--width", "4096"]
    results.append(("gpu-bound", *bench("gpu-bound", big, 240, gpu_bound)))

    print("\ncheck           result  detail")
    for name, ok, why in results:
        print(f"{name:<15} {'PASS' if ok else 'FAIL':<7} {why}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
