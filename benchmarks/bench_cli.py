"""How long ``aoff ls`` and ``aoff show`` take on big runs, and how fast the event reader is.

Generates, in a temporary folder (removed at the end unless ``--keep``):

* ``runs/``: ``--runs`` finished runs of ``--steps`` logged steps each (default 20 x
  100,000), TensorBoard only, with the demo's 36 tags;
* ``big/``: one finished run of ``--big-steps`` steps (default 1,000,000).

Event files are written with aoff's own encoder (``EventEncoder`` + TFRecord framing, the
bytes the TensorBoard backend writes) and each run's ``aoff-summary.json`` with the
pump's own :class:`~aoff._runfolder.summary._writer.RunSummary`, fed the same records: what a
finished run leaves, without running a logger for minutes.

Then times, as a user runs them (a fresh ``python -m aoff`` process, best of
``--repeat``): ``aoff ls runs``, ``aoff show big``; and the fallback for runs without a
summary (killed, or written by another tool): the scalar reader's throughput in MB/s of
event file (in-process, ``scan_files``) on the big run's file, ``aoff ls`` of the runs
with their summaries removed (it reads each file's two ends only), and ``aoff show`` of
the big run without its summary (the whole file, with the reader).

    python benchmarks/bench_cli.py                 # the issue's sizes (~3.5 GB of files)
    python benchmarks/bench_cli.py --quick         # 3 x 5,000 and 50,000 steps
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

from aoff._core._records import StepRecord
from aoff._runfolder.summary._writer import SUMMARY_NAME, RunSummary
from aoff._runfolder.tensorboard._encode import encode_records
from aoff._runfolder.tensorboard._events import FILE_VERSION, EventEncoder
from aoff._runfolder.tensorboard._scan import scan_files
from aoff._runfolder.tensorboard._tfrecord import frame_many

_TAG_TEXT = (
    "axis/iteration axis/env_steps_total train/q1_loss train/q2_loss train/actor_loss "
    "train/alpha_loss train/alpha train/entropy train/q1_mean train/q2_mean train/target_q "
    "train/grad_norm_critic train/grad_norm_actor train/lr reward/mean reward/success_rate "
    "reward/angle reward/velocity reward/torque episode/length episode/timeout_rate "
    "episode/terminated_rate timing/learner_wait_ms timing/learner_incremental_h2d_ms "
    "timing/learner_train_ms timing/learner_weight_sync_ms timing/collector_weight_sync_ms "
    "timing/collector_action_select_ms timing/collector_env_step_ms "
    "timing/collector_env_step_backend_ms timing/collector_env_step_reset_done_ms "
    "timing/collector_env_step_update_state_ms timing/collector_replay_ms "
    "timing/collector_sync_coordination_ms perf/steps_per_sec perf/iter_ms"
)
#: the demo's tags (``aoff demo``), in its order
TAGS = _TAG_TEXT.split()
STEPS_PER_ITERATION = 1024
BLOCK = 8192


def _version_event(wall: float) -> bytes:
    """``Event(wall_time=wall, file_version="brain.Event:2")``, serialised."""
    text = FILE_VERSION.encode()
    return b"\x09" + struct.pack("<d", wall) + b"\x1a" + bytes((len(text),)) + text


def write_run(run_dir: str, steps: int, seed: int, *, summary: bool = True) -> int:
    """One finished run of ``steps`` records; returns the event file's size."""
    os.makedirs(run_dir)
    rng = np.random.default_rng(seed)
    t0 = 1.7e9 + seed * 1e5
    path = os.path.join(run_dir, f"events.out.tfevents.{int(t0)}.bench.{seed}.0")
    acc = RunSummary(os.path.join(run_dir, SUMMARY_NAME), max_iterations=steps)
    encoder = EventEncoder()
    walk = np.zeros(len(TAGS))
    with open(path, "wb") as f:
        f.write(frame_many([_version_event(t0)]))
        for start in range(0, steps, BLOCK):
            n = min(BLOCK, steps - start)
            noise = rng.normal(scale=0.01, size=(n, len(TAGS))).cumsum(axis=0) + walk
            walk = noise[-1]
            it = np.arange(start + 1, start + n + 1, dtype=np.float64)
            noise[:, 0] = it
            noise[:, 1] = it * STEPS_PER_ITERATION
            records = [
                StepRecord(
                    step=int(i) * STEPS_PER_ITERATION,
                    iteration=int(i),
                    wall_time=t0 + float(i) * 0.05,
                    scalars=tuple(zip(TAGS, row, strict=True)),
                )
                for i, row in zip(it, noise.tolist(), strict=True)
            ]
            f.write(encode_records(encoder, records))
            if summary:
                acc.add(records)
    if summary:
        acc.write(acc.snapshot("finished"))
    return os.path.getsize(path)


def _timed(args: list[str], repeat: int) -> tuple[float, str]:
    best = math.inf
    out = ""
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "aoff", *args], capture_output=True, text=True, check=True
        )
        best = min(best, time.perf_counter() - t)
        out = proc.stdout
    return best, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--big-steps", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="3 runs x 5,000 and 50,000 steps")
    p.add_argument("--keep", action="store_true", help="keep the generated runs")
    a = p.parse_args()
    if a.quick:
        a.runs, a.steps, a.big_steps, a.repeat = 3, 5_000, 50_000, 1
    tmp = tempfile.mkdtemp(prefix="aoff-bench-cli-")
    try:
        t = time.perf_counter()
        sizes = [
            write_run(os.path.join(tmp, "runs", f"run{i:02d}"), a.steps, i) for i in range(a.runs)
        ]
        big_size = write_run(os.path.join(tmp, "big", "run"), a.big_steps, 999)
        print(
            f"generated {a.runs} x {a.steps:,} steps ({sum(sizes) / 1e6:,.0f} MB) and 1 x "
            f"{a.big_steps:,} steps ({big_size / 1e6:,.0f} MB) in {time.perf_counter() - t:.1f}s"
        )
        ls_s, ls_out = _timed(["ls", os.path.join(tmp, "runs")], a.repeat)
        assert len(ls_out.splitlines()) == a.runs + 1, ls_out
        print(
            f"aoff ls   ({a.runs} runs x {a.steps:,} steps, summaries):  {ls_s:6.2f} s  "
            "(target <= 1 s)"
        )
        show_s, show_out = _timed(["show", os.path.join(tmp, "big", "run")], a.repeat)
        assert f"{a.big_steps:,} records" in show_out, show_out
        print(
            f"aoff show (1 run x {a.big_steps:,} steps, summary):    {show_s:6.2f} s  "
            "(target <= 1 s)"
        )
        big_file = [
            os.path.join(tmp, "big", "run", f)
            for f in os.listdir(os.path.join(tmp, "big", "run"))
            if f.startswith("events.out")
        ]
        best = math.inf
        for _ in range(a.repeat):
            t = time.perf_counter()
            scan = scan_files(big_file)
            best = min(best, time.perf_counter() - t)
        assert len(scan.tags["reward/mean"].values) == a.big_steps
        print(
            f"event reader, no summary ({big_size / 1e6:,.0f} MB):     {best:6.2f} s  "
            f"= {big_size / best / 1e6:,.0f} MB/s  (target >= 100 MB/s)"
        )
        for i in range(a.runs):
            os.unlink(os.path.join(tmp, "runs", f"run{i:02d}", SUMMARY_NAME))
        ls2_s, ls2_out = _timed(["ls", os.path.join(tmp, "runs")], a.repeat)
        assert ls2_out.splitlines()[1:] == ls_out.splitlines()[1:], (ls_out, ls2_out)
        print(
            f"aoff ls without summaries ({sum(sizes) / 1e6:,.0f} MB of event files, "
            f"two ends each): {ls2_s:6.2f} s"
        )
        os.unlink(os.path.join(tmp, "big", "run", SUMMARY_NAME))
        show2_s, _ = _timed(["show", os.path.join(tmp, "big", "run")], 1)
        print(
            f"aoff show without summary ({big_size / 1e6:,.0f} MB): {show2_s:6.2f} s "
            f"= {big_size / show2_s / 1e6:,.0f} MB/s"
        )
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
