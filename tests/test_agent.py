"""The agent (``pump="process"``): the pump's work in a helper process.

Every test reads the run's TensorBoard and JSONL files back. The agent's own code runs
in another process, so these tests drive the public faces only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aoff import AsyncOffPolicyLogger, FinishReport, OffPolicyLogger
from aoff._faces._side import AgentSide
from aoff.testing import Probe, await_until, probe, wait_until
from aoff.testing._faults import finish_grace, kill_agent, put_event, watch_buffer

from .conftest import (
    ahold_still,
    alog_until_the_loss_is_seen,
    hold_still,
    jsonl_agent_logger,
    log_until_the_loss_is_seen,
)

# these tests count events exactly (see conftest.no_cost_events)
pytestmark = pytest.mark.usefixtures("no_cost_events")


def workload_iterate() -> Any:
    """``benchmarks/_workload.py``'s ``iterate`` (``n`` standard iterations on a logger):
    the benchmarks' folder is not a package, so it is imported from its path."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        from _workload import iterate
    finally:
        sys.path.pop(0)
    return iterate


ROOT = Path(__file__).resolve().parents[1]


def jsonl_rows(run: Path) -> list[dict[str, Any]]:
    with open(run / "metrics.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def tb_scalars(run: Path) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def script_sequence(log: Any, n: int) -> None:
    """A fixed, varied call sequence (every kind of call, a bad value, big and small)."""
    log.log_buffer_fill(100, 1000)
    log.start_training_timer()
    for i in range(1, n + 1):
        log.update_collector_timing({"env_step_ms": i % 7 * 0.5, "replay_ms": 0.25})
        log.update_done_rates(timeout_rate=(i % 3) / 10, terminated_rate=0.05)
        log.log_collector(total_steps=i * 64, buffer_size=i * 64 + 1000, mean_reward=-i * 0.5)
        if i % 10 == 0:
            log.update_ep_length(200.0)
            log.log_status(f"iteration {i}")
        log.log_step(
            i,
            {"q_loss": 1.0 / i, "actor_loss": -float(i), "bad": "nan?" if i == 5 else 0.5},
            reward=-float(i),
            reward_components={"upright": 0.5 * i},
            train_time=0.004,
            extra_info={"throughput_steps": 64},
        )


def test_process_and_thread_mode_write_identical_records(tmp_path: Path) -> None:
    runs = {}
    for mode in ("process", "thread"):
        run = tmp_path / mode
        log = OffPolicyLogger(
            log_dir=run,
            backends=("jsonl",),
            log_backend="tensorboard",
            pump=mode,
            refresh_per_second=4,
            handle_sigterm=False,
        )
        if mode == "process":
            assert probe(log).pump_place == "agent"
        log.start()
        script_sequence(log, 300)
        report = log.finish()
        assert report.steps == 300 and report.complete and report.invalid_values == 1
        runs[mode] = (
            [{k: v for k, v in r.items() if k != "wall_time"} for r in jsonl_rows(run)],
            tb_scalars(run),
        )
    assert runs["process"][0] == runs["thread"][0]
    assert len(runs["process"][0]) == 300
    assert runs["process"][1] == runs["thread"][1]


@pytest.mark.anyio
async def test_async_face_in_process_mode_writes_everything(tmp_path: Path) -> None:
    async with AsyncOffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), handle_sigterm=False
    ) as log:
        assert probe(log).pump_place == "agent"
        for i in range(1, 501):
            await log.log_step(i, {"x": float(i)})
        await log.aflush()
        assert len(jsonl_rows(tmp_path)) == 500  # flushed means on disk
    report = probe(log).report
    assert report is not None and report.steps == 500
    assert [s for s, _ in tb_scalars(tmp_path)["train/x"]] == list(range(1, 501))


@pytest.mark.slow
def test_burst_from_four_threads_loses_nothing_with_default_settings(tmp_path: Path) -> None:
    log = OffPolicyLogger(log_dir=tmp_path, backends=("jsonl",), handle_sigterm=False)
    log.start()
    per = 50_000

    def produce(t: int) -> None:
        for i in range(per):
            log.log_step(t * 1_000_000 + i)

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    report = log.finish()
    assert report.dropped_events == 0 and report.steps == 4 * per, report
    rows = jsonl_rows(tmp_path)
    assert len(rows) == 4 * per
    by_thread: list[list[int]] = [[], [], [], []]
    for r in rows:
        by_thread[r["iteration"] // 1_000_000].append(r["iteration"] % 1_000_000)
    assert all(seq == list(range(per)) for seq in by_thread)


def test_a_finish_that_gives_up_on_a_frozen_agent_says_so_once_and_folds_nothing_here(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    threads_started: Callable[..., set[str]],
) -> None:
    """finish() gives up on an agent it hears nothing from and closes the link; the
    shipper thread's next round must not read that closed link as a lost agent (it
    said "the agent process is gone ... logging goes on in this process" after finish()
    had returned, and started a pump here that folded the unsent steps)."""
    log = jsonl_agent_logger(tmp_path / "run", display="none", finish_timeout=0.2)
    p = probe(log)
    for i in range(1, 101):
        log.log_step(i, {"x": float(i)})
    log.flush()
    kill_agent(log, signal.SIGSTOP)  # it can neither fold nor answer
    for i in range(101, 201):
        log.log_step(i, {"x": float(i)})
    with finish_grace(0.3):
        report = log.finish()  # killed the stopped agent on its way out
    assert report.partial and report.steps == 100, report
    hold_still(1.5, "the shipper thread's rounds after finish() returned")
    err = capfd.readouterr().err
    assert err.count("finish() gave up waiting") == 1, err
    assert "100 steps the agent received were not confirmed written" in err, err
    assert report.backend_lost == {"jsonl": 100}
    assert "agent process is gone" not in err, err
    assert p.agent_lost is None and p.pump_place == "agent"
    assert not threads_started("aoff-pump")
    assert [r["iteration"] for r in jsonl_rows(tmp_path / "run")] == list(range(1, 101))


def test_an_agent_frozen_before_its_first_answer_loses_every_step_it_received(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An agent that never answered (frozen, or starved on a loaded machine) named no
    backend in an ack: what it received is still lost to each of the run's backends,
    and the report is not complete (it said "complete, 0 steps, 0 events not processed"
    of a 40,000-step run whose agent was too slow to answer at load 26)."""
    log = jsonl_agent_logger(tmp_path / "run", display="none", finish_timeout=0.2)
    kill_agent(log, signal.SIGSTOP)  # before it could fold or answer anything
    for i in range(1, 101):
        log.log_step(i, {"x": float(i)})
    with finish_grace(0.3):
        report = log.finish()
    assert not report.complete and report.partial and report.steps == 0, report
    assert report.backend_lost == {"jsonl": 100}, report
    err = capfd.readouterr().err
    assert "100 steps the agent received were not confirmed written" in err, err


def _async_agent_logger(run: Path, **kw: Any) -> AsyncOffPolicyLogger:
    """An async logger, its pump in the agent, writing JSONL (and TensorBoard) into
    ``run``; no dashboard, SIGTERM handler or system metrics."""
    return AsyncOffPolicyLogger(
        log_dir=run,
        backends=("jsonl",),
        handle_sigterm=False,
        display="none",
        system_interval=0,
        **kw,
    )


@pytest.mark.anyio
async def test_an_async_finish_that_gives_up_on_a_frozen_agent_says_so_once(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The same on the event loop, where the shipper is a task of the loop and the give-up
    closes the link from a worker thread, under a round that may be running."""
    log = _async_agent_logger(tmp_path, finish_timeout=0.2)
    async with log:
        p = await _hundred_steps_in_the_agent(log)
        kill_agent(log, signal.SIGSTOP)  # it can neither fold nor answer
        for i in range(101, 201):
            await log.log_step(i, {"x": float(i)})
        with finish_grace(0.3):
            report = await log.afinish()  # killed the stopped agent on its way out
    assert report.partial and report.steps == 100, report
    await ahold_still(1.5, "the shipper task's rounds after finish() returned")
    err = capfd.readouterr().err
    assert err.count("finish() gave up waiting") == 1, err
    assert "agent process is gone" not in err, err
    assert p.agent_lost is None and p.pump_place == "agent"
    assert [r["iteration"] for r in jsonl_rows(tmp_path)] == list(range(1, 101))


GUARDLESS = """
import sys
from aoff import OffPolicyLogger
from aoff.testing import probe, wait_until
from aoff.testing._faults import kill_agent
print("script body ran", flush=True)
log = OffPolicyLogger(log_dir=sys.argv[1], backends=("jsonl",), handle_sigterm=False)
log.start()
for i in range(1, 201):
    log.log_step(i, {"x": i * 1.0})
log.flush()
p = probe(log)
print("AGENT", p.agent_pid, flush=True)
if sys.argv[2] == "kill-self":
    for i in range(201, 401):
        log.log_step(i, {"x": i * 1.0})
    # the backstop round ships them (<= 0.75 s)
    wait_until(lambda: p.shipped_steps >= 400, what="steps 201-400 shipped to the agent")
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)
if sys.argv[2] == "kill-agent":
    import signal
    kill_agent(log, signal.SIGSTOP)   # it can neither write nor confirm
    for i in range(201, 301):
        log.log_step(i, {"x": i * 1.0})
    # shipped into the stopped agent (<= 0.75 s): received, never written
    wait_until(lambda: p.shipped_steps >= 300, what="steps 201-300 shipped to the agent")
    kill_agent(log)
    wait_until(lambda: not p.agent_running, what="the agent to die")
    for i in range(301, 401):
        log.log_step(i, {"x": i * 1.0})
r = log.finish()
print("REPORT", r.steps, r.backend_written, r.backend_lost, flush=True)
"""


def run_script(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"  # no `if __name__ == "__main__":` guard, on purpose
    script.write_text(textwrap.dedent(GUARDLESS))
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run"), mode],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


@pytest.mark.slow
def test_a_script_without_main_guard_runs_once_and_the_agent_never_imports_it(
    tmp_path: Path,
) -> None:
    out = run_script(tmp_path, "normal")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("script body ran") == 1
    assert len(jsonl_rows(tmp_path / "run")) == 200


@pytest.mark.slow
def test_sigkill_of_the_training_process_leaves_everything_shipped_on_disk(
    tmp_path: Path,
) -> None:
    out = run_script(tmp_path, "kill-self")
    assert out.returncode == -signal.SIGKILL
    agent = int(next(ln.split()[1] for ln in out.stdout.splitlines() if ln.startswith("AGENT")))

    def agent_ended() -> bool:
        try:
            os.kill(agent, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(agent_ended, timeout=30, what="the agent to exit after its training process")
    run = tmp_path / "run"
    assert [r["iteration"] for r in jsonl_rows(run)] == list(range(1, 401))
    assert [s for s, _ in tb_scalars(run)["train/x"]] == list(range(1, 401))


@pytest.mark.slow
def test_sigkill_of_the_agent_falls_back_and_reports_exactly_what_was_lost(
    tmp_path: Path,
) -> None:
    out = run_script(tmp_path, "kill-agent")
    assert out.returncode == 0, out.stderr
    assert "the agent process is gone" in out.stderr
    assert out.stderr.count("the agent process is gone") == 1
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("REPORT"))
    run = tmp_path / "run"
    on_disk = [r["iteration"] for r in jsonl_rows(run)]
    # 1-200 by the agent; 201-300 went into the stopped agent and were lost; 301-400
    # were folded in this process after the fallback took over
    assert on_disk == list(range(1, 201)) + list(range(301, 401))
    tb = sorted(s for s, _ in tb_scalars(run)["train/x"])
    assert tb == list(range(1, 201)) + list(range(301, 401))
    assert "'jsonl': 100" in line.split("{")[2] and "'tensorboard': 100" in line.split("{")[2]
    assert "'jsonl': 300" in line.split("{")[1]
    # the fallback's run summary would hold its own part only: there is none, and
    # aoff show reads the files (all 300 steps)
    assert not (run / "aoff-summary.json").exists()


def test_a_signal_during_a_shipping_round_is_held_until_the_round_is_over() -> None:
    """A round on the main thread (inside a logging call) must not be cut by Ctrl+C or
    SIGTERM halfway (events drained but not queued, a frame half sent): each handler
    runs after the round, still inside the call, and none is lost."""
    import os
    import signal

    from aoff._faces._defer import signals_deferred

    seen: list[str] = []
    prev = signal.signal(signal.SIGTERM, lambda s, f: seen.append(f"handler {s}"))
    # Python's own Ctrl+C handler, also when the runner started with SIGINT ignored (a
    # backgrounded job), where Python installs none
    prev_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # bytecodes where a handler would otherwise run
                pass
            seen.append("round over")
        for _ in range(1000):  # SIGTERM was left pending by the KeyboardInterrupt
            pass
        # nothing ran inside the round; both ran after it, none was lost
        assert seen == ["round over", "handler 15"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGTERM, prev)
        signal.signal(signal.SIGINT, prev_int)


def test_ctrl_c_while_the_agent_is_still_starting_does_not_kill_it(tmp_path: Path) -> None:
    """Ctrl+C reaches the whole process group, the agent too, and may come while the
    agent is still importing aoff (seconds on a loaded machine), before its main() says
    to ignore it: the agent is started with SIGINT/SIGTERM blocked, so it survives."""
    log = OffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), log_backend="none", handle_sigterm=False
    )
    kill_agent(log, signal.SIGINT)  # in the import window: nothing handles it yet
    kill_agent(log, signal.SIGTERM)
    for i in range(1, 101):
        log.log_step(i, {"x": 1.0})
    report = log.finish()
    assert not report.partial and report.backend_written == {"jsonl": 100}
    assert probe(log).agent_returncode == 0  # it ended on the training process's word
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 100


@pytest.mark.parametrize("nice", [None, 0, 10])
def test_the_agent_runs_nicer_than_the_training_process_by_agent_nice(
    tmp_path: Path, nice: int | None
) -> None:
    """``agent_nice``: the agent lowers its own priority by that much once started
    (default 0: the training process's), and still writes everything."""
    kw: dict[str, Any] = {} if nice is None else {"agent_nice": nice}
    log = OffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), log_backend="none", handle_sigterm=False, **kw
    )
    for i in range(1, 51):
        log.log_step(i, {"x": 1.0})
    log.flush()  # the agent has read its options and folded: its main() ran
    pid = probe(log).agent_pid
    assert pid is not None
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    want = min(mine + (0 if nice is None else nice), 19)
    assert os.getpriority(os.PRIO_PROCESS, pid) == want
    assert log.finish().backend_written == {"jsonl": 50}


@pytest.mark.parametrize("bad", [-1, 20, 2.5, True, "10"])
def test_agent_nice_is_checked_at_the_constructor(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="agent_nice must be an int from 0 to 19"):
        OffPolicyLogger(log_dir=tmp_path, log_backend="none", agent_nice=bad)  # type: ignore[arg-type]


def test_a_value_pickle_refuses_is_reported_by_the_agent_and_nothing_else_is_lost(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A value that cannot be pickled (a lock) cannot go to the agent as it is: its event
    is shipped with that value replaced, and the agent reports and skips it exactly as
    the in-process pump skips a value that is not a number. The rest of the frame (the
    other 299 steps, and the same step's other metric) arrives untouched."""
    run = tmp_path / "run"
    log = jsonl_agent_logger(run)
    assert probe(log).agent_running  # the agent runs it
    log.start()
    for i in range(1, 301):
        metrics: dict[str, Any] = {"x": float(i)}
        if i == 150:
            metrics["lock"] = threading.Lock()
        log.log_step(i, metrics)
    report = log.finish()
    assert report.backend_written == {"jsonl": 300} and not report.dropped_events
    rows = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == list(range(1, 301))
    assert all(r["train/x"] == float(r["iteration"]) for r in rows)
    assert not any("train/lock" in r for r in rows)
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if "'lock'" in ln]
    assert len(lines) == 1 and "log_step(metrics)" in lines[0], err


def test_a_device_value_that_can_never_be_read_is_said_and_counted_in_process_mode(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The shipper gives up on an event whose device value can never be read (its
    ``ready()`` raised, e.g. a CUDA error) as the in-process pump does: the error is said
    on stderr, the event counts as dropped, and the events around it arrive in order."""
    from aoff._core import _events as ev
    from aoff._core._pending import Placeholder, pending_event

    class Broken(Placeholder):
        __slots__ = ()

        def ready(self) -> bool:
            raise RuntimeError("an illegal memory access was encountered")

    run = tmp_path / "run"
    log = jsonl_agent_logger(run)
    assert probe(log).agent_running  # the agent runs it
    log.start()
    log.log_step(1, {"x": 1.0})
    step = (ev.STEP, 0.0, 2, {"x": Broken()}, None, None, None, 0.0, 0.0, 0.0, 0.0, None)
    put_event(log, pending_event(step))
    log.log_step(3, {"x": 3.0})
    report = log.finish()
    assert report.dropped_events == 1 and report.backend_written == {"jsonl": 2}
    assert [r["iteration"] for r in jsonl_rows(run)] == [1, 3]
    err = capfd.readouterr().err
    said = [ln for ln in err.splitlines() if "could not read device values" in ln]
    assert said == [
        "aoff: could not read device values: RuntimeError: an illegal memory access was encountered"
    ], err


def test_a_burst_the_stalled_agent_cannot_fold_yet_arrives_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent keeps what it reads as the frames came, pickled, bounded in bytes
    (``_pump/_backlog.py``), not as unpickled events bounded at 2 x ``capacity``. With
    its pump stalled (a backend holding the pump's loop until a flag file appears,
    ``benchmarks/_blocking.py``) and ``capacity=2000``, a flat-out burst of 40,000 steps
    of 50 metrics (~23 MB of pickles: more than the old 4,000 events in the agent, the
    socket, the 8 MiB the training process keeps for it and its 2,000-event buffer
    together; ~20,000 of them were dropped) is all read by the agent meanwhile, and is
    written whole, in order, once the pump goes on."""
    bench = str(ROOT / "benchmarks")
    monkeypatch.setenv("PYTHONPATH", bench + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.syspath_prepend(bench)
    from _blocking import FlagBackend

    from aoff._pump._backlog import BACKLOG_BYTES

    flag = tmp_path / "release"
    n = 40_000
    log = OffPolicyLogger(
        log_dir=str(tmp_path / "run"),
        log_backend="none",
        backends=("jsonl", FlagBackend(str(flag), in_loop=True)),
        capacity=2000,
        display="none",
        handle_sigterm=False,
        system_interval=0,
    )
    try:
        p = probe(log)
        assert p.pump_place == "agent"
        log.flush()  # the agent is up (no record yet: the stalling backend wrote nothing)
        metrics = {f"m{k}": 0.5 for k in range(50)}
        for i in range(1, n + 1):
            log.log_step(i, metrics)
        assert p.buffer_dropped == 0
        wait_until(
            lambda: p.buffered == 0 and p.link_pending_bytes == 0,
            timeout=60,
            what="the stalled agent to read every frame",
        )
        assert p.buffer_dropped == 0
        # the receiver acks as it reads (every 0.25 s at most): the probe sees the backlog
        wait_until(lambda: p.agent_backlog_bytes > 10 << 20, timeout=60, what="the agent's backlog")
    finally:
        flag.touch()
    log.flush()  # its ack: nothing waits in the agent now, and the most that did
    assert p.agent_backlog_bytes == 0
    assert 10 << 20 < p.agent_backlog_peak_bytes <= BACKLOG_BYTES  # its bound here
    report = log.finish()
    assert report.dropped_events == 0 and report.complete, report
    assert report.backend_written["jsonl"] == n
    rows = [r["iteration"] for r in jsonl_rows(tmp_path / "run")]
    assert rows == list(range(1, n + 1))


def test_a_burst_logged_while_the_agent_starts_arrives_whole(tmp_path: Path) -> None:
    """The agent reads nothing while it imports (~0.3 s here): frames wait in the training
    process until it answers. They may fill as much as the agent's backlog will take,
    not the usual 8 MiB (``MAX_PENDING_BYTES``) beyond which the buffer's policy drops: a
    loop that logged flat out at once lost 19,000-53,000 of 400,000 events with the
    defaults. Here the agent is held before it can answer (SIGSTOP) while ~46 MB of
    pickles are logged into a 20,000-event buffer (it took ~30 MB before dropping)."""
    from aoff._pump._backlog import backlog_bytes
    from aoff._transport._wire import MAX_PENDING_BYTES

    log = jsonl_agent_logger(tmp_path, display="none", capacity=20_000)
    p = probe(log)
    kill_agent(log, signal.SIGSTOP)  # still importing: it has not answered
    n = 80_000
    try:
        metrics = {f"m{k}": 0.5 for k in range(50)}
        for i in range(1, n + 1):
            log.log_step(i, metrics)
        wait_until(
            lambda: p.buffered == 0 or p.buffer_dropped, timeout=60, what="every step framed"
        )
        assert p.buffer_dropped == 0
        assert p.agent_written == {}, "the agent answered before it was held"
        assert MAX_PENDING_BYTES < p.link_pending_bytes <= backlog_bytes(20_000) + (1 << 20)
    finally:
        kill_agent(log, signal.SIGCONT)
    report = log.finish()
    assert report.dropped_events == 0 and report.complete, report
    assert [r["iteration"] for r in jsonl_rows(tmp_path)] == list(range(1, n + 1))


@pytest.mark.parametrize("overflow", ["drop_newest", "block"])
def test_a_small_buffer_is_shipped_before_it_fills(tmp_path: Path, overflow: str) -> None:
    """Producers ship once half the buffer's ``capacity`` waits, not only after the usual
    4,096 events or 0.5 s: with ``capacity=1000`` a loop would otherwise fill the buffer
    between rounds (``drop_newest`` refusing calls, ``block`` waiting for the backstop
    thread)."""

    iterate = workload_iterate()
    log = jsonl_agent_logger(tmp_path / "run", capacity=1000, overflow=overflow)
    watch = watch_buffer(log)
    log.start()
    log.flush()
    iterate(log, 0, 3000)  # 12,000 events, flat out
    report = log.finish()
    assert report.dropped_events == 0  # drop_newest refused none
    assert watch.waits == []  # block never made the loop wait
    assert report.backend_written == {"jsonl": 3000}


def test_a_call_that_ships_pays_one_slice_and_the_frames_go_out_together(tmp_path: Path) -> None:
    """The sync face: a logging call that ships pickles at most ``INLINE_SLICE`` events
    (``INLINE_SLOW_SLICE`` once the events came slowly; its rounds used to take 4,096
    at once: ~1 ms on the caller's thread), and the
    slices wait until ``INLINE_SEND_BYTES`` add up before they go, framed together, in
    one send. A flat-out loop of 2,000 iterations then arrives whole, every row in
    order."""

    from aoff._faces._cadence import (
        INLINE_INTERVAL,
        INLINE_SEND_BYTES,
        INLINE_SLICE,
        INLINE_SLOW_SLICE,
    )

    iterate = workload_iterate()
    log = jsonl_agent_logger(tmp_path / "run")
    log.start()
    log.flush()
    side = log._driver
    assert isinstance(side, AgentSide)  # process mode: the agent's side drives the pump
    shipper = side.shipper
    main = threading.current_thread()
    slices: list[int] = []  # events each of the caller's rounds drained
    sends: list[int] = []  # bytes waiting when the caller's round sent
    step, slice_of, send_some = shipper.step, shipper.slice_of, shipper.link.send_some

    def watched_step(limit: int | None = None, send: bool = True, into: bool = False) -> float:
        before = shipper.buffer.drained
        out = step(limit, send, into)
        if threading.current_thread() is main:
            slices.append(shipper.buffer.drained - before)
        return out

    def watched_slice(limit: int) -> bool:  # a slice alone, without signal deferral
        before = shipper.buffer.drained
        out = slice_of(limit)
        if out:
            slices.append(shipper.buffer.drained - before)
        return out

    def watched_send(limit: int | None = None) -> bool:
        if threading.current_thread() is main:
            sends.append(shipper.link.pending_out)
        return send_some(limit)

    shipper.step, shipper.link.send_some = watched_step, watched_send  # type: ignore[method-assign,assignment]
    shipper.slice_of = watched_slice  # type: ignore[method-assign]
    t0 = time.monotonic()
    iterate(log, 0, 2000)  # 8,000 events, flat out
    elapsed = time.monotonic() - t0
    report = log.finish()
    # a slice, or a slow loop's larger one (the first after the flush came late)
    assert slices and max(slices) <= INLINE_SLOW_SLICE
    assert sorted(slices)[len(slices) // 2] <= INLINE_SLICE
    assert sum(slices) >= 7000  # the caller shipped its own events, a slice at a time
    # a send waits for its bytes, or for INLINE_INTERVAL since the last one
    early = [n for n in sends if n < INLINE_SEND_BYTES]
    assert len(early) <= 1 + elapsed / INLINE_INTERVAL, (sends, elapsed)
    assert 0 < len(sends) <= 8000 * 110 // INLINE_SEND_BYTES + len(early), sends
    assert report.dropped_events == 0 and report.backend_written == {"jsonl": 2000}
    assert [r["iteration"] for r in jsonl_rows(tmp_path / "run")] == list(range(2000))


def test_a_slice_cut_by_ctrl_c_at_any_bytecode_loses_and_repeats_nothing() -> None:
    """A slice runs on the caller's thread without signal deferral (``Slices``): a
    ``KeyboardInterrupt`` raised at any bytecode of it or of its settling (where a Python
    signal handler may run) leaves every event once, in order, in the buffer or the
    slices, and the frame made of the slices (the agent's, or a lost agent's
    fallback's, reading) holds them in order, every step counted."""
    import types

    from aoff._core import _events as ev
    from aoff._core._buffer import EventBuffer
    from aoff._transport._batches import Slices, unpack_events

    events = [(ev.STEP, float(i), i, {"x": float(i)}) for i in range(12)]
    cut = {f.__code__ for f in (Slices.pickle_from, Slices._pickle, Slices.settle)}
    cut.add(EventBuffer.drain_into.__code__)
    at = 0
    while True:
        buffer, slices = EventBuffer(100), Slices()
        for e in events:
            buffer.put(e)
        assert slices.pickle_from(buffer, 3) == 3  # a slice before, not cut
        left = at

        def tracer(frame: types.FrameType, what: str, arg: object) -> Any:
            nonlocal left
            if frame.f_code not in cut:
                return None
            frame.f_trace_opcodes = True
            if what == "opcode":
                left -= 1
                if left < 0:
                    raise KeyboardInterrupt
            return tracer

        sys.settrace(tracer)
        try:
            slices.pickle_from(buffer, 5)  # settles the slice before it first
            slices.settle()  # counts this one, lets its events go
            interrupted = False
        except KeyboardInterrupt:
            interrupted = True
        finally:
            sys.settrace(None)
        assert list(slices) + list(buffer.snapshot()) == events, at
        assert slices.n + len(buffer) == len(events)
        slices.pickle_from(buffer, 100)  # the rest, then one frame of it all
        payload, n, steps, _, _ = slices.take()
        assert unpack_events(payload) == events and n == steps == len(events), at
        if not interrupted:
            break  # cut at every bytecode of the slice, and once not at all
        at += 1
    assert at > 30


def test_slices_not_sent_when_the_agent_is_lost_are_folded_by_the_fallback(
    tmp_path: Path,
) -> None:
    """Slices a logging call pickled but did not send yet (under ``INLINE_SEND_BYTES``)
    are events not handed over: a lost agent's fallback folds them, in order."""

    from aoff._core import _events as ev
    from aoff._transport._batches import Slices

    iterate = workload_iterate()
    log = jsonl_agent_logger(tmp_path / "run")
    log.start()
    log.flush()
    iterate(log, 0, 100)  # 400 events: a few slices, ~40 KB
    p = probe(log)
    assert any(type(f) is Slices for f in p.unsent_frames)
    waiting = [e[2] for e in p.unsent_events if e[0] == ev.STEP]
    assert waiting and waiting == list(range(waiting[0], waiting[0] + len(waiting)))
    kill_agent(log)
    assert isinstance(log._driver, AgentSide)
    log._driver.proc.wait(10)  # gone before anything is sent
    log.finish()
    on_disk = [r["iteration"] for r in jsonl_rows(tmp_path / "run")]
    # the slices (and the buffer's last events after them), in order; the steps sent
    # before the agent was killed were lost with it (said on stderr, counted)
    assert on_disk == list(range(waiting[0], 100))


def test_a_send_the_socket_takes_in_part_leaves_whole_frames_in_order() -> None:
    """``Link.send_some`` sends many frames in one ``sendmsg``; a socket that takes only
    part of them leaves the rest (a frame cut in the middle included) for the next send,
    and tells each frame's sender once, in order, when its last byte went."""
    import socket

    from aoff._transport._wire import Link

    a, b = socket.socketpair()
    with a, b:
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        link = Link(a)
        told: list[int] = []
        link.on_sent = told.append
        frames = [bytes([i]) * (1000 + 37 * i) for i in range(200)]
        for i, f in enumerate(frames):
            link.queue(f, i)
        got = bytearray()
        partial = 0
        while link.pending_out:
            if link.send_some() is False and link.pending_out:
                partial += 1
            b.setblocking(False)
            while True:
                try:
                    chunk = b.recv(1 << 16)
                except BlockingIOError:
                    break
                got += chunk
        assert partial > 0  # the socket did fill: sends were cut short
        assert told == list(range(200))
        expect = b"".join(len(f).to_bytes(4, "big") + f for f in frames)
        assert bytes(got) == expect


@pytest.mark.anyio
async def test_the_async_face_ships_a_flood_in_slices_the_loop_runs_between(
    tmp_path: Path,
) -> None:
    """A backlog on the event loop goes out LOOP_ROUND_EVENTS at a time, with the loop's
    other tasks running between rounds, and every event still arrives, in order."""
    from aoff._transport._shipper import LOOP_ROUND_EVENTS

    async with AsyncOffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), handle_sigterm=False, display="none"
    ) as log:
        assert probe(log).pump_place == "agent"
        rounds = watch_buffer(log).drains  # events each round took off the buffer
        n = 20 * LOOP_ROUND_EVENTS
        for i in range(1, n + 1):  # one burst: the loop never runs in between
            log.log_step(i, {"x": float(i)})  # a done awaitable: no await needed
        others = 0
        done = False

        async def other_task() -> None:
            nonlocal others
            while not done:
                others += 1
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(other_task)
            await log.aflush()
            done = True
        assert max(rounds) <= LOOP_ROUND_EVENTS and sum(rounds) >= n
        assert others >= n // LOOP_ROUND_EVENTS  # the loop ran between the rounds
        assert [r["iteration"] for r in jsonl_rows(tmp_path)] == list(range(1, n + 1))


async def _hundred_steps_in_the_agent(log: AsyncOffPolicyLogger) -> Probe:
    """Steps 1-100 logged and flushed by an async logger whose pump is in the agent."""
    p = probe(log)
    assert p.pump_place == "agent"
    for i in range(1, 101):
        await log.log_step(i, {"x": float(i)})
    await log.aflush()
    return p


@pytest.mark.anyio
async def test_the_async_face_keeps_only_pickles_and_a_lost_agent_gets_them_back(
    tmp_path: Path,
) -> None:
    """On the event loop, a frame waiting for the socket keeps its pickle, not its events
    (a backlog of live events fed the garbage collector's full collections); if the agent
    is lost, the pickles are read back and handed to the fallback, in order, and the run
    ends with exactly what the lost agent had received counted as lost. On trio too: the
    fallback's core is made off the loop (made on it, its runners never woke, finish()
    gave up and the run's tail was lost)."""
    from aoff._transport._batches import Pickled

    async with AsyncOffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), handle_sigterm=False, display="none"
    ) as log:
        p = await _hundred_steps_in_the_agent(log)
        await await_until(  # its Ack says so (at most every 0.25 s)
            lambda: p.agent_written == {"jsonl": 100, "tensorboard": 100},
            timeout=60,
            what="the agent's Ack of 100 steps written",
        )
        n = 100
        kill_agent(log, signal.SIGSTOP)  # it takes nothing more: the socket fills
        try:
            with anyio.fail_after(60):
                while len(p.unsent_frames) < 3:
                    for _ in range(500):
                        n += 1
                        await log.log_step(n, {"x": float(n)})
                    await ahold_still(0.01, "the shipper task ships a round meanwhile")
            unsent = p.unsent_frames
            assert all(type(meta) is Pickled for meta in unsent)
            waiting = [e[2] for meta in unsent for e in meta]  # (STEP, wall, iteration, ..)
            first_unsent = waiting[0]
            assert waiting == list(range(first_unsent, first_unsent + len(waiting)))
            assert sum(map(len, unsent)) == len(waiting)
        finally:
            kill_agent(log)
        with anyio.fail_after(60):
            while p.agent_lost is None:  # the next round finds it gone
                await log.log_step(n + 1, {"x": float(n + 1)})
                n += 1
                await ahold_still(0.01, "the shipper task ships a round meanwhile")
        assert probe(log).pump_place == "in-process"
        # what the lost agent never got, handed to the fallback (read again: the
        # fallback may have folded it already)
        handed = [e[2] for e in p.unsent_events]
        assert handed[: len(waiting)] == waiting  # the pickles, read back, first
        for _ in range(100):
            n += 1
            await log.log_step(n, {"x": float(n)})
    report = p.report
    assert report is not None
    rows = [r["iteration"] for r in jsonl_rows(tmp_path)]
    # 1-100 by the agent; 101 up to the first frame still waiting went into the stopped
    # agent and are lost; from there on everything was folded in this process
    assert rows == list(range(1, 101)) + list(range(first_unsent, n + 1))
    assert sorted(s for s, _ in tb_scalars(tmp_path)["train/x"]) == rows
    lost = first_unsent - 101
    assert report.backend_lost == {"jsonl": lost, "tensorboard": lost}
    assert report.backend_written == {"jsonl": len(rows), "tensorboard": len(rows)}


def test_a_loop_round_is_bounded_in_events_and_bytes_and_says_when_more_can_go() -> None:
    """The event loop's rounds (``Shipper.for_loop``): at most ``round_events`` drained
    and about ``round_bytes`` sent (whole frames, at least one) a round; a round cut
    short asks to come back at once (wait 0), and everything arrives, in order."""
    import socket
    from multiprocessing.connection import Connection

    from aoff._core._buffer import EventBuffer
    from aoff._core._report import FinishReport
    from aoff._transport._batches import unpack_events
    from aoff._transport._messages import Events, decode_to_peer
    from aoff._transport._shipper import Shipper
    from aoff._transport._wire import Link

    ours, theirs = socket.socketpair()
    with ours, theirs:
        buf = EventBuffer(1000)
        shipper = Shipper(buf, Link(ours), FinishReport)
        shipper.for_loop()
        shipper.pace.round_events, shipper.pace.round_bytes = 3, 1
        for i in range(10):
            buf.put((0, 0.0, i))  # any tuple: the shipper does not look inside
        waits = [shipper.step() for _ in range(3)]
        assert waits == [0.0, 0.0, 0.0] and len(buf) == 1  # 3 events a round, more left
        assert shipper.step() > 0  # the last one: nothing more to do now
        peer = Connection(theirs.detach())
        got: list[object] = []
        while peer.poll(1):
            msg = decode_to_peer(peer.recv_bytes())
            assert isinstance(msg, Events) and msg.n <= 3
            got += [e[2] for e in unpack_events(msg.payload)]
            if len(got) == 10:
                break
        peer.close()
        assert got == list(range(10))
        # whole frames: a round that may send 1 byte still sends one frame and stops
        a, b = socket.socketpair()
        with a, b:
            link = Link(a)
            for _ in range(3):
                link.queue(b"x" * 100)
            assert link.send_some(1) is True and link.pending_out == 2 * 104
            assert link.send_some(None) is False and link.pending_out == 0
            assert len(b.recv(1000)) == 3 * 104


# -- a lost agent's fallback writes as the run goes on, and accounts exactly ----------------
def _last_row(run: Path) -> int:
    try:
        rows = jsonl_rows(run)
    except (FileNotFoundError, json.JSONDecodeError):  # not there yet, or a line half written
        return 0
    steps = [r["iteration"] for r in rows if "iteration" in r]  # not the media rows
    return steps[-1] if steps else 0


def test_the_async_shippers_pace_follows_a_flood_that_comes_in_bursts() -> None:
    """The async face's rounds are paced to the arrival rate: ~128 events a round. A
    flood in bursts (640 events every 10 ms, 64,000 a second) keeps the wait near 2 ms
    through the gaps between bursts; it used to measure the rate from one round to the
    next, and a round just after a burst saw nothing new and slept 50 ms. Once nothing
    came for a whole SHIP_INTERVAL the wait is the interval again; a round cut short
    never waits."""
    import socket

    from aoff._core._buffer import EventBuffer
    from aoff._core._report import FinishReport
    from aoff._transport._shipper import SHIP_INTERVAL, Shipper
    from aoff._transport._wire import Link

    ours, theirs = socket.socketpair()
    with ours, theirs:
        buf = EventBuffer(100_000)
        now = [0.0]
        pace = Shipper(buf, Link(ours), FinishReport).for_loop(clock=lambda: now[0])
        waits: list[float] = []
        for _ in range(20):
            for i in range(640):
                buf.put((0, now[0], i))
            for _ in range(5):  # rounds 2 ms apart: one after the burst, four in the gap
                now[0] += 0.002
                waits.append(pace(SHIP_INTERVAL))
        steady = waits[10:]  # after the first bursts: the rate is known
        assert all(0.001 <= w <= 0.003 for w in steady), sorted(steady)[-5:]
        assert pace(0.0) == 0.0
        now[0] += SHIP_INTERVAL  # nothing came for a whole interval: quiet again
        assert pace(SHIP_INTERVAL) == SHIP_INTERVAL


def test_a_lost_agents_fallback_writes_as_the_run_goes_on_and_counts_every_drop(
    tmp_path: Path,
) -> None:
    """After a SIGKILL of the agent the in-process fallback folds and writes while the run
    goes on, not at finish(); with a tiny buffer, every step logged is written or counted
    dropped, none twice."""
    with OffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), handle_sigterm=False, display="none", capacity=8
    ) as log:
        p = probe(log)
        for i in range(1, 101):
            log.log_step(i, {"x": float(i)})
            hold_still(0.001, "the agent keeps up: nothing dropped so far")
        log.flush()
        kill_agent(log)
        wait_until(lambda: not p.agent_running, timeout=60, what="the agent to die")
        n = log_until_the_loss_is_seen(log, p, 100)
        for _ in range(5):
            n += 1
            log.log_step(n, {"x": float(n)})
        wait_until(lambda: _last_row(tmp_path) == n, timeout=60, what="steps after the kill")
        for _ in range(3000):  # a burst the 8-event buffer cannot hold
            n += 1
            log.log_step(n, {"x": float(n)})
    report = p.report
    assert report is not None
    rows = [r["iteration"] for r in jsonl_rows(tmp_path)]
    assert rows[:100] == list(range(1, 101)) and rows[-1] == n
    assert rows == sorted(set(rows))  # in order, none twice
    assert report.backend_lost == {"jsonl": 0, "tensorboard": 0}
    assert report.dropped_events > 0
    assert len(rows) + report.dropped_events == n  # every step written or counted
    assert report.backend_written == {"jsonl": len(rows), "tensorboard": len(rows)}


def _no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process fallback cannot start, as at interpreter shutdown."""
    from aoff._faces import _lost

    def cannot(*_: object) -> None:
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(_lost, "start_fallback", cannot)


def _said_of_a_stranded_run(err: str, report: FinishReport) -> None:
    """The loss's line (with the steps the agent had taken and not confirmed) and
    finish()'s (with the steps discarded since; none was dropped by the buffer here)."""
    assert err.count("logging cannot go on in this process (RuntimeError: can't create") == 1
    unconfirmed = report.backend_lost["jsonl"]
    assert f"{unconfirmed:,} steps it had received were not confirmed written" in err, err
    after = report.dropped_events
    assert f"aoff: {after:,} events logged after the agent was lost were not written" in err
    assert "logging goes on in this process" not in err and "Traceback" not in err, err
    assert "finish() gave up" not in err, err


def test_a_lost_agent_whose_fallback_cannot_start_counts_every_step_after_it(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    threads_started: Callable[..., set[str]],
) -> None:
    """When no pump can start here after the agent's loss, the steps logged after it are
    taken out of the buffer as they come (a ``block`` producer goes on) and counted:
    finish() returns at once, every one of them in ``dropped_events``, and two lines say
    why and how many. Before: a traceback from the shipper thread, the buffer never
    drained (a ``block`` producer waited for good), finish() waited out its grace for a
    "background writer" and the frame in flight was counted nowhere."""
    _no_fallback(monkeypatch)
    log = jsonl_agent_logger(
        tmp_path / "run", display="none", capacity=64, overflow="block", finish_timeout=60
    )
    p = probe(log)
    for i in range(1, 101):
        log.log_step(i, {"x": float(i)})
    log.flush()
    kill_agent(log)
    n = log_until_the_loss_is_seen(log, p, 100)
    for _ in range(1000):  # many buffers-full of a 64-event "block" buffer
        n += 1
        log.log_step(n, {"x": float(n)})
    t0 = time.monotonic()
    report = log.finish()
    assert time.monotonic() - t0 < 30, "finish() waited for a writer that is not there"
    _said_of_a_stranded_run(capfd.readouterr().err, report)
    assert report.partial and report.steps == 100 and report.backend_written == {"jsonl": 100}
    # each step after 100: discarded here, or received by the dying agent (unconfirmed)
    assert report.dropped_events + report.backend_lost["jsonl"] == n - 100, (report, n)
    assert report.backend_errors == {"jsonl": "agent lost"}
    assert [r["iteration"] for r in jsonl_rows(tmp_path / "run")][:100] == list(range(1, 101))
    assert not threads_started("aoff-pump")


@pytest.mark.anyio
async def test_the_async_face_counts_every_step_after_a_loss_no_fallback_can_take(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on the event loop: the shipper task takes what comes out of the buffer
    while finish() concludes in a worker thread; each step is counted once."""
    _no_fallback(monkeypatch)
    log = _async_agent_logger(tmp_path, capacity=64, finish_timeout=60)
    async with log:
        p = await _hundred_steps_in_the_agent(log)
        kill_agent(log)
        n = await alog_until_the_loss_is_seen(log, p, 100)
        for _ in range(1000):
            n += 1
            await log.log_step(n, {"x": float(n)})
            if n % 50 == 0:
                await anyio.sleep(0.001)  # a loop that does other work: rounds run
        t0 = time.monotonic()
        report = await log.afinish()
        assert time.monotonic() - t0 < 30, "finish() waited for a writer that is not there"
    _said_of_a_stranded_run(capfd.readouterr().err, report)
    assert report.partial and report.steps == 100
    assert report.dropped_events + report.backend_lost["jsonl"] == n - 100, (report, n)
    assert [r["iteration"] for r in jsonl_rows(tmp_path)][:100] == list(range(1, 101))


@pytest.mark.anyio
async def test_the_async_faces_fallback_writes_as_the_run_goes_on_and_frees_unread_frames(
    tmp_path: Path,
) -> None:
    """The async face's fallback (asyncio and trio) writes steps logged after the agent's
    SIGKILL before finish(); images the agent had received but never read are encoded
    by the fallback from their shared-memory blocks (this process owns them until read),
    which then come back, so later images are accepted within the budget."""
    import numpy as np

    image = np.zeros((16, 16, 3), np.uint8)
    async with AsyncOffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        handle_sigterm=False,
        display="none",
        media_budget=10 * image.nbytes,
    ) as log:
        p = await _hundred_steps_in_the_agent(log)
        kill_agent(log, signal.SIGSTOP)  # it reads nothing more
        try:
            for _ in range(10):  # a full budget of images, sent to the stopped agent
                await log.log_image("lost", image, step=100)
            await await_until(
                lambda: not p.buffered and not p.link_pending_bytes, timeout=60, what="sent"
            )
        finally:
            kill_agent(log)
        await await_until(lambda: not p.agent_running, timeout=60, what="the agent to die")
        n = await alog_until_the_loss_is_seen(log, p, 100)
        for _ in range(5):
            n += 1
            await log.log_step(n, {"x": float(n)})
        await await_until(lambda: _last_row(tmp_path) == n, timeout=60, what="steps after the kill")
        await await_until(
            lambda: log._media_budget.in_flight() == 0, timeout=60, what="the unread, encoded"
        )
        for _ in range(10):  # the lost agent's blocks are free again: all accepted
            await log.log_image("kept", image, step=n)
    report = p.report
    assert report is not None
    assert report.media_refused == 0
    assert (report.media_written, report.media_lost) == (20, {})
    rows = jsonl_rows(tmp_path)
    assert [r["iteration"] for r in rows if "iteration" in r] == list(range(1, n + 1))
    assert sum("iteration" not in r for r in rows) == 20  # the images sent, then kept
    assert report.backend_lost == {"jsonl": 0, "tensorboard": 0}


FALLBACK_MEDIA = """
import json, os, signal, sys, time
import numpy as np
from aoff import OffPolicyLogger
from aoff.testing import probe, wait_until
from aoff.testing._faults import kill_agent
log = OffPolicyLogger(log_dir=sys.argv[1], backends=("jsonl",), handle_sigterm=False,
                      display="none")
log.start()
log.log_step(1, {"x": 1.0})
log.flush()
p = probe(log)
kill_agent(log)
wait_until(lambda: not p.agent_running, what="the agent to die")
for i in range(5):  # in shared memory, never sent: the fallback's encoder reads them
    log.log_image("after", np.full((16, 16, 3), 7, np.uint8), step=2 + i)
n, deadline = 1, time.monotonic() + 60
while p.agent_lost is None and time.monotonic() < deadline:
    n += 1
    log.log_step(n, {"x": 1.0})
    time.sleep(0.01)  # a training step takes time (the next round finds the agent gone)
r = log.finish()
print("REPORT", r.media_written, r.media_refused, flush=True)
"""


@pytest.mark.slow
def test_a_lost_agents_fallback_encodes_its_blocks_and_the_tracker_keeps_them(
    tmp_path: Path,
) -> None:
    """Frames left in shared memory when the agent is lost are encoded in this process;
    reading a block must not make this process's resource tracker forget it (Python <
    3.13 attaches register it), or unlinking it at the end printed one KeyError
    traceback a block from the tracker."""
    script = tmp_path / "fallback_media.py"
    script.write_text(textwrap.dedent(FALLBACK_MEDIA))
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )  # returns once the tracker, which shares stderr, has exited too
    assert out.returncode == 0, out.stderr
    assert "REPORT 5 0" in out.stdout
    assert "Traceback" not in out.stderr and "KeyError" not in out.stderr, out.stderr
    rows = jsonl_rows(tmp_path / "run")
    assert sum("iteration" not in r for r in rows) == 5  # the images' rows
