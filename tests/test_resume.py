"""Resume at a checkpoint step (``resume_step=N``): a preempted run continued in its folder.

Read back with each backend's own reader: TensorBoard's ``EventAccumulator`` and the real
TensorBoard server (its default loader), ``metrics.jsonl``, ``progress.csv`` through
pandas, and W&B's offline run files.
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from aoff import OffPolicyLogger
from aoff._backends._base import BackendContext
from aoff._core._config import HParams
from aoff._core._records import RunConfig, StepRecord
from aoff._faces._resume import last_logged_step
from aoff._pump._options import PumpMode
from aoff.testing import RecordingDisplay, wait_until

from .conftest import hold_still, read_jsonl, tensorboard_accumulator
from .tbserver import Server, tensorboard_server

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60.0


# -- reading a run back ------------------------------------------------------------------------
def tb_steps(log_dir: Path, tag: str = "axis/iteration") -> list[int]:
    acc = tensorboard_accumulator(log_dir)
    events = acc.Scalars(tag)
    assert [int(e.value) for e in events] == [e.step for e in events]
    return [e.step for e in events]


def jsonl_steps(log_dir: Path) -> list[int]:
    rows = read_jsonl(log_dir / "metrics.jsonl")
    assert all(r["iteration"] == r["step"] for r in rows)
    return [int(r["step"]) for r in rows]


def csv_steps(log_dir: Path) -> list[int]:
    pd: Any = importlib.import_module("pandas")  # untyped (no pandas-stubs): used as Any
    frame = pd.read_csv(log_dir / "progress.csv")
    assert list(frame.columns[:3]) == ["step", "iteration", "wall_time"]
    assert (frame["step"] == frame["axis/iteration"]).all()
    return [int(s) for s in frame["step"]]


def run_steps(log: OffPolicyLogger, first: int, last: int) -> None:
    for i in range(first, last + 1):
        log.log_step(i, {"critic_loss": 1.0 / i}, reward=float(i % 97))


def thread_logger(log_dir: Path, **kw: Any) -> OffPolicyLogger:
    return OffPolicyLogger(
        log_dir=log_dir,
        backends=("jsonl", "csv"),  # and the seed's TensorBoard (log_backend default)
        display=RecordingDisplay(),
        handle_sigterm=False,
        pump="thread",
        **kw,
    )


# -- the preemption: SIGKILL after step 800, resume at the checkpoint (500) --------------------
def _child(log_dir: Path, first: int, last: int, resume: int, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.resume_child",
        str(log_dir),
        str(first),
        str(last),
        str(resume),
        "process",
        *extra,
    ]


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies do not count: the agent
    is reparented when its training process is killed, and may wait to be reaped)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _last_jsonl_step(path: Path) -> int:
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(lines):
        try:
            return int(json.loads(line)["step"])
        except ValueError:
            continue
    return 0


def preempt(log_dir: Path) -> None:
    """Log 1..800 in a child (default process pump), SIGKILL it once step 800 is on disk,
    and wait for its agent to write what it received and exit."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        _child(log_dir, 1, 800, -1, "hang"),
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:

        def reached() -> bool:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                pytest.fail(f"the child exited with {proc.returncode}: {err[-2000:]}")
            return _last_jsonl_step(log_dir / "metrics.jsonl") >= 800

        wait_until(reached, timeout=TIMEOUT, interval=0.02, what="step 800 in metrics.jsonl")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=TIMEOUT)
        wait_until(  # the agent: EOF, writes what it got, exits
            lambda: not _group_alive(proc.pid),
            timeout=TIMEOUT,
            interval=0.02,
            what="the agent to exit after the kill",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


def served_steps(server: Server, run: str, n: int) -> list[int]:
    """``axis/iteration``'s steps from the server's scalars API, once it has ``n``."""

    def probe() -> list[int] | None:
        if len(server.scalars(run, "axis/iteration")) < n:
            return None
        hold_still(1.5, "one more reload of the server: nothing more may come")
        return [int(p[1]) for p in server.scalars(run, "axis/iteration")]

    return server.until(probe, f"{n} points")


@pytest.mark.slow  # two training processes with their agents, and the real TensorBoard server
def test_preempted_run_resumes_at_its_checkpoint(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    log_dir = runs / "sac_pendulum_s1"
    preempt(log_dir)
    assert jsonl_steps(log_dir) == list(range(1, 801))
    assert csv_steps(log_dir) == list(range(1, 801))
    assert tb_steps(log_dir) == list(range(1, 801))

    # the new process: resume at the checkpoint (500) and log 501..1000
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        _child(log_dir, 501, 1000, 500),
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]

    want = list(range(1, 1001))
    assert jsonl_steps(log_dir) == want
    assert csv_steps(log_dir) == want
    assert tb_steps(log_dir) == want  # TensorBoard's reader: points 501..800 purged
    events = sorted(log_dir.glob("events.out.tfevents.1*"))
    assert len(events) == 2  # a new file; the old one is kept
    # the final metrics are the resumed run's: nothing from the killed session is left
    acc = tensorboard_accumulator(log_dir)
    assert [e.step for e in acc.Scalars("hparams/reward_mean_last")] == [1000]
    assert acc.Scalars("hparams/reward_mean_best")[0].value == 96.0

    # a second run with other keys: the HParams view shows the union (SB3#1099)
    with thread_logger(runs / "sac_pendulum_s2", config={"lr": 1e-3, "gamma": 0.9}) as log:
        run_steps(log, 1, 3)

    with tensorboard_server(runs) as server:
        served = served_steps(server, "sac_pendulum_s1", 1000)
        experiment = server.get("/data/plugin/hparams/experiment", {"experimentName": ""})
    assert collections.Counter(served) == collections.Counter(want)  # each step once
    names = {h["name"] for h in experiment["hparamInfos"]}
    assert {"lr", "seed", "gamma", "algo", "env"} <= names
    lr = next(h for h in experiment["hparamInfos"] if h["name"] == "lr")
    assert lr["domainInterval"] == {"minValue": 3e-4, "maxValue": 1e-3}
    metrics = {m["name"]["tag"] for m in experiment["metricInfos"]}
    assert {"hparams/reward_mean_last", "hparams/reward_mean_best", "reward/mean"} <= metrics


# -- in one process (thread pump) --------------------------------------------------------------
def test_resume_in_thread_mode_and_twice(tmp_path: Path) -> None:
    with thread_logger(tmp_path, config={"lr": 0.1}) as log:
        run_steps(log, 1, 80)
    with thread_logger(tmp_path, config={"lr": 0.1}, resume_step=50) as log:
        run_steps(log, 51, 100)
    want = list(range(1, 101))
    assert jsonl_steps(tmp_path) == want
    assert csv_steps(tmp_path) == want
    assert tb_steps(tmp_path) == want
    assert last_logged_step(str(tmp_path))[:2] == (100, ["metrics.jsonl", "progress.csv"])
    # resumed again, before the first resume's step: a third file, still one point a step
    with thread_logger(tmp_path, resume_step=70) as log:
        run_steps(log, 71, 90)
    want = list(range(1, 91))
    assert jsonl_steps(tmp_path) == want
    assert csv_steps(tmp_path) == want
    assert tb_steps(tmp_path) == want
    # the TensorBoard files alone give the same last step (purges taken into account)
    (tmp_path / "metrics.jsonl").unlink()
    (tmp_path / "progress.csv").unlink()
    tb = "TensorBoard event files"
    assert last_logged_step(str(tmp_path)) == (90, [tb], [tb])
    with pytest.raises(ValueError, match=r": 90 \(read from TensorBoard event files\)"):
        thread_logger(tmp_path, resume_step=91)


@pytest.mark.parametrize("pump", ["thread", "process"])
def test_resume_step_bad_input(tmp_path: Path, pump: PumpMode) -> None:
    def make(log_dir: Path | str, resume_step: Any) -> OffPolicyLogger:
        return OffPolicyLogger(
            log_dir=log_dir,
            log_backend="tensorboard",
            backends=("jsonl",),
            handle_sigterm=False,
            pump=pump,
            resume_step=resume_step,
        )

    with pytest.raises(ValueError, match=r"resume_step must be >= 0, got -1"):
        make(tmp_path, -1)
    for bad in (1.5, "5", True):
        with pytest.raises(ValueError, match=r"resume_step must be an int step"):
            make(tmp_path, bad)
    with pytest.raises(ValueError, match=r"resume_step=5 needs log_dir"):
        OffPolicyLogger(log_backend="none", handle_sigterm=False, pump=pump, resume_step=5)
    empty = tmp_path / "empty"
    with pytest.raises(ValueError, match=r"resume_step=5: there is no run to resume in .*empty"):
        make(empty, 5)
    assert not empty.exists()  # nothing was created
    with thread_logger(tmp_path) as log:
        run_steps(log, 1, 30)
    before = (tmp_path / "metrics.jsonl").read_bytes()
    with pytest.raises(
        ValueError,
        match=r"resume_step=31 is beyond the last step logged in .*: 30 "
        r"\(read from metrics.jsonl, progress.csv\)",
    ):
        make(tmp_path, 31)
    assert (tmp_path / "metrics.jsonl").read_bytes() == before  # nothing was cut
    with make(tmp_path, 30) as log:  # the last step itself: nothing to cut
        log.log_step(31)
    assert jsonl_steps(tmp_path) == list(range(1, 32))


def test_cut_drops_torn_lines_and_keeps_the_csv_header(tmp_path: Path) -> None:
    with thread_logger(tmp_path) as log:
        run_steps(log, 1, 10)
    with open(tmp_path / "metrics.jsonl", "ab") as f:
        f.write(b'{"step": 11, "iteration": 11, "wall')  # a crash mid-line
    with open(tmp_path / "progress.csv", "ab") as f:
        f.write(b"11,11,17")
    header = (tmp_path / "progress.csv").read_text().splitlines()[0]
    with thread_logger(tmp_path, resume_step=4) as log:
        run_steps(log, 5, 6)
    assert jsonl_steps(tmp_path) == [1, 2, 3, 4, 5, 6]
    assert csv_steps(tmp_path) == [1, 2, 3, 4, 5, 6]
    assert (tmp_path / "progress.csv").read_text().splitlines()[0] == header


# -- W&B: the resumed run has the stored id ----------------------------------------------------
@pytest.mark.slow  # starts wandb's service process (twice)
def test_wandb_offline_resume_keeps_one_run_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wandb = pytest.importorskip("wandb")
    from aoff._backends._wandb import RUN_ID_FILE, WandbBackend
    from aoff.testing import read_wandb_config, read_wandb_history, wait_for_wandb_runs
    from aoff.testing._wandb_offline import read_run_id as read_wandb_run_id

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = RunConfig(algo_name="SAC", env_name="Pendulum-v1", num_envs=8)

    def records(first: int, last: int) -> list[StepRecord]:
        return [
            StepRecord(s, s, 1000.0 + s, (("reward/mean", float(s)),))
            for s in range(first, last + 1)
        ]

    async def session(first: int, last: int, *, resume: bool, late: dict[str, Any]) -> None:
        hp = HParams({"lr": 3e-4})
        backend = WandbBackend(project="aoff-test", dir=tmp_path, resume=resume)
        await backend.open(BackendContext(config=cfg, hparams=hp))
        await backend.write(records(first, last))
        hp.merge(late)  # log_config: sent with the next batch, or at close
        await backend.close()

    try:
        anyio.run(lambda: session(1, 8, resume=False, late={"buffer/size": 100}))
        stored = (tmp_path / RUN_ID_FILE).read_text().strip()
        anyio.run(lambda: session(6, 10, resume=True, late={"late": "yes"}))
    finally:
        if wandb.run is not None:
            wandb.run.finish()
    # W&B's own service process may still be writing a run file when finish() has
    # returned (CI once read the first session's file before its run record was in):
    # read them once each holds its exit record
    files = wait_for_wandb_runs(tmp_path, 2)
    assert {read_wandb_run_id(f) for f in files} == {stored}  # one run id
    assert (tmp_path / RUN_ID_FILE).read_text().strip() == stored
    first, second = (read_wandb_config(f) for f in files)
    seed = {"algo": "SAC", "env": "Pendulum-v1", "num_envs": 8, "obs_dim": 0, "action_dim": 0}
    assert first == {**seed, "max_iterations": 1500, "lr": 3e-4, "buffer/size": 100}
    assert second == {**seed, "max_iterations": 1500, "lr": 3e-4, "late": "yes"}
    assert [r["_step"] for r in read_wandb_history(files[1])] == [6, 7, 8, 9, 10]
