"""The hooks tests reach a logger's insides through: ``aoff.testing.probe`` and aoff's own
fault-injection hooks (``aoff.testing._faults``). Each is checked against something the
test sees for itself (a pid that answers, a file in /dev/shm, the records a backend got),
so that a hook that returns a wrong value fails here and not, silently, in the tests
built on it.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

from aoff import OffPolicyLogger, RemoteLogger
from aoff._core import _events as ev
from aoff.testing import (
    ManualClock,
    MemoryBackend,
    RecordingDisplay,
    WaitTimeout,
    probe,
    read_wandb_history,
    wait_for_wandb_run,
    wait_for_wandb_runs,
    wait_until,
)
from aoff.testing._faults import (
    aput_event,
    drive_backend_clock,
    finish_grace,
    hold_media_encoder,
    kill_agent,
    put_event,
    record_report_lines,
    remove_sigterm_handler,
    reset_once_a_process_notices,
    ship_inline_after,
    watch_backend,
    watch_buffer,
    without_tensor_capture,
)
from aoff.testing._remote_probe import probe_remote

from .conftest import jsonl_agent_logger, make_async_logger, make_logger
from .faulty import GatedBackend


def step(iteration: int, x: float) -> tuple[object, ...]:
    """A raw ``log_step`` event, as the hot path builds it."""
    return (ev.STEP, 0.0, iteration, {"x": x}, None, None, None, 0.0, 0.0, 0.0, 0.0, None)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# -- where the pump runs ----------------------------------------------------------------------
def test_probe_sees_the_agent_process(tmp_path: Path) -> None:
    log = jsonl_agent_logger(tmp_path)
    p = probe(log)
    assert p.pump_place == "agent" and p.phase == "open"
    pid = p.agent_pid
    assert pid is not None and pid != os.getpid() and alive(pid) and p.agent_running
    assert p.pump_thread is None and p.agent_lost is None
    assert p.agent_returncode is None
    with pytest.raises(LookupError, match="agent process"):
        p.state  # noqa: B018 - the pump's parts are in the agent
    assert p.shipped_steps == 0
    for i in range(1, 38):
        log.log_step(i, {"x": float(i)})
    log.flush()
    assert p.shipped_steps == 37 and p.unsent_frames == ()
    wait_until(lambda: p.agent_written == {"jsonl": 37}, what="the agent's Ack of 37 steps")
    report = log.finish()
    assert p.report is report and p.phase == "closed"
    assert p.agent_returncode == 0 and not p.agent_running
    wait_until(lambda: not alive(pid), what="the agent's pid to be gone")


def test_probe_sees_the_pump_thread() -> None:
    log = make_logger(MemoryBackend(), pump="thread")
    p = probe(log)
    thread = p.pump_thread
    assert p.pump_place == "in-process" and p.agent_pid is None and not p.agent_running
    assert thread is not None and thread.name == "aoff-pump" and thread.is_alive()
    assert p.shipped_steps == 0
    log.finish()
    thread.join(30)
    assert not thread.is_alive()


@pytest.mark.anyio
async def test_probe_of_the_async_face_its_buffer_and_its_report() -> None:
    mem = MemoryBackend()
    log = make_async_logger(mem, capacity=10, overflow="drop_newest")
    p = probe(log)
    assert p.phase == "new" and p.capacity == 10
    async with log:
        assert p.pump_place == "in-process" and p.pump_thread is None and p.phase == "open"
        await log.aflush()
        assert p.buffered == 0 and not p.buffer_full and p.buffer_dropped == 0
        for i in range(1, 11):  # no await yields here: the pump cannot drain
            await log.log_step(i)
        assert p.buffered == 10 and p.buffer_full
        for i in range(11, 13):
            await log.log_step(i)  # refused: drop_newest
        assert p.buffered == 10 and p.buffer_dropped == 2
        assert p.report is None
    report = await log.afinish()
    assert p.report is report and report.dropped_events == 2
    assert [r.iteration for r in mem.records] == list(range(1, 11))


def test_probe_of_a_summarywriter_is_its_engines(tmp_path: Path) -> None:
    from aoff.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path), backends=("jsonl",)) as w:
        assert probe(w).pump_place == "agent"
    with pytest.raises(TypeError, match="probe\\(\\) takes"):
        probe(object())


# -- the in-process pump ----------------------------------------------------------------------
def test_probe_state_backends_problems_and_reported_lines() -> None:
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread", system_interval=0)
    p = probe(log)
    lines = record_report_lines(log)
    assert not p.system_metrics
    log.log_step(1, {"x": 1.0}, reward_components={"c": 2.0})
    log.log_step(2, {"x": "not a number"})
    log.flush()
    assert p.state.steps_logged == 2 and p.state.reward_components == {"c": 2.0}
    assert p.held_events == () and p.agent_written == {} and p.unsent_frames == ()
    memory = p.backends["memory"]
    assert list(p.backends) == ["memory"] and memory.name == "memory"
    assert (memory.offered, memory.written, memory.lost, memory.pending) == (2, 2, 0, 0)
    assert memory.status == "ok" and not memory.stalled
    assert memory.max_pending > 0 and memory.stall_timeout == 10.0
    (problem,) = p.problems
    assert "'x'" in problem and lines == [problem]
    log.finish()
    assert lines[0] == problem and any("values were not logged" in ln for ln in lines[1:])
    assert len(mem.records) == 2


def test_probe_sees_system_metrics_on() -> None:
    log = make_logger(MemoryBackend(), pump="thread", system_interval=1.0)
    try:
        assert probe(log).system_metrics
    finally:
        log.finish()


def test_a_stalled_backend_on_a_driven_clock() -> None:
    gated = GatedBackend("hung")
    log = make_logger(gated, pump="thread")
    clock = ManualClock()
    drive_backend_clock(log, "hung", clock)
    hung = probe(log).backends["hung"]
    try:
        log.log_step(1)
        assert gated.entered.wait(30)
        assert not hung.stalled
        clock.advance(hung.stall_timeout - 1)
        assert not hung.stalled
        clock.advance(2)
        assert hung.stalled  # the runner's clock is the test's
    finally:
        gated.gate.set()
    log.finish()
    with pytest.raises(LookupError, match="no backend named 'nope'"):
        drive_backend_clock(log, "nope", clock)


class StuckDisplay(RecordingDisplay):
    """A display whose closing hangs until :attr:`gate` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def close(self, state: object, now: float, *, summary: bool) -> None:
        self.gate.wait()


def test_finish_grace_shortens_the_wait_for_a_pump_that_stopped() -> None:
    """The pump hangs in the display's close for 5 s: with a 0.3 s grace finish() gives
    up long before (with the default 10 s it would see the pump end, and not give up)."""
    display = StuckDisplay()
    log = make_logger(MemoryBackend(), display=display, finish_timeout=0.2)
    log.log_step(1)
    release = threading.Timer(5.0, display.gate.set)
    release.start()
    try:
        with finish_grace(0.3):
            report = log.finish()
        assert report.interrupted and report.partial  # it gave up
    finally:
        release.join()
    with pytest.raises(ValueError, match="seconds must be > 0"), finish_grace(0):
        pass


# -- watching the buffer and a backend --------------------------------------------------------
def test_watch_buffer_and_watch_backend_count_what_happens() -> None:
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread")
    buf, back = watch_buffer(log), watch_backend(log, "memory")
    for i in range(100):
        log.log_step(i)
    log.flush()
    assert buf.waits == [] and sum(buf.drains) >= 100  # the steps and the start event
    assert sum(back.offers) == 100 and 1 <= back.peak_pending <= 100
    log.finish()


def test_watch_buffer_sees_a_producer_wait_for_space() -> None:
    gated = GatedBackend()
    log = make_logger(gated, pump="thread", overflow="block", capacity=10)
    watch = watch_buffer(log)
    th = threading.Thread(target=lambda: [log.log_step(i) for i in range(5_000)], daemon=True)
    try:
        th.start()
        wait_until(lambda: watch.waits, what="a producer to wait for space")
        assert all(n >= 10 for n in watch.waits)  # it waited on a full buffer
    finally:
        gated.gate.set()
    th.join(60)
    assert log.finish().steps == 5_000


def test_without_tensor_capture_keeps_new_loggers_on_the_torch_free_path() -> None:
    pytest.importorskip("torch")
    with without_tensor_capture():
        plain = make_logger(MemoryBackend(), pump="thread")
        plain.log_step(1)
        plain.flush()  # the pump's ticks look again: still off
        assert not probe(plain).captures_tensors
        plain.finish()
    capturing = make_logger(MemoryBackend(), pump="thread")  # torch is imported here
    assert probe(capturing).captures_tensors
    capturing.finish()


# -- injecting events -------------------------------------------------------------------------
def test_put_event_goes_where_a_logging_call_goes() -> None:
    mem = MemoryBackend()
    log = make_logger(mem, pump="thread")
    log.log_step(1, {"x": 1.0})
    put_event(log, step(2, 2.0))
    log.log_step(3, {"x": 3.0})
    log.finish()
    assert [(r.iteration, r.as_dict()["train/x"]) for r in mem.records] == [
        (1, 1.0),
        (2, 2.0),
        (3, 3.0),
    ]


@pytest.mark.anyio
async def test_aput_event_goes_where_a_logging_call_goes() -> None:
    mem = MemoryBackend()
    async with make_async_logger(mem) as log:
        await aput_event(log, step(7, 0.5))
    assert [(r.iteration, r.as_dict()["train/x"]) for r in mem.records] == [(7, 0.5)]


# -- media ------------------------------------------------------------------------------------
def test_hold_media_encoder_holds_the_bytes_in_flight(tmp_path: Path) -> None:
    image = np.zeros((8, 8, 3), np.uint8)  # 192 bytes
    log = OffPolicyLogger(
        log_dir=tmp_path, pump="thread", display=RecordingDisplay(), handle_sigterm=False
    )
    p = probe(log)
    gate = hold_media_encoder(log)
    try:
        log.log_image("img", image, step=1)
        log.log_image("img", image, step=2)
        assert p.media_in_flight == 2 * image.nbytes  # accepted: counted at the call
        # the pump hands both to the encoder, which holds them
        wait_until(lambda: p.media_encoder_pending == 2, what="both images at the encoder")
        assert p.media_in_flight == 2 * image.nbytes
        assert p.media_blocks == () and p.media_blocks_in_use == 0  # no pool in thread mode
    finally:
        gate.set()
    log.flush()
    assert p.media_in_flight == 0 and p.media_encoder_pending == 0
    assert log.finish().media_written == 2


def test_a_stopped_agent_leaves_the_frames_in_their_block(tmp_path: Path) -> None:
    frames = np.ones((2, 8, 8, 3), np.uint8)  # 384 bytes
    log = jsonl_agent_logger(tmp_path)
    p = probe(log)
    log.flush()
    kill_agent(log, signal.SIGSTOP)  # it can read nothing now
    try:
        log.log_video("v", frames, step=1)
        name = p.media_blocks[0]  # then maybe a spare, made ahead of the next call
        assert os.path.exists(f"/dev/shm/{name}")
        assert p.media_blocks_in_use == frames.nbytes == p.media_in_flight
    finally:
        kill_agent(log, signal.SIGCONT)
    log.flush()
    blocks = p.media_blocks
    assert p.media_blocks_in_use == 0 and name in blocks  # free, kept for reuse
    assert log.finish().media_written == 1
    assert not any(os.path.exists(f"/dev/shm/{n}") for n in blocks)  # unlinked at the end


# -- the agent --------------------------------------------------------------------------------
def test_kill_agent_makes_the_logger_fall_back(tmp_path: Path) -> None:
    log = jsonl_agent_logger(tmp_path)
    p = probe(log)
    log.log_step(1, {"x": 1.0})
    log.flush()
    pid = kill_agent(log)
    assert pid == p.agent_pid
    wait_until(lambda: not p.agent_running, what="the agent to die")
    assert probe(log).pump_place == "agent" and p.agent_lost is None  # not noticed yet
    for i in range(2, 101):
        log.log_step(i, {"x": float(i)})
    # the next shipping round (the backstop's, within 0.75 s) finds the agent gone
    wait_until(lambda: p.agent_lost, what="the logger to see the agent gone")
    assert p.pump_place == "in-process"
    thread = p.pump_thread
    assert thread is not None and thread.is_alive()
    report = log.finish()
    assert report.steps == 100 and report.backend_written == {"jsonl": 100}


def test_reset_once_a_process_notices_lets_the_next_logger_say_it_again(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    line = "aoff: the pump runs in this process, not in its agent"

    def count_said() -> int:
        log = OffPolicyLogger(log_dir=tmp_path, clock=ManualClock(), display="none")
        log.finish()
        return capfd.readouterr().err.count(line)

    count_said()  # said here, or already earlier in this process
    assert count_said() == 0  # once a process
    reset_once_a_process_notices()
    assert count_said() == 1


def test_remove_sigterm_handler_takes_aoffs_handler_back_out() -> None:
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # conftest's fixture
    assert not remove_sigterm_handler()
    for _ in range(2):  # removed, the next logger installs it again
        log = make_logger(MemoryBackend(), pump="thread", handle_sigterm=True)
        log.finish()
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        assert remove_sigterm_handler()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_the_hooks_that_need_a_place_say_so() -> None:
    log = make_logger(MemoryBackend(), pump="thread")
    try:
        with pytest.raises(LookupError, match="process mode"):
            ship_inline_after(log, 10)
        with pytest.raises(LookupError, match="process mode"):
            kill_agent(log)
    finally:
        log.finish()


# -- a producer --------------------------------------------------------------------------------
def test_probe_remote_follows_a_producer_from_its_first_call_to_the_run_gone(
    tmp_path: Path,
) -> None:
    r = RemoteLogger(tmp_path, "painter", timeout=60)  # no run there yet
    p = probe_remote(r)
    assert not p.started and not p.connected and p.buffered == 0 and p.media_in_flight == 0
    image = np.zeros((4, 4, 3), np.uint8)  # 48 bytes
    r.log_step(1, {"x": 1.0})
    r.log_image("img", image, step=1)
    assert p.started and not p.connected  # it looks for the run, and keeps what it logs
    assert p.buffered == 2 and p.buffer_drained == 0 and p.media_in_flight == image.nbytes
    log = OffPolicyLogger(
        log_dir=tmp_path, pump="thread", display=RecordingDisplay(), handle_sigterm=False
    )
    r.flush()
    assert p.connected and p.error is None and not p.run_gone
    assert p.buffered == 0 and p.buffer_drained >= 2 and p.buffer_dropped == 0
    assert p.link_pending_bytes == 0 and p.media_in_flight == 0
    log.finish()  # the run ends with the producer still open
    r.log_step(2, {"x": 2.0})
    wait_until(lambda: p.run_gone, what="the producer to see the run gone")
    assert not p.connected and p.error is not None
    r.close()
    with pytest.raises(TypeError, match="probe_remote\\(\\) takes"):
        probe_remote(log)


# -- W&B offline run files --------------------------------------------------------------------
def test_waiting_for_a_wandb_run_file_that_never_ends_times_out(tmp_path: Path) -> None:
    run = tmp_path / "offline-run-x" / "run-x.wandb"
    with pytest.raises(WaitTimeout, match="exit record"):
        wait_for_wandb_run(run, timeout=0.3)  # no file
    run.parent.mkdir()
    run.write_bytes(b":W&B" + (0xBEE1).to_bytes(2, "little") + b"\0")  # a header, no records
    with pytest.raises(WaitTimeout, match="exit record"):
        wait_for_wandb_run(run, timeout=0.3)
    with pytest.raises(WaitTimeout, match="1 W&B run file"):
        wait_for_wandb_runs(tmp_path, timeout=0.3)


@pytest.mark.slow  # starts wandb's service process
def test_waiting_for_a_finished_wandb_run_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = wandb.init(project="p", dir=str(tmp_path))
    for i in range(5):
        run.log({"x": float(i)}, step=i)
    run.finish()
    (path,) = wait_for_wandb_runs(tmp_path)
    assert wait_for_wandb_run(path) == path
    assert [r["x"] for r in read_wandb_history(path)] == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(WaitTimeout):  # one run is there, not two
        wait_for_wandb_runs(tmp_path, 2, timeout=0.5)


def test_the_public_testing_surface_is_small_and_each_name_is_documented() -> None:
    import re

    import aoff.testing
    from aoff.testing import _faults

    public = set(aoff.testing.__all__)
    assert len(public) <= 12, sorted(public)
    # aoff's own fault hooks are not part of it, not even as attributes
    assert not {n for n in _faults.__all__ if hasattr(aoff.testing, n)}
    page = (Path(__file__).parent.parent / "docs/reference/testing.md").read_text()
    assert set(re.findall(r"^::: aoff\.testing\.(\w+)$", page, re.M)) == public
    assert set(re.findall(r"^\| `(\w+)` \|", page, re.M)) == public  # a line on each
