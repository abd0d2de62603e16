"""End to end: the real pipeline on a real pseudo-terminal, a redirected stdout, and signals.

Each test runs ``tests/terminal_child.py`` (a short training loop on the public API) in a
child process: under a pty of a fixed size (via pexpect) to see exactly the bytes a
terminal would get, or with stdout redirected to a file. A tiny screen model below
replays the bytes (the few control sequences Rich's ``Live`` uses) so the tests can
check the screen a user is left with, not only the byte stream.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pexpect
import pytest
from rich.console import Console

from aoff import (
    AsyncOffPolicyLogger,
    Dashboard,
    Record,
    RunConfig,
    RunView,
)
from aoff._core._state import State
from aoff.testing import ManualClock, MemoryBackend, RecordingDisplay, await_until, wait_until

from .conftest import (
    ahold_still,
    make_async_logger,
    make_logger,
    read_jsonl,
    tensorboard_accumulator,
)
from .terminal_child import MARKER_ERR, MARKER_LOG, MARKER_OUT

CHILD = str(Path(__file__).with_name("terminal_child.py"))
ROWS, COLS = 40, 120
HIDE_CURSOR = "\x1b[?25l"
SHOW_CURSOR = "\x1b[?25h"
PANEL_TITLE = "aoff Off-Policy Training"
CHILD_TIMEOUT = 60.0  # generous: the machine is slow and shared; a pass takes ~2-4 s

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


# -- a screen model ----------------------------------------------------------------------
_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")
_SGR = re.compile(r"\x1b\[([0-9;]*)m")


@dataclass
class Screen:
    """Replays a byte stream onto an unbounded list of rows (the scrollback included).

    Understands what Rich writes: text, CR, LF, SGR (ignored), erase-line, cursor up and
    down, cursor show/hide. Anything else is collected in ``unknown`` so a test notices.
    The cursor cannot move above the top of a ``height``-row screen, as on a terminal.
    """

    height: int = ROWS
    rows: list[list[str]] = field(default_factory=lambda: [[]])
    row: int = 0
    col: int = 0
    cursor_visible: bool = True
    unknown: list[str] = field(default_factory=list)

    def _top(self) -> int:
        return max(0, len(self.rows) - self.height)

    def _put(self, ch: str) -> None:
        line = self.rows[self.row]
        if self.col < len(line):
            line[self.col] = ch
        else:
            line.extend(" " * (self.col - len(line)))
            line.append(ch)
        self.col += 1

    def feed(self, text: str) -> None:
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch == "\x1b":
                m = _CSI.match(text, i)
                if m is None:
                    self.unknown.append(repr(text[i : i + 8]))
                    i += 1
                    continue
                self._csi(m.group(1), m.group(2))
                i = m.end()
                continue
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self.row += 1
                if self.row == len(self.rows):
                    self.rows.append([])
            elif ch == "\b":
                self.col = max(0, self.col - 1)
            elif ch == "\x07":
                pass
            elif ch < " ":
                self.unknown.append(repr(ch))
            else:
                self._put(ch)
            i += 1

    def _csi(self, params: str, final: str) -> None:
        count = int(params) if params.isdigit() else 1
        if final == "m":
            return
        if params == "?25" and final in "lh":
            self.cursor_visible = final == "h"
        elif final == "K":
            line = self.rows[self.row]
            if params in ("", "0"):
                del line[self.col :]
            elif params == "2":
                line.clear()
            else:
                self.unknown.append(f"CSI {params}{final}")
        elif final == "A":
            self.row = max(self._top(), self.row - count)
        elif final == "B":
            self.row += count
            while len(self.rows) <= self.row:
                self.rows.append([])
        elif final == "G":
            self.col = count - 1
        else:
            self.unknown.append(f"CSI {params}{final}")

    def lines(self) -> list[str]:
        return ["".join(r).rstrip() for r in self.rows]


def strip_sgr(text: str) -> str:
    return _SGR.sub("", text)


def iterations_shown(raw: str) -> list[int]:
    """Every ``iter N/100000`` in the stream, in order (one per drawn frame or line)."""
    return [int(m) for m in re.findall(r"iter (\d+)/100000", strip_sgr(raw))]


def frames_drawn(raw: str) -> int:
    return raw.count("Losses & Metrics")


# -- running the child -------------------------------------------------------------------
def child_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "COLUMNS",
            "LINES",
            "NO_COLOR",
            "FORCE_COLOR",
            "TTY_COMPATIBLE",
            "TTY_INTERACTIVE",
            "JUPYTER_COLUMNS",
            "JUPYTER_LINES",
        }
    }
    env.update(TERM="xterm-256color", PYTHONIOENCODING="utf-8", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def child_args(mode: str, out: Path, *opts: str) -> list[str]:
    return [CHILD, mode, str(out), *opts]


class PtyRun:
    """The child on a ``ROWS``x``COLS`` pty; keeps reading so the child never blocks."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.child: pexpect.spawn[bytes] = pexpect.spawn(
            sys.executable,
            args,
            env=env,
            dimensions=(ROWS, COLS),
            timeout=CHILD_TIMEOUT,
            encoding=None,
        )
        self.data = bytearray()

    def read_until(self, done: Callable[[], bool], timeout: float = CHILD_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"child did not get there within {timeout}s; output so far:\n"
                    f"{self.text()[-3000:]}"
                )
            if not self._read_some():
                return  # EOF

    def _read_some(self) -> bool:
        try:
            self.data += self.child.read_nonblocking(65536, timeout=0.05)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return False
        return True

    def wait(self, timeout: float = CHILD_TIMEOUT) -> int | None:
        """Read to EOF and reap; returns the exit status (None if killed by a signal)."""
        deadline = time.monotonic() + timeout
        while self._read_some():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"child still running after {timeout}s:\n{self.text()[-3000:]}"
                )
        self.child.close()
        return self.child.exitstatus

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", errors="replace")

    def read_more(self) -> str:
        """Read what is there (waiting at most 50 ms), then all the output so far."""
        self._read_some()
        return self.text()

    def kill(self) -> None:
        if self.child.isalive():
            self.child.kill(signal.SIGKILL)
        self.child.close(force=True)


@pytest.fixture
def pty_run() -> Iterator[Callable[..., PtyRun]]:
    runs: list[PtyRun] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> PtyRun:
        run = PtyRun(args, env if env is not None else child_env())
        runs.append(run)
        return run

    yield start
    for run in runs:  # never leave a child behind, whatever the test did
        run.kill()


def steer(read: Callable[[], str], out: Path, shown: int = 3) -> None:
    """Drive a ``--steered`` child whose output ``read`` returns so far: once its first
    iteration is shown, have it print the markers; once ``shown`` more iterations have
    been shown after them, stop it. The run is as long as the test needs to see what it
    asserts, however slow the machine: no frame count depends on a clock."""

    def after_marker() -> set[int]:
        text = read()
        return set(iterations_shown(text[text.find(MARKER_OUT) :])) if MARKER_OUT in text else set()

    wait_until(lambda: iterations_shown(read()), timeout=CHILD_TIMEOUT, what="a first frame")
    (out / "say").touch()
    wait_until(lambda: len(after_marker()) >= shown, timeout=CHILD_TIMEOUT, what="frames after")
    (out / "stop").touch()


def steer_pty(run: PtyRun, out: Path, shown: int = 3) -> None:
    """:func:`steer` on a pty (each look reads what the child wrote meanwhile)."""
    steer(run.read_more, out, shown)


def run_to_file(
    args: list[str], tmp_path: Path, env: dict[str, str], *, steered: bool = False
) -> tuple[str, str, int]:
    """Run the child with stdout and stderr redirected to files; ``steered``: pace it
    with :func:`steer` (its args must say ``--steered``)."""
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env
        )
        try:
            if steered:
                steer(lambda: out_path.read_text(encoding="utf-8", errors="replace"), tmp_path)
            proc.wait(timeout=CHILD_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return (
        out_path.read_text(encoding="utf-8"),
        err_path.read_text(encoding="utf-8"),
        proc.returncode,
    )


def assert_summary_after_last_panel(lines: list[str], *, interrupted: bool) -> None:
    tops = [i for i, line in enumerate(lines) if PANEL_TITLE in line]
    summaries = [i for i, line in enumerate(lines) if "Training Summary" in line]
    assert len(summaries) == 1, "\n".join(lines)
    if tops:
        assert summaries[0] > tops[-1]
    body = "\n".join(lines[summaries[0] :])
    expected = "Training interrupted" if interrupted else "Training stopped at"
    assert expected in body, body
    assert "SACTERM" in body and "PendulumTerm-v1" in body


# -- 1. the live panel on a real terminal -------------------------------------------------
@pytest.mark.slow  # a child process on a pty or a pipe
@pytest.mark.parametrize("pump", ["process", "thread"])
def test_live_panel_on_a_pty_draws_updates_and_gives_the_terminal_back(
    tmp_path: Path, pty_run: Callable[..., PtyRun], pump: str
) -> None:
    run = pty_run(
        child_args(
            "timed",
            tmp_path,
            "--seconds",
            str(CHILD_TIMEOUT),
            "--steered",
            "--refresh",
            "8",
            "--pump",
            pump,
            "--log-marker",
        )
    )
    steer_pty(run, tmp_path)
    assert run.wait() == 0, run.text()[-3000:]
    raw = run.text()

    # drawn, with the seed's sections and the values logged
    plain = strip_sgr(raw)
    assert PANEL_TITLE in plain
    for text in ("Losses & Metrics", "Rewards", "Learner", "Collector", "System"):
        assert text in plain, text
    assert "SACTERM" in plain and "PendulumTerm-v1" in plain
    assert "Critic Loss" in plain and "-2.500" in plain and "0.1250" in plain

    # updated: several frames, and the iteration counter advances across them
    shown = iterations_shown(raw)
    assert frames_drawn(raw) >= 3
    assert len(set(shown)) >= 3, shown
    assert shown == sorted(shown)

    # at most refresh_per_second frames a second while the logger lived (+ the first, the
    # final and the stop re-render)
    lived = float((tmp_path / "elapsed.txt").read_text())
    assert frames_drawn(raw) <= 8 * lived + 3, (frames_drawn(raw), lived)

    # the terminal is given back: cursor shown after the last hide, summary printed
    assert HIDE_CURSOR in raw
    assert raw.rfind(SHOW_CURSOR) > raw.rfind(HIDE_CURSOR)
    screen = Screen()
    screen.feed(raw)
    assert screen.cursor_visible
    assert not screen.unknown, screen.unknown
    lines = screen.lines()

    # redrawn in place: the scrollback holds exactly one panel (the last frame)
    assert sum(PANEL_TITLE in line for line in lines) == 1, "\n".join(lines)
    assert_summary_after_last_panel(lines, interrupted=False)
    assert "child finished after" in lines[-2] and lines[-1] == ""

    # print(), stderr and logging (a handler made before the logger, holding the real
    # stderr) from the training code while the panel was live (drawn by the agent with
    # pump="process"): above the panel, each on its own row, intact
    top = next(i for i, line in enumerate(lines) if PANEL_TITLE in line)
    for marker in (MARKER_OUT, MARKER_ERR, MARKER_LOG):
        rows = [i for i, line in enumerate(lines) if marker in line]
        assert len(rows) == 1, (marker, "\n".join(lines))
        assert lines[rows[0]] == marker
        assert rows[0] < top
    assert raw.index(MARKER_OUT) > raw.index("Losses & Metrics")  # printed while live


@pytest.mark.slow  # a child process on a pty or a pipe
def test_no_color_on_a_pty_has_no_colour_codes(
    tmp_path: Path, pty_run: Callable[..., PtyRun]
) -> None:
    run = pty_run(
        child_args("timed", tmp_path, "--seconds", str(CHILD_TIMEOUT), "--steered"),
        child_env(NO_COLOR="1"),
    )
    steer_pty(run, tmp_path, shown=1)
    assert run.wait() == 0, run.text()[-3000:]
    raw = run.text()
    assert frames_drawn(raw) >= 2 and HIDE_CURSOR in raw  # still a live panel
    colour = re.compile(r"^(3[0-9]|4[0-9]|9[0-7]|10[0-7])$")
    for params in _SGR.findall(raw):
        codes = params.split(";")
        assert not any(colour.match(c) for c in codes), f"colour SGR {params!r}"
    assert raw.rfind(SHOW_CURSOR) > raw.rfind(HIDE_CURSOR)
    screen = Screen()
    screen.feed(raw)
    assert_summary_after_last_panel(screen.lines(), interrupted=False)


@pytest.mark.slow  # a child process on a pty or a pipe
def test_dumb_terminal_gets_plain_lines_without_cursor_codes(
    tmp_path: Path, pty_run: Callable[..., PtyRun]
) -> None:
    run = pty_run(
        child_args(
            "timed",
            tmp_path,
            "--seconds",
            str(CHILD_TIMEOUT),
            "--steered",
            "--plain-interval",
            "0.25",
        ),
        child_env(TERM="dumb"),
    )
    steer_pty(run, tmp_path)
    assert run.wait() == 0, run.text()[-3000:]
    raw = run.text()
    assert "\x1b" not in raw, [m.group(0) for m in re.finditer(r"\x1b.{0,6}", raw)][:10]
    shown = iterations_shown(raw)
    assert len(shown) >= 3 and shown == sorted(shown), shown
    lines = raw.replace("\r\n", "\n").split("\n")
    assert MARKER_OUT in lines and MARKER_ERR in lines
    assert_summary_after_last_panel(lines, interrupted=False)


# -- 2. stdout redirected to a file -------------------------------------------------------
@pytest.mark.slow  # a child process on a pty or a pipe
def test_redirected_stdout_gets_plain_lines_and_no_escape_codes(tmp_path: Path) -> None:
    out, err, code = run_to_file(
        child_args(
            "timed",
            tmp_path,
            "--seconds",
            str(CHILD_TIMEOUT),
            "--steered",
            "--plain-interval",
            "0.25",
        ),
        tmp_path,
        child_env(),
        steered=True,
    )
    assert code == 0, out + err
    assert "\x1b" not in out and "\x1b" not in err
    lines = out.splitlines()
    progress = [line for line in lines if line.startswith("iter ")]
    shown = iterations_shown(out)
    assert len(progress) >= 3 and len(set(shown)) >= 3, out
    assert shown == sorted(shown)
    assert all(" | " in line and "steps/s" in line for line in progress[1:])
    assert MARKER_OUT in lines
    assert MARKER_ERR in err.splitlines()
    assert_summary_after_last_panel(lines, interrupted=False)
    assert lines[-1].startswith("child finished after")


# -- 3. signals: nothing logged before the signal is lost, and the terminal comes back ----
def logged_before_signal(out: Path) -> list[int]:
    text = (out / "progress.txt").read_text(encoding="utf-8")
    complete = text[: text.rfind("\n") + 1]  # a line cut by the signal does not count
    return [int(x) for x in complete.split() if x != "finished"]


def jsonl_iterations(out: Path) -> list[int]:
    rows = read_jsonl(out / "metrics.jsonl")
    for row in rows:
        assert row["step"] == row["iteration"] * 4096
        assert row["train/critic_loss"] == pytest.approx(1.0 / row["iteration"])
    return [int(r["iteration"]) for r in rows]


def tensorboard_iterations(out: Path) -> list[int]:
    files = list(out.glob("events.out.tfevents.*"))
    assert len(files) == 1, files
    events = tensorboard_accumulator(out).Scalars("axis/iteration")
    assert [e.step for e in events] == [int(e.value) * 4096 for e in events]
    return [int(e.value) for e in events]


def assert_nothing_lost(out: Path) -> None:
    before = logged_before_signal(out)
    assert len(before) >= 20 and before == list(range(1, len(before) + 1))
    for written in (jsonl_iterations(out), tensorboard_iterations(out)):
        # every step logged before the signal, in order, no gaps (one or two more may
        # have been logged between the last progress line and the signal)
        assert written == list(range(1, len(written) + 1))
        assert len(written) >= len(before)


def wait_for_progress(run: PtyRun, out: Path, steps: int) -> None:
    def enough() -> bool:
        path = out / "progress.txt"
        return path.exists() and len(logged_before_signal(out)) >= steps

    run.read_until(enough)


@pytest.mark.slow  # a child process on a pty or a pipe
@pytest.mark.parametrize(
    ("how", "expected_status"),
    [("SIGTERM", 143), ("Ctrl+C", None)],
)
def test_signal_mid_run_on_a_pty_loses_nothing_and_restores_the_terminal(
    tmp_path: Path, pty_run: Callable[..., PtyRun], how: str, expected_status: int | None
) -> None:
    run = pty_run(child_args("forever", tmp_path, "--backends", "tb", "--seconds", "20"))
    wait_for_progress(run, tmp_path, 40)
    run.read_until(lambda: frames_drawn(run.text()) >= 2)  # the panel is live
    if how == "SIGTERM":
        run.child.kill(signal.SIGTERM)
    else:
        run.child.sendintr()  # the terminal's ^C: SIGINT to the foreground group
    status = run.wait()
    raw = run.text()
    if expected_status is None:  # KeyboardInterrupt re-raises SIGINT on the way out
        assert run.child.signalstatus == signal.SIGINT, raw[-2000:]
        assert "KeyboardInterrupt" in raw
    else:
        assert status == expected_status, raw[-2000:]
    assert "child finished" not in raw

    assert_nothing_lost(tmp_path)
    assert raw.rfind(SHOW_CURSOR) > raw.rfind(HIDE_CURSOR)
    screen = Screen()
    screen.feed(raw)
    assert screen.cursor_visible
    assert_summary_after_last_panel(screen.lines(), interrupted=True)


@pytest.mark.slow  # a child process on a pty or a pipe
@pytest.mark.parametrize("face", ["asyncio", "trio"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_async_face_drains_on_signal(tmp_path: Path, face: str, signum: signal.Signals) -> None:
    args = child_args(
        "forever",
        tmp_path,
        "--face",
        face,
        "--backends",
        "tb",
        "--seconds",
        "20",
        "--plain-interval",
        "0.2",
    )
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=child_env(),
        )
        try:

            def progressed() -> bool:
                assert proc.poll() is None, err_path.read_text()
                return (
                    (tmp_path / "progress.txt").exists()
                    and len(logged_before_signal(tmp_path)) >= 40
                    and len(iterations_shown(out_path.read_text(encoding="utf-8"))) >= 2
                )

            wait_until(
                progressed, timeout=CHILD_TIMEOUT, interval=0.05, what="the child to progress"
            )
            proc.send_signal(signum)
            code = proc.wait(CHILD_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    stdout, stderr = out_path.read_text(encoding="utf-8"), err_path.read_text(encoding="utf-8")
    if signum == signal.SIGTERM:
        assert code == 143, stdout[-2000:] + stderr[-2000:]
        assert "Traceback" not in stderr, stderr
    else:  # KeyboardInterrupt out of asyncio.run / trio.run, then SIGINT's default
        assert code == -signal.SIGINT, stdout[-2000:] + stderr[-2000:]
        assert stderr.rstrip().endswith("KeyboardInterrupt")
    assert "child finished" not in stdout
    assert_nothing_lost(tmp_path)
    assert_summary_after_last_panel(stdout.splitlines(), interrupted=True)


@pytest.mark.slow  # a child process on a pty or a pipe
def test_exit_without_finish_writes_everything(tmp_path: Path) -> None:
    """The exit hook's final drain can still use asyncio's executor (aiofiles: JSONL)."""
    out, err, code = run_to_file(
        child_args("timed", tmp_path, "--seconds", "0.6", "--backends", "tb", "--no-finish"),
        tmp_path,
        child_env(),
    )
    assert code == 0, out + err
    assert err.splitlines() == [MARKER_ERR]  # no "records not written"
    logged = logged_before_signal(tmp_path)
    assert jsonl_iterations(tmp_path) == logged
    assert tensorboard_iterations(tmp_path) == logged
    lines = out.splitlines()
    assert f"child finished after {len(logged)} iterations" in lines
    assert_summary_after_last_panel(lines, interrupted=False)


class SlowBackend(MemoryBackend):
    async def write(self, records: Sequence[Record]) -> None:
        await ahold_still(0.02, "a backend whose writes take time")
        self.records.extend(records)


@pytest.mark.anyio
async def test_async_face_cancelled_from_outside_still_writes_everything() -> None:
    mem = SlowBackend()
    i = 0

    async def train() -> None:
        nonlocal i
        async with make_async_logger(mem) as log:
            while True:
                i += 1
                await log.log_step(i)
                if i % 50 == 0:
                    await ahold_still(0.005, "pace the loop until it is cancelled")

    # cancelled by another task once 100 steps are in, not after a time a loaded machine
    # may spend before the first
    async with anyio.create_task_group() as tg:
        tg.start_soon(train)
        await await_until(lambda: i > 100, what="100 steps logged")
        tg.cancel_scope.cancel()
    assert i > 100
    assert [r.iteration for r in mem.records] == list(range(1, i + 1))


@pytest.mark.anyio
async def test_async_face_sigterm_in_process_drains_raises_and_restores() -> None:
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    mem = SlowBackend()
    display = RecordingDisplay()
    reached_end = False
    with pytest.raises(SystemExit) as info:
        async with AsyncOffPolicyLogger(log_backend="none", backends=[mem], display=display) as log:
            # never send SIGTERM to the test process unless aoff handles it
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
            for i in range(1, 301):
                await log.log_step(i)
            signal.raise_signal(signal.SIGTERM)
            await ahold_still(5, "SIGTERM cancels the body here")
            reached_end = True
    assert not reached_end
    assert info.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert [r.iteration for r in mem.records] == list(range(1, 301))
    (_, final_state, summary) = display.closed[-1]
    assert summary and final_state.interrupted


@pytest.mark.anyio
async def test_async_face_leaves_a_sigterm_handler_alone() -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        handler = signal.getsignal(signal.SIGTERM)
        async with AsyncOffPolicyLogger(log_backend="none", display=RecordingDisplay()) as log:
            assert signal.getsignal(signal.SIGTERM) is handler
            await log.log_step(1)
        async with AsyncOffPolicyLogger(
            log_backend="none", display=RecordingDisplay(), handle_sigterm=False
        ):
            assert signal.getsignal(signal.SIGTERM) is handler
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def _state_of_height(i: int) -> State:
    s = State(config=RunConfig(algo_name="SAC", env_name="P", max_iterations=100_000))
    s.started, s.start_time, s.iteration, s.status = True, 0.0, i, "Training"
    # the panel grows and shrinks by 6 rows every frame, as when metrics come and go
    s.latest_metrics = {f"metric_{k}": 1.0 for k in range(1 + (i % 2) * 6)}
    return s


@pytest.mark.usefixtures("restore_streams")
def test_print_from_another_thread_while_frames_change_height() -> None:
    """Each printed line lands above the panel, intact, and one panel stays on screen."""
    console = captured_console()
    dash = Dashboard(console, live=True)
    dash.open(_state_of_height(0), 0.0)
    texts = [f"line-{n:04d}-" + "x" * 50 for n in range(40)]

    def training() -> None:
        for text in texts:
            print(text)

    thread = threading.Thread(target=training)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: many interleavings to try
    try:
        thread.start()
        i = 0
        while thread.is_alive() or i < 20:
            i += 1
            dash.update(_state_of_height(i), float(i))
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    dash.close(_state_of_height(i), float(i), summary=False)

    screen = Screen(height=ROWS)
    screen.feed(captured_text(console))
    lines = screen.lines()
    assert sum(PANEL_TITLE in line for line in lines) == 1
    top = next(n for n, line in enumerate(lines) if PANEL_TITLE in line)
    assert [line for line in lines if line.startswith("line-")] == texts
    assert lines[top - len(texts) : top] == texts


# -- 4. the throttle with the real Dashboard ----------------------------------------------
class CountingDashboard(Dashboard):
    """The real dashboard on a captured terminal console, counting what it is asked."""

    def __init__(self, console: Console) -> None:
        super().__init__(console, live=True)
        self.update_times: list[float] = []
        self.threads: set[int] = set()

    def open(self, state: RunView, now: float) -> None:
        self.threads.add(threading.get_ident())
        super().open(state, now)

    def update(self, state: RunView, now: float) -> None:
        self.threads.add(threading.get_ident())
        self.update_times.append(now)
        super().update(state, now)

    def close(self, state: RunView, now: float, *, summary: bool) -> None:
        self.threads.add(threading.get_ident())
        super().close(state, now, summary=summary)


def captured_console() -> Console:
    return Console(
        file=io.StringIO(),
        force_terminal=True,
        width=COLS,
        height=ROWS,
        color_system="truecolor",
    )


def captured_text(console: Console) -> str:
    """Everything written to a :func:`captured_console`."""
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


@pytest.mark.parametrize("refresh", [4, 10])
def test_real_dashboard_frames_never_exceed_refresh_per_second(refresh: int) -> None:
    clock = ManualClock()
    console = captured_console()
    dash = CountingDashboard(console)
    mem = MemoryBackend()
    log = make_logger(mem, display=dash, clock=clock, refresh_per_second=refresh)
    log.start()
    for i in range(10_000):  # 10,000 steps over 1 s of clock time
        log.log_step(i + 1, {"critic_loss": 0.5})
        clock.advance(1.0 / 10_000)
        if i % 250 == 0:
            log.flush()  # let the pump tick (and maybe render) mid-run
    report = log.finish()
    assert report.steps == 10_000 and len(mem.records) == 10_000

    times = dash.update_times
    assert 2 <= len(times) <= refresh + 2, times
    assert all(b - a >= 1.0 / refresh - 1e-9 for a, b in itertools.pairwise(times))
    raw = captured_text(console)
    panels = frames_drawn(raw)
    # every update drew one panel; open and stop may draw one more each
    assert len(times) <= panels <= len(times) + 2
    assert raw.rfind(SHOW_CURSOR) > raw.rfind(HIDE_CURSOR)
    # the iteration as drawn; no "/1500": max_iterations was not given (the seed's default)
    assert "iter 10000 " in strip_sgr(raw) and "/1500" not in strip_sgr(raw)


@pytest.mark.anyio
async def test_async_face_renders_off_the_event_loop() -> None:
    dash = CountingDashboard(captured_console())
    loop_thread = threading.get_ident()
    async with AsyncOffPolicyLogger(log_backend="none", display=dash, refresh_per_second=50) as log:
        for i in range(20):
            await log.log_step(i + 1, {"critic_loss": 0.5})
            await ahold_still(0.03, "a training step takes time")
        await await_until(lambda: dash.update_times, what="a frame drawn")
    assert dash.update_times, "no frame was drawn"
    assert dash.threads and loop_thread not in dash.threads
