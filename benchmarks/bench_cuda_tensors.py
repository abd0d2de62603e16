"""Step-time cost of logging 30 tensor values a step: aoff's deferred copy vs ``.item()``.

Each step runs a small SAC-sized learner update on the device (a 3-layer MLP, batch
256: forward, backward, Adam) and produces 30 one-element tensors (losses, means, grad
norms ...). Modes, interleaved over ``--rounds``:

``none``      the update only, nothing logged (the floor)
``tensors``   ``log.log_step(i, {k: tensor ...}, reward=tensor, ...)``: aoff gathers the
              call's CUDA tensors (one stack, one async copy to pinned memory, one event)
              and never waits for the device
``item``      the usual peer-logger pattern: ``.item()`` on each value, then log floats
              (30 device syncs a step)
``one_sync``  a careful user: one ``torch.stack(values).tolist()`` (one sync a step)

For each mode: the median and p99 of the per-step time seen by the training thread, and
the end-to-end time of all steps (``torch.cuda.synchronize()`` once at the end), from
which the overhead over ``none`` is reported. With ``--check`` (default on CUDA) the
``none`` and ``tensors`` modes run under ``torch.cuda.set_sync_debug_mode("error")``, so any
synchronising call in aoff's hot path or pump raises.

    python benchmarks/bench_cuda_tensors.py [--steps 1000] [--rounds 3] [--device cuda]
        [--json out.json]

``--device cpu`` runs the same loop on CPU tensors (aoff reads them with ``.item()`` at
the call; no device is involved), to measure the CPU-side cost only.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from aoff import OffPolicyLogger
from aoff.testing import MemoryBackend, RecordingDisplay

N_VALUES = 30
MODES = ("none", "tensors", "item", "one_sync")


class Learner:
    """A SAC-sized update that yields 30 one-element tensors (no sync inside)."""

    def __init__(self, device: torch.device, batch: int = 256, width: int = 256) -> None:
        g = torch.Generator(device="cpu").manual_seed(0)
        self.x = torch.randn(batch, 32, generator=g).to(device)
        self.y = torch.randn(batch, 1, generator=g).to(device)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, 1),
        ).to(device)
        # capturable=True keeps Adam's step counter on the device (no host sync)
        self.opt = torch.optim.Adam(
            self.net.parameters(), lr=3e-4, capturable=device.type == "cuda"
        )

    def step(self) -> tuple[dict[str, torch.Tensor], torch.Tensor, dict[str, torch.Tensor]]:
        out = self.net(self.x)
        loss = torch.nn.functional.mse_loss(out, self.y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            metrics: dict[str, torch.Tensor] = {"loss": loss.detach(), "q_mean": out.mean()}
            metrics["q_max"] = out.max()
            metrics["q_min"] = out.min()
            metrics["q_std"] = out.std()
            for i, p in enumerate(self.net.parameters()):
                assert p.grad is not None
                metrics[f"grad_norm_{i}"] = p.grad.norm()
                metrics[f"param_norm_{i}"] = p.norm()
            for i in range(21 - len(metrics)):
                metrics[f"feature_{i}"] = out[i, 0]
            reward = self.y.mean()
            components = {f"c{i}": self.y[i, 0] for i in range(4)}
        timings = {
            "train_time": loss.detach() * 0 + 0.004,
            "wait_time": loss.detach() * 0 + 0.0002,
            "learner_incremental_h2d_time": loss.detach() * 0 + 0.0001,
            "weight_sync_time": loss.detach() * 0 + 0.0003,
        }
        return metrics, reward, {**components, **{"_t_" + k: v for k, v in timings.items()}}


def split(extra: dict[str, torch.Tensor]) -> tuple[dict[str, Any], dict[str, Any]]:
    comps = {k: v for k, v in extra.items() if not k.startswith("_t_")}
    times = {k[3:]: v for k, v in extra.items() if k.startswith("_t_")}
    return comps, times


def run_mode(
    mode: str, device: torch.device, steps: int, warmup: int, check: bool, size: tuple[int, int]
) -> dict[str, float]:
    learner = Learner(device, *size)
    mem = MemoryBackend()
    log = (
        None
        if mode == "none"
        else OffPolicyLogger(
            log_backend="none", backends=[mem], display=RecordingDisplay(), handle_sigterm=False
        )
    )
    sync: Callable[[], None] = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def one(i: int) -> None:
        metrics, reward, extra = learner.step()
        comps, times = split(extra)
        n = len(metrics) + 1 + len(comps) + len(times)
        assert n == N_VALUES, n
        if log is None:
            return
        if mode == "tensors":
            log.log_step(i, metrics, reward=reward, reward_components=comps, **times)
            return
        if mode == "item":
            m = {k: v.item() for k, v in metrics.items()}
            r = reward.item()
            c = {k: v.item() for k, v in comps.items()}
            t = {k: v.item() for k, v in times.items()}
        else:  # one_sync
            keys = [*metrics, "__r", *comps, *times]
            flat = torch.stack([*metrics.values(), reward, *comps.values(), *times.values()])
            vals = dict(zip(keys, flat.tolist(), strict=True))
            m = {k: vals[k] for k in metrics}
            r = vals["__r"]
            c = {k: vals[k] for k in comps}
            t = {k: vals[k] for k in times}
        log.log_step(i, m, reward=r, reward_components=c, **t)

    for i in range(warmup):
        one(i)
    sync()
    gc.collect()
    samples = [0] * steps
    clock = time.perf_counter_ns
    # "none" runs under the mode too: a sync in the workload itself shows up there first
    debug = check and mode in ("none", "tensors") and device.type == "cuda"
    if debug:
        torch.cuda.set_sync_debug_mode("error")
    try:
        start = clock()
        for i in range(steps):
            t0 = clock()
            one(warmup + i)
            samples[i] = clock() - t0
        sync_start = clock()
        if debug:
            torch.cuda.set_sync_debug_mode("default")
        sync()
        end = clock()
    finally:
        if debug:
            torch.cuda.set_sync_debug_mode("default")
    if log is not None:
        report = log.finish()
        assert report.complete and report.invalid_values == 0, report
        assert len(mem.records) == warmup + steps, len(mem.records)
    samples.sort()
    return {
        "median_us": statistics.median(samples) / 1000,
        "p99_us": samples[int(steps * 0.99)] / 1000,
        "loop_ms": (sync_start - start) / 1e6,
        "total_ms": (end - start) / 1e6,
        "per_step_us": (end - start) / steps / 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-check", dest="check", action="store_false")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)  # the CPU cost of logging, not of a contended matmul
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_cuda_tensors: CUDA is not available (use --device cpu for the CPU cost)")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device: {name}; torch {torch.__version__}; {args.steps} steps x {N_VALUES} values")
    results: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            size = (args.batch, args.width)
            results[mode].append(run_mode(mode, device, args.steps, args.warmup, args.check, size))
    summary: dict[str, dict[str, float]] = {}
    for mode in MODES:
        rs = results[mode]
        summary[mode] = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
    floor = summary["none"]["per_step_us"]
    head = f"{'mode':<10} {'step median':>12} {'step p99':>10} {'end-to-end/step':>16}"
    print(f"{head} {'overhead':>10}")
    for mode in MODES:
        s = summary[mode]
        over = s["per_step_us"] - floor
        s["overhead_us"] = over
        print(
            f"{mode:<10} {s['median_us']:10.1f}us {s['p99_us']:8.1f}us "
            f"{s['per_step_us']:14.1f}us {over:+9.1f}us"
        )
    if args.check and device.type == "cuda":
        print('none and tensors modes ran under torch.cuda.set_sync_debug_mode("error"): no sync')
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "steps": args.steps, "summary": summary}, f, indent=2)


if __name__ == "__main__":
    main()
