"""``aoff attach``: a real run watched from a pseudo-terminal, the socket's security, stale
sockets, thread mode, the long-path fallback, choosing among live runs, ``aoff ls``, and
the order of a backend's "logging to" line and the dashboard.

The run under watch is ``tests/attach_child.py`` (sync face, default process pump, its
stdout a file, as under nohup); the viewers are ``python -m aoff attach`` in a pty (via
pexpect) or, where only the protocol matters, ``multiprocessing.connection.Client``.
"""

from __future__ import annotations

import io
import os
import pickle
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any

import anyio
import pexpect
import pytest

from aoff import BackendContext, OffPolicyLogger, RunView
from aoff.__main__ import main
from aoff._channel._paths import KEY_NAME, POINTER_NAME, SOCKET_NAME, SUN_PATH_MAX, probe
from aoff._cli._demo import run
from aoff._cli._demo_config import DemoConfig
from aoff.testing import MemoryBackend, RecordingDisplay, wait_until

from .conftest import read_jsonl, sigint_as_in_a_shell

CHILD = str(Path(__file__).with_name("attach_child.py"))
ITER = re.compile(r"iter (\d+)/100000")
TIMEOUT = 20.0  # generous: the machine is slow and shared

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs Unix sockets and a pty")


# -- helpers ------------------------------------------------------------------------------------
def wait_for(what: str, pred: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    wait_until(pred, timeout=timeout, interval=0.02, what=what)


def start_child(
    log_dir: Path, *, pump: str = "process", seconds: float = 60.0
) -> subprocess.Popen[bytes]:
    """The training run, its stdout and stderr a file (``log_dir``'s sibling)."""
    log_dir.parent.mkdir(parents=True, exist_ok=True)
    out = open(log_dir.parent / f"{log_dir.name}.out", "wb")  # noqa: SIM115 - the child's
    try:
        child = subprocess.Popen(
            [sys.executable, CHILD, str(log_dir), "--pump", pump, "--seconds", str(seconds)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    finally:
        out.close()
    wait_for(
        "the run's socket", lambda: (log_dir / SOCKET_NAME).exists() or child.poll() is not None
    )
    assert child.poll() is None, (log_dir.parent / f"{log_dir.name}.out").read_text()
    return child


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for c in started:
        if c.poll() is None:
            c.kill()
            c.wait()


def attach(run_dir: Path | str, *args: str) -> pexpect.spawn[str]:
    env = dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", COLUMNS="100", LINES="30")
    env.pop("NO_COLOR", None)
    return pexpect.spawn(
        sys.executable,
        ["-m", "aoff", "attach", str(run_dir), *args],
        dimensions=(30, 100),
        encoding="utf-8",
        codec_errors="replace",
        timeout=TIMEOUT,
        env=env,
        preexec_fn=sigint_as_in_a_shell,  # the test's Ctrl+C must reach it
    )


def read_iteration(viewer: pexpect.spawn[str]) -> int:
    viewer.expect(ITER)
    match = viewer.match
    assert isinstance(match, re.Match)
    return int(match.group(1))


def view(run_dir: Path, key: bytes | None = None) -> Connection:
    """A viewer over the protocol: connect with the run's key (or ``key``), ask to view."""
    if key is None:
        key = (run_dir / KEY_NAME).read_bytes().strip()
    conn = Client(str(run_dir / SOCKET_NAME), family="AF_UNIX", authkey=key)
    conn.send(("view", 10))
    return conn


def next_message(conn: Connection) -> Any:
    assert conn.poll(TIMEOUT), "no message from the run"
    return conn.recv()


def rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    return read_jsonl(path) if path.exists() else []


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def quiet_logger(run_dir: Path, backend: MemoryBackend) -> OffPolicyLogger:
    """A thread-mode run in this process that serves ``run_dir`` (once this returns)."""
    log = OffPolicyLogger(
        log_backend="none",
        backends=(backend,),
        log_dir=str(run_dir),
        pump="thread",
        env_name="InProcess-v0",
        max_iterations=1000,
        display=RecordingDisplay(),
        handle_sigterm=False,
    )
    served = (run_dir / SOCKET_NAME, run_dir / POINTER_NAME)
    wait_for("the run's socket", lambda: any(p.exists() for p in served))
    return log


# -- a real run, watched from a pty -------------------------------------------------------------
def test_attach_draws_the_panel_detaches_and_sees_the_end(
    tmp_path: Path, children: list[subprocess.Popen[bytes]]
) -> None:
    run_dir = tmp_path / "run"
    child = start_child(run_dir)
    children.append(child)
    # only the owner may open either file, from their creation on
    assert stat.S_ISSOCK(os.lstat(run_dir / SOCKET_NAME).st_mode)
    assert mode(run_dir / SOCKET_NAME) == 0o600 and mode(run_dir / KEY_NAME) == 0o600

    viewer = attach(run_dir, "--refresh", "10")
    viewer.expect("aoff Off-Policy Training")
    viewer.expect("AttachEnv-v0")
    first = read_iteration(viewer)
    later = first
    while later <= first:  # the panel's values move with the run
        later = read_iteration(viewer)

    # a wrong key is refused, and so is a viewer that skips the handshake; the run goes on
    with pytest.raises(AuthenticationError):
        Client(str(run_dir / SOCKET_NAME), family="AF_UNIX", authkey=b"0" * 64)
    keyless = Client(str(run_dir / SOCKET_NAME), family="AF_UNIX")
    try:
        keyless.send(("view", 10))
        while keyless.poll(1.0):
            msg = keyless.recv()
            assert not (isinstance(msg, tuple) and msg[0] == "state"), "served without the key"
    except (EOFError, OSError, pickle.UnpicklingError):
        pass
    finally:
        keyless.close()

    # a viewer that is killed mid-run (or whose terminal is closed) never touches the run
    killed = attach(run_dir, "--refresh", "20")
    read_iteration(killed)
    killed.kill(signal.SIGKILL)
    killed.close(force=True)

    viewer.sendintr()  # Ctrl+C: detach
    viewer.expect("detached")
    viewer.expect(pexpect.EOF)
    viewer.close()
    assert viewer.exitstatus == 0
    assert child.poll() is None  # the run goes on
    seen = len(rows(run_dir))
    wait_for("more rows after the detach", lambda: len(rows(run_dir)) > seen)

    second = attach(run_dir)
    read_iteration(second)
    (run_dir / "stop").touch()  # the run ends while the second viewer watches
    second.expect("Training stopped at")
    second.expect("has ended")
    second.expect(pexpect.EOF)
    second.close()
    assert second.exitstatus == 0

    assert child.wait(TIMEOUT) == 0
    logged = int((run_dir / "logged.txt").read_text())
    assert [r["iteration"] for r in rows(run_dir)] == list(range(1, logged + 1))
    assert not (run_dir / SOCKET_NAME).exists() and not (run_dir / KEY_NAME).exists()


# -- thread mode, then a killed run ---------------------------------------------------------------
def test_thread_mode_serves_and_a_killed_run_is_not_live(
    tmp_path: Path, children: list[subprocess.Popen[bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "runs"
    run_dir = root / "t1"
    child = start_child(run_dir, pump="thread")
    children.append(child)
    conn = view(run_dir)
    kind, state, _now = next_message(conn)
    assert kind == "state" and state.config.env_name == "AttachEnv-v0"
    conn.close()
    wait_for("a first row", lambda: bool(rows(run_dir)))
    assert main(["ls", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[-1] == "live"

    child.send_signal(signal.SIGKILL)  # thread mode: the one process that serves
    child.wait()
    assert (run_dir / SOCKET_NAME).exists()  # left behind
    got = subprocess.run(
        [sys.executable, "-m", "aoff", "attach", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert got.returncode == 1
    assert "is not live" in got.stderr and "did not end cleanly" in got.stderr
    assert main(["ls", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("not live (stale socket)")
    assert main(["attach", str(root)]) == 1  # the parent folder: no live run below it
    assert "no live run" in capsys.readouterr().err


# -- security: another user -------------------------------------------------------------------
def _nobody() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


@pytest.mark.skipif(
    os.geteuid() != 0 or _nobody() is None,
    reason="switching to another user (nobody) needs root",
)
def test_another_user_is_refused() -> None:
    nobody = _nobody()
    assert nobody is not None
    # a folder other users may walk into (pytest's tmp_path is private to root)
    root = Path(tempfile.mkdtemp(prefix="aoff-attach-"))
    try:
        root.chmod(0o755)
        backend = MemoryBackend()
        (root / "run").mkdir(mode=0o755)
        log = quiet_logger(root / "run", backend)
        log.start()
        # a child that sets its user to nobody once its modules are loaded (nobody may
        # not read this virtual environment); the OS refuses its connection (socket mode
        # 0600), then `aoff attach` refuses the socket (another user's) and says why
        sock, target = str(root / "run" / SOCKET_NAME), str(root / "run")
        script = (
            "import os, sys\n"
            "from multiprocessing.connection import Client\n"
            "from rich.console import Console\n"
            "import aoff.__main__\n"
            "aoff.__main__._parser(); Console()  # every module the command needs, loaded\n"
            f"os.setgroups([]); os.setgid({nobody.pw_gid}); os.setuid({nobody.pw_uid})\n"
            "try:\n"
            f"    Client({sock!r}, family='AF_UNIX')\n"
            "    sys.exit(3)\n"
            "except PermissionError:\n"
            "    pass\n"
            f"sys.exit(aoff.__main__.main(['attach', {target!r}]))\n"
        )
        got = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            cwd="/",
        )
        assert got.returncode == 1, got.stderr
        assert "belongs to another user" in got.stderr and "only the run's owner" in got.stderr
        for i in range(5):
            log.log_step(i, {"loss": float(i)}, reward=float(i))
        log.finish()
        assert [r.iteration for r in backend.records] == list(range(5))
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- in-process runs: protocol, long paths, several runs -------------------------------------------
def test_unknown_role_is_answered_and_the_run_keeps_serving(tmp_path: Path) -> None:
    backend = MemoryBackend()
    log = quiet_logger(tmp_path / "run", backend)
    log.start()
    key = (tmp_path / "run" / KEY_NAME).read_bytes().strip()
    conn = Client(str(tmp_path / "run" / SOCKET_NAME), family="AF_UNIX", authkey=key)
    conn.send(("produce-nonsense", 1))
    kind, text = next_message(conn)
    assert kind == "error" and "unknown role" in text and "view" in text
    conn.close()
    viewer = view(tmp_path / "run")
    log.log_step(1, {"loss": 1.0}, reward=2.0)
    msg = next_message(viewer)
    while msg[1].iteration < 1:
        msg = next_message(viewer)
    assert msg[0] == "state" and list(msg[1].reward_history) == [2.0]
    log.finish()
    end = next_message(viewer)
    while end[0] == "state":
        end = next_message(viewer)
    assert end[0] == "end" and end[1].iteration == 1 and end[1].finished
    # plain tuples on the wire: a viewer unpickles them without aoff's message types
    assert type(msg) is tuple and type(end) is tuple
    assert [r.iteration for r in backend.records] == [1]


def test_the_channels_typed_messages_are_the_tuples_on_the_wire() -> None:
    from aoff._channel._roles import (
        Produce,
        Refused,
        View,
        Welcome,
        decode_hello,
        decode_to_producer,
        decode_to_viewer,
        to_wire,
    )

    assert decode_hello(("view",)) == View(4.0) and decode_hello(("view", 10)) == View(10.0)
    assert decode_hello(("produce", "col", 7)) == Produce("col", 7)
    assert to_wire(Produce("col", 7)) == ("produce", "col", 7)
    assert decode_to_producer(to_wire(Welcome("col-7"))) == Welcome("col-7")
    assert decode_to_viewer(("error", "no")) == Refused("no")
    for bad, why in [
        ("view", "role tag"),
        (("view", True), "refresh must be a number > 0"),
        (("produce", ".hidden"), "bad producer name"),
        (("watch", 1), "unknown role 'watch': known are ['produce', 'view']"),
    ]:
        with pytest.raises(ValueError, match=re.escape(why)):
            decode_hello(bad)
    with pytest.raises(ValueError, match="not a message for a viewer"):
        decode_to_viewer(("state", "too few"))


def test_a_long_run_folder_gets_its_socket_in_a_private_temp_folder(tmp_path: Path) -> None:
    run_dir = tmp_path / ("d" * max(1, SUN_PATH_MAX - len(str(tmp_path)))) / "run"
    assert len(os.fsencode(run_dir / SOCKET_NAME)) > SUN_PATH_MAX
    log = quiet_logger(run_dir, MemoryBackend())
    log.start()
    pointer = run_dir / POINTER_NAME
    sock = Path(pointer.read_text().strip())
    assert not (run_dir / SOCKET_NAME).exists()
    assert mode(pointer) == 0o600 and mode(sock) == 0o600 and mode(sock.parent) == 0o700
    log.log_step(3, {"loss": 1.0})
    key = (run_dir / KEY_NAME).read_bytes().strip()
    conn = Client(str(sock), family="AF_UNIX", authkey=key)
    conn.send(("view", 10))
    assert next_message(conn)[0] == "state"
    conn.close()
    log.finish()
    assert not pointer.exists() and not sock.exists() and not sock.parent.exists()


def test_a_new_run_replaces_a_killed_runs_socket_and_key(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # what a SIGKILLed run leaves: a socket nobody listens on, and its key
    with socket.socket(socket.AF_UNIX) as dead:
        dead.bind(str(run_dir / SOCKET_NAME))
    (run_dir / KEY_NAME).write_bytes(b"old\n")
    assert main(["attach", str(run_dir)]) == 1
    log = quiet_logger(run_dir, MemoryBackend())
    wait_for("the new run's socket", lambda: probe(str(run_dir / SOCKET_NAME)) == "live")
    assert (run_dir / KEY_NAME).read_bytes() != b"old\n" and mode(run_dir / KEY_NAME) == 0o600
    log.start()
    conn = view(run_dir)
    assert next_message(conn)[0] == "state"
    conn.close()
    log.finish()
    assert not (run_dir / SOCKET_NAME).exists() and not (run_dir / KEY_NAME).exists()


def test_several_live_runs_the_user_chooses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = {name: quiet_logger(tmp_path / name, MemoryBackend()) for name in ("a", "b")}
    for log in logs.values():
        log.start()
    logs["b"].log_step(7, {"loss": 1.0})
    monkeypatch.setattr(sys, "stdin", io.StringIO("2\n"))
    # b ends once the viewer is attached; the viewer then shows its summary and exits 0
    ender = threading.Timer(1.0, logs["b"].finish)
    ender.start()
    try:
        assert main(["attach", str(tmp_path)]) == 0
    finally:
        ender.join()
        logs["a"].finish()
    out = capsys.readouterr().out
    assert "2 live runs" in out and "1) a" in out and "2) b" in out
    assert (
        "Training stopped at 7 of 1,000" in out
        and "Iterations: 7/1000" in out
        and "'b' has ended" in out
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("9\n"))
    assert main(["attach", str(tmp_path)]) == 1  # nothing live any more
    assert "no live run" in capsys.readouterr().err


def test_ls_marks_a_truncated_demo_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = DemoConfig(iterations=5, iter_ms=0.0, logdir=str(tmp_path), name="r", backends=("jsonl",))
    assert run(cfg, out=io.StringIO()) == 0
    path = tmp_path / "r" / "metrics.jsonl"
    path.write_bytes(path.read_bytes()[:-20])
    capsys.readouterr()
    assert main(["ls", str(tmp_path)]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.startswith("r ") and line.endswith("finished (damaged file: see aoff show)")
    assert main(["attach", str(tmp_path / "r")]) == 1
    assert "is not live: its run has ended" in capsys.readouterr().err


# -- papercut: a backend's "logging to" line comes before the first progress line ----------------
class _SlowOpen(MemoryBackend):
    """Opens as slowly as a cold TensorBoard import, then says where it logs."""

    async def open(self, ctx: BackendContext) -> None:
        await anyio.sleep(0.3)  # on purpose: an open that takes time
        await super().open(ctx)
        ctx.say("slow logging to: somewhere")


class _Order(RecordingDisplay):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def open(self, state: RunView, now: float) -> None:
        self.calls.append("open")

    def say(self, markup: str) -> None:
        self.calls.append(markup)


def test_the_logging_to_line_comes_before_the_dashboard() -> None:
    display = _Order()
    log = OffPolicyLogger(
        log_backend="none",
        backends=(_SlowOpen(),),
        display=display,
        pump="thread",
        handle_sigterm=False,
    )
    log.start()
    steps = iter(range(1_000_000))

    def step_then_opened() -> bool:
        log.log_step(next(steps), {"loss": 1.0})
        return "open" in display.calls

    # the run goes on while the backend opens, until the dashboard has opened too
    wait_until(step_then_opened, interval=0.02, what="the dashboard to open")
    log.finish()
    assert display.calls[:2] == ["slow logging to: somewhere", "open"]


@pytest.mark.slow  # a smoke run of the benchmark (5 processes, ~5 s); no timing asserted
def test_bench_attach_runs(tmp_path: Path) -> None:
    bench = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_attach.py"
    got = subprocess.run(
        [
            sys.executable,
            str(bench),
            "--iterations",
            "200",
            "--rounds",
            "1",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stdout + got.stderr
    table = [ln for ln in got.stdout.splitlines() if ln.startswith("| ")]
    assert [ln.split("|")[1].strip() for ln in table[2:]] == ["none", "0 viewers", "2 viewers"]
    assert "every viewer showed the run's summary" in got.stdout
    assert (tmp_path / "bench_attach.json").exists()
