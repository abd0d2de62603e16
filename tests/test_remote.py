"""``log.remote()``: other processes log into the run through its socket (issue #12).

What a producer's calls mean (README, "Many producers"): its ``log_step`` records are
its own (JSONL ``producer`` field, CSV column, TensorBoard run ``log_dir/<name>/``) and
never move the run's own iteration; its ``log_collector(total_steps=...)`` latest is
summed into the run's total env steps; its collector timings are averaged with the
others'. Processes are real (spawned) where the issue asks for it; the rest runs a
producer in the test's own process, which reaches the run through the same socket.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
import warnings
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from aoff import AoffWarning, AsyncOffPolicyLogger, OffPolicyLogger, RemoteLogger
from aoff._channel._paths import find_socket
from aoff._core import _events as ev
from aoff._core._buffer import Overflow
from aoff._core._fold import Folder
from aoff._core._state import ProducerInfo, State
from aoff._transport._wire import MAX_PENDING_BYTES
from aoff.testing import wait_until
from aoff.testing._remote_probe import probe_remote
from tests import remote_child
from tests.conftest import hold_still, read_jsonl, read_tensorboard
from tests.tbserver import tensorboard_server


def _logger(run: Path, **kw: Any) -> OffPolicyLogger:
    kw.setdefault("backends", ("jsonl",))
    kw.setdefault("handle_sigterm", False)
    kw.setdefault("log_backend", "tensorboard")
    return OffPolicyLogger(log_dir=str(run), **kw)


# -- the fold: what a producer's calls mean -------------------------------------------------------
def _remote(name: str, event: ev.Event) -> ev.Event:
    return (ev.REMOTE, event[1], name, event)


def test_a_producers_steps_are_its_own_and_its_totals_are_summed() -> None:
    state = State()
    fold = Folder(state)
    fold.apply((ev.COLLECTOR, 1.0, 100, 5, 0.0))
    fold.apply((ev.COLLECTOR_TIMING, 1.0, {"env_ms": 1.0}))
    rec = fold.apply((ev.STEP, 1.0, 7, {"loss": 0.5}, None, None, None, 0.0, 0.0, 0.0, 0.0, None))
    assert rec is not None and rec.producer is None and rec.step == 100
    for name, total, ms in (("c0", 1000, 3.0), ("c1", 2000, 5.0)):
        assert fold.apply(_remote(name, (ev.COLLECTOR, 2.0, total, 9, 4.0))) is None
        fold.apply(_remote(name, (ev.COLLECTOR_TIMING, 2.0, {"env_ms": ms})))
    got = fold.apply(
        _remote("c0", (ev.STEP, 3.0, 50, {"q": 1.0}, None, None, None, 0.0, 0.0, 0.0, 0.0, None))
    )
    assert got is not None and got.producer == "c0"
    assert (got.step, got.iteration) == (1000, 50)  # the producer's own axis
    assert dict(got.scalars)["train/q"] == 1.0
    assert state.iteration == 7 and state.latest_metrics == {"loss": 0.5}  # the learner's
    assert state.total_steps == 100 + 1000 + 2000
    assert state.collector_timing == {"env_ms": 3.0}  # (1 + 3 + 5) / 3
    assert list(state.reward_history) == [4.0, 4.0]  # the producers' mean rewards
    assert state.producers == {
        "c0": ProducerInfo(steps=1, iteration=50, total_steps=1000),
        "c1": ProducerInfo(steps=0, iteration=0, total_steps=2000),
    }
    # a later, smaller total from c1 replaces its earlier one (its latest counts)
    fold.apply(_remote("c1", (ev.COLLECTOR, 4.0, 1500, 9, 0.0)))
    fold.apply((ev.COLLECTOR, 4.0, 200, 5, 0.0))
    assert state.total_steps == 200 + 1000 + 1500
    # the run started with its first event (a producer's counts); what only the run may
    # say is ignored from a producer
    assert state.started and state.start_time == 1.0
    status = state.status
    for event in ((ev.START, 5.0, "x"), (ev.FINISH, 5.0, "t", "", True), (ev.TRAINING_TIMER, 5.0)):
        fold.apply(_remote("c0", event))
    assert state.status == status and state.start_time == 1.0
    assert not state.finished and state.training_start_time is None


# -- the API's bad input --------------------------------------------------------------------------
def test_remote_needs_a_log_dir_and_a_good_name(tmp_path: Path) -> None:
    log = OffPolicyLogger(log_backend="no_print", handle_sigterm=False, pump="thread")
    try:
        with pytest.raises(ValueError, match="needs a log_dir"):
            log.remote()
    finally:
        log.finish()
    with pytest.raises(ValueError, match="bad producer name"):
        RemoteLogger(tmp_path, "../up")


def test_a_remote_pickles_refuses_unpicklable_values_and_calls_after_close(
    tmp_path: Path,
) -> None:
    log = _logger(tmp_path / "run", pump="thread")
    r0, r1 = log.remote(), log.remote()
    assert (r0.name, r1.name) == ("remote0", "remote1")
    r = pickle.loads(pickle.dumps(r0))
    r.log_step(1, {"x": 1.0})
    with pytest.raises(TypeError, match=r"log_step: the value of 'bad' \(generator\)"):
        r.log_step(2, {"x": 1.0, "bad": (i for i in range(3))})
    with pytest.raises(TypeError, match="the value of 'status'"):
        r.log_status(lambda: 0)
    report = r.close()
    assert (report.sent, report.dropped, report.received, report.error) == (1, 0, 1, None)
    assert r.close() is report  # idempotent
    with pytest.raises(RuntimeError, match=r"log_step\(\) on RemoteLogger 'remote0' after its"):
        r.log_step(3)
    with pytest.raises(RuntimeError, match="after close"):
        r.flush()
    assert r1.close().sent == 0  # never used: nothing to send
    log.finish()
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [(x["producer"], x["iteration"]) for x in rows] == [("remote0", 1)]
    with pytest.raises(RuntimeError, match="after finish"):
        log.remote()


def test_a_client_with_a_wrong_key_is_refused_and_reported(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    log = _logger(run)
    log.log_step(1, {"x": 1.0})
    log.flush()  # the agent serves the folder by now
    sock = find_socket(str(run))
    assert sock is not None
    with pytest.raises(AuthenticationError):
        Client(sock, family="AF_UNIX", authkey=b"not the key")
    with log.remote("ok") as r:  # the run goes on, and still takes producers
        r.log_step(1, {"x": 2.0})
        r.flush()  # through the agent's pump: on disk now
        rows = read_jsonl(run / "metrics.jsonl")
        assert [(x.get("producer"), x["iteration"]) for x in rows] == [(None, 1), ("ok", 1)]
    log.log_step(2, {"x": 1.0})
    report = log.finish()
    assert report.complete and report.steps == 2
    assert "refused a connection to the run's socket" in capfd.readouterr().err
    rows = read_jsonl(run / "metrics.jsonl")
    assert [(x.get("producer"), x["iteration"]) for x in rows] == [(None, 1), ("ok", 1), (None, 2)]


def test_two_producers_with_one_name_keep_apart_and_the_csv_has_a_producer_column(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    log = _logger(run, backends=("csv",), pump="thread")
    a, b = RemoteLogger(run, "c"), RemoteLogger(run, "c")
    a.log_step(1, {"x": 1.0})
    a.flush()
    b.log_step(1, {"x": 2.0})
    b.flush()
    assert a.close().name == "c" and b.close().name == f"c-{os.getpid()}"
    log.log_step(5, {"x": 0.0})
    log.finish()
    lines = (run / "progress.csv").read_text().splitlines()
    header = lines[0].split(",")
    col = header.index("producer")
    assert [ln.split(",")[col] for ln in lines[1:]] == ["c", f"c-{os.getpid()}", ""]


def test_a_lost_run_neither_raises_nor_blocks_and_close_counts_the_loss(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log = _logger(tmp_path / "run", pump="thread", finish_timeout=0.3)
    r = log.remote("late", timeout=3.0)
    r.log_step(1, {"x": 1.0})
    r.flush()
    p = probe_remote(r)
    assert p.connected, p.error
    log.finish()  # the run ends with the remote still open
    assert "remotes still open: 'late'" in capfd.readouterr().err
    t0 = time.monotonic()
    for i in range(2, 1000):
        r.log_step(i, {"x": 1.0})  # never raises
    r.flush()
    report = r.close()
    assert time.monotonic() - t0 < 3.0
    assert report.sent >= 1 and report.dropped >= 998 - (report.sent - 1)
    assert report.error is not None and not report.complete


@pytest.mark.anyio
async def test_async_twin_in_thread_mode(tmp_path: Path) -> None:
    run = tmp_path / "run"
    async with AsyncOffPolicyLogger(
        log_dir=str(run), backends=("jsonl",), pump="thread", handle_sigterm=False
    ) as log:
        async with log.remote("a") as r:
            for i in range(1, 11):
                r.log_step(i, {"x": float(i)})
            await r.aflush()
            assert len(read_jsonl(run / "metrics.jsonl")) == 10  # flushed: on disk
        await log.log_step(1, {"y": 1.0})
        report = await r.aclose()  # idempotent
    assert report.complete
    rows = read_jsonl(run / "metrics.jsonl")
    assert [x["iteration"] for x in rows if x.get("producer") == "a"] == list(range(1, 11))


class _StuckRun:
    """A run folder whose server welcomes a producer, then never reads from it (a run that
    stopped taking events), until :meth:`drop` closes the connection (the run gone)."""

    def __init__(self, run: Path) -> None:
        from multiprocessing.connection import Listener

        from aoff._channel._paths import KEY_NAME, POINTER_NAME

        run.mkdir()
        key = os.urandom(16).hex().encode()
        fd = os.open(run / KEY_NAME, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, key)
        os.close(fd)
        self.where = tempfile.mkdtemp(prefix="aoff-")  # a short socket path
        sock = os.path.join(self.where, "s")
        (run / POINTER_NAME).write_text(sock + "\n")
        self.listener = Listener(sock, family="AF_UNIX", authkey=key)
        self.conn: Any = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn = self.listener.accept()
            hello = conn.recv()
            conn.send(("welcome", hello[1]))
        except OSError:  # dropped before a producer came
            return
        self.conn = conn  # and never read again

    def drop(self) -> None:
        if self.conn is None:
            self.listener.close()  # a producer that never came: accept() gives up
        self.thread.join(30)
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        self.listener.close()
        shutil.rmtree(self.where, ignore_errors=True)


@pytest.mark.parametrize("overflow", ["drop_oldest", "drop_newest"])
def test_frames_dropped_behind_a_stuck_or_gone_run_give_their_bytes_back(
    tmp_path: Path, overflow: Overflow
) -> None:
    """Behind a run that stopped reading, the buffer's policy drops images with the steps
    (the oldest in the connection's thread, or the newest at the put); once the run is
    gone, what was left and every later image are dropped too. Each gives its bytes back
    to the producer's media budget, so 20 + 20 images of 144 B go on fitting in 1,024 B
    (a refusal would raise here) and nothing stays held at the end."""
    stuck = _StuckRun(tmp_path / "run")
    r = RemoteLogger(
        tmp_path / "run", "painter", capacity=500, overflow=overflow, timeout=30, media_budget=1024
    )
    p = probe_remote(r)
    image = np.zeros((8, 6, 3), np.uint8)
    pad = "x" * 65536
    logged = 0

    def backed_up() -> bool:
        nonlocal logged
        r.log_status(pad)  # ~64 KiB an event: the socket and the link fill up
        logged += 1
        return p.link_pending_bytes > MAX_PENDING_BYTES

    try:
        wait_until(backed_up, timeout=60, interval=0.001, what="the link to back up")
        with warnings.catch_warnings():
            warnings.simplefilter("error", AoffWarning)  # a refusal would raise here
            for i in range(600):  # beyond the buffer's 500: it is full from now on
                r.log_step(i, {"x": 1.0})
            for k in range(20):
                # the image is out of the buffer (dropped: nothing drains) once all that was
                # before it is; drop_newest refuses it at the put
                before = p.buffer_drained + p.buffer_dropped + p.buffered
                r.log_image("img", image, step=k)
                for i in range(600):
                    r.log_step(i, {"x": 1.0})
                wait_until(
                    lambda n=before: p.buffer_drained + p.buffer_dropped > n,  # type: ignore[misc]
                    timeout=30,
                    interval=0.005,
                    what="the image to leave the buffer",
                )
            logged += 600 + 20 * 601
            stuck.drop()  # the run is gone: the producer gives up what is left
            wait_until(lambda: p.run_gone, timeout=30, what="the producer to see the run gone")
            for k in range(20):
                r.log_image("img", image, step=100 + k)
            logged += 20
        assert p.media_in_flight == 0  # every frame's bytes came back
        report = r.close()
    finally:
        stuck.drop()
    assert report.error is not None and not report.complete, report
    assert report.sent + report.dropped == logged, (report, logged)


# -- real processes -------------------------------------------------------------------------------
def _tensorboard_points(logdir: Path, runs: list[str], tag: str, n: int) -> dict[str, list[int]]:
    """Every run's ``tag`` steps, through the real TensorBoard server's scalars API on
    127.0.0.1 with its default loader (the Rust data server when installed)."""
    got: dict[str, list[int]] = {}  # what the server serves, run by run
    # every point, not a sample (0 means "none" to the Rust data server)
    with tensorboard_server(logdir, "--samples_per_plugin", "scalars=100000") as server:

        def probe() -> dict[str, list[int]] | None:
            for run in runs:
                if len(got.get(run, ())) != n:
                    got[run] = [int(p[1]) for p in server.scalars(run, tag)]
            return got if all(len(got[run]) == n for run in runs) else None

        return server.until(probe, f"{n} points of {tag} in each of {runs}")


@pytest.mark.slow  # 4 spawned processes and the real TensorBoard server
def test_four_spawned_collectors_every_step_on_disk_in_order_and_in_tensorboard(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    steps = 2000
    log = _logger(run)
    ctx = mp.get_context("spawn")
    names = [f"collector{k}" for k in range(4)]
    procs = [ctx.Process(target=remote_child.collector, args=(log.remote(n), steps)) for n in names]
    for p in procs:
        p.start()
    for i in range(1, 51):
        log.log_step(i, {"loss": 1.0})
        hold_still(0.01, "the learner's steps take time while the collectors log")
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    report = log.finish()
    assert report.complete
    rows = read_jsonl(run / "metrics.jsonl")
    assert [x["iteration"] for x in rows if "producer" not in x] == list(range(1, 51))
    for n in names:
        mine = [x for x in rows if x.get("producer") == n]
        assert [x["iteration"] for x in mine] == list(range(1, steps + 1)), n
        assert [x["step"] for x in mine] == [i * 10 for i in range(1, steps + 1)], n
        tb = read_tensorboard(run / n)
        assert [s for s, _ in tb["train/x"]] == [i * 10 for i in range(1, steps + 1)], n
    got = _tensorboard_points(run, names, "train/x", steps)
    for n in names:
        assert got.get(n) == [i * 10 for i in range(1, steps + 1)], (n, len(got.get(n, ())))


@pytest.mark.slow  # a spawned process, killed
def test_a_killed_collector_is_reported_and_the_run_completes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    log = _logger(run)
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    p = ctx.Process(target=remote_child.forever, args=(log.remote("doomed"), ready))
    p.start()
    try:
        assert ready.wait(60)
        log.log_step(1, {"x": 1.0})
        assert p.pid is not None
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
        log.log_step(2, {"x": 1.0})
    finally:
        if p.is_alive():
            p.kill()
    report = log.finish()
    assert report.steps == 2 and not report.backend_errors
    err = capfd.readouterr().err
    assert "remote 'doomed'" in err, err
    assert "was lost before its close() finished (killed, or its close() gave up" in err, err
    rows = read_jsonl(run / "metrics.jsonl")
    assert [x["iteration"] for x in rows if "producer" not in x] == [1, 2]
    doomed = [x["iteration"] for x in rows if x.get("producer") == "doomed"]
    assert doomed[:5] == [1, 2, 3, 4, 5] and doomed == list(range(1, len(doomed) + 1))


def test_thread_mode_sync_face_takes_a_producer_in_another_thread(tmp_path: Path) -> None:
    import threading

    run = tmp_path / "run"
    log = _logger(run, pump="thread")
    r = log.remote("t")
    th = threading.Thread(target=remote_child.collector, args=(r, 200))
    th.start()
    th.join(30)
    log.log_collector(total_steps=5, buffer_size=1)
    log.flush()
    log.finish()
    rows = read_jsonl(run / "metrics.jsonl")
    assert [x["iteration"] for x in rows if x.get("producer") == "t"] == list(range(1, 201))


def test_anyio_backend_param_is_used(anyio_backend: str) -> None:
    assert anyio_backend in ("asyncio", "trio")


_ = anyio  # the async tests run on asyncio and trio (conftest's anyio_backend)


@pytest.mark.slow  # a spawned process
def test_a_producers_own_rules_travel_to_the_run_and_judge_only_its_events(
    tmp_path: Path,
) -> None:
    """``log.remote(name, rules=...)``: the rules pickle with the producer into a spawned
    process, travel in its hello and are judged in the run on its events only: its NaN
    fires them (the learner's ``should_stop``, ``alerts.jsonl``), the same NaN from a
    producer without rules, and the learner's own, do not (the run watches no NaN)."""
    from aoff import rules

    run = tmp_path / "run"
    log = _logger(run, log_backend="none", rules=[rules.stalled(300)])
    watched = log.remote("watched", rules=[rules.nonfinite(stop=True)])
    assert pickle.loads(pickle.dumps(watched))._settings.rules == (rules.nonfinite(stop=True),)
    with pytest.raises(TypeError, match="not a rule"):
        log.remote("bad", rules=["nonfinite"])  # type: ignore[list-item]
    p = mp.get_context("spawn").Process(target=remote_child.nan_collector, args=(watched, 5, 3))
    p.start()
    plain = log.remote("plain")
    remote_child.nan_collector(plain, 5, 3)
    log.log_step(1, {"loss": float("nan")})
    p.join(60)
    assert p.exitcode == 0
    log.flush()  # the agent's alert has reached this process
    assert log.should_stop
    assert [(a.rule, a.tag, a.step) for a in log.alerts] == [("nonfinite", "watched:train/x", 3)]
    report = log.finish()
    assert [a.tag for a in report.alerts] == ["watched:train/x"]
    lines = [json.loads(x) for x in (run / rules.ALERTS_NAME).read_text().splitlines()]
    assert [(x["tag"], x["step"], x["stop"]) for x in lines] == [("watched:train/x", 3, True)]
    assert lines[0]["message"] == "train/x is nan at step 3 (producer watched)"
