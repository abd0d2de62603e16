"""Signals that arrive while ``finish()`` drains a big backlog: nothing is cut short.

A child process logs 100,000 steps, calls ``finish()`` and prints FINISHING once it waits
for the drain; the test signals the child's whole process group (as a terminal's Ctrl+C
or a supervisor does) while the drain runs, then reads TensorBoard and JSONL back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from aoff.testing import wait_until

from .conftest import hold_still, sigint_as_in_a_shell
from .signal_child import HELD_AFTER

CHILD = Path(__file__).with_name("signal_child.py")
N = 30_000


def run_and_signal(
    tmp_path: Path,
    mode: str,
    signals: list[signal.Signals],
    gap: float = 0.05,
    face: str = "sync",
    *,
    after_notice: bool = False,
    hold: str = "until-signal",
) -> tuple[int, str, str]:
    """Signal the child's process group once it says FINISHING. ``after_notice``: send
    each later signal only once the child has answered the first (its "still writing"
    line): two signals that reach a process before it runs any Python code are merged
    into one by the kernel and CPython alike, which a loaded 2-core machine can do to
    signals sent 0.3 s apart. ``hold``: the child's drain waits until
    the first signal (``until-signal``) or for good (``forever``), so that the signals
    come while it is under way, as on a loaded machine a few seconds' drain need not be
    (see ``signal_child.py``)."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(tmp_path), mode, str(N), face, hold],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # the agent shares stdout: its notices come first
        seen.append(line)
        if "FINISHING" in line:  # another thread's output may share the line
            break
    else:
        pytest.fail(f"the child ended before finish(): {seen}")
    assert proc.stderr is not None
    err_lines: list[str] = []
    reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr or ()), daemon=True)
    reader.start()
    for i, sig in enumerate(signals):
        if i:
            if after_notice:
                wait_until(
                    lambda: any("still writing" in ln for ln in list(err_lines)),
                    timeout=60,
                    what="the child's 'still writing' notice",
                )
            # apart by ``gap``, as a person's two presses: not while the child still
            # writes its notice (a Ctrl+C then is ignored, by design)
            hold_still(gap, "two presses apart by gap, as a person's")
        os.killpg(proc.pid, sig)
    out = proc.stdout.read()
    proc.wait(timeout=240)
    reader.join(10)
    return proc.returncode, "".join(seen) + out, "".join(err_lines)


def check_everything_on_disk(run: Path) -> None:
    with open(run / "metrics.jsonl", encoding="utf-8") as f:
        assert sum(1 for _ in f) == N
    acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
    acc.Reload()
    steps = [e.step for e in acc.Scalars("train/x")]
    assert len(steps) == N and steps[-1] == N


# Each case drains 30,000 steps, held until the first signal (``hold``), so every signal
# comes mid-drain on any machine; each signal runs once and the two pump modes share the
# cases between them: both modes see Ctrl+C, each sees SIGTERM once.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "signals", "code"),
    [
        ("process", [signal.SIGINT], (-signal.SIGINT, 130)),
        ("thread", [signal.SIGINT], (-signal.SIGINT, 130)),
        ("process", [signal.SIGTERM], (143,)),
        ("thread", [signal.SIGTERM, signal.SIGTERM], (143,)),
    ],
    ids=["sigint-process", "sigint-thread", "sigterm-process", "two-sigterms-thread"],
)
def test_a_signal_during_finish_does_not_cut_the_drain_short(
    tmp_path: Path, mode: str, signals: list[signal.Signals], code: tuple[int, ...]
) -> None:
    rc, out, err = run_and_signal(tmp_path, mode, signals)
    assert rc in code, (rc, out, err)
    assert "still writing the rest of the run" in err
    check_everything_on_disk(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["process", "thread"])
def test_a_second_ctrl_c_stops_at_once_and_says_exactly_what_was_not_written(
    tmp_path: Path, mode: str
) -> None:
    """The drain is held for good after the first ``HELD_AFTER`` steps were written
    (``signal_child.py``): only the second Ctrl+C ends the run, and what the line says is
    missing is what the file lacks."""
    rc, out, err = run_and_signal(
        tmp_path, mode, [signal.SIGINT, signal.SIGINT], gap=0.3, after_notice=True, hold="forever"
    )
    assert rc in (-signal.SIGINT, 130), (rc, out, err)
    line = next((ln for ln in err.splitlines() if "steps not written" in ln), None)
    assert line is not None, (out, err)
    missing = dict(
        (part.split(" to ")[1].strip("'"), int(part.split(" to ")[0].replace(",", "")))
        for part in line.split("steps not written: ", 1)[1].split(", ")
    )
    with open(tmp_path / "metrics.jsonl", encoding="utf-8") as f:
        rows = sum(1 for ln in f if ln.endswith("\n"))
    assert rows == HELD_AFTER
    assert missing["jsonl"] == N - rows


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "signals"),
    [("process", [signal.SIGTERM]), ("thread", [signal.SIGTERM, signal.SIGTERM])],
    ids=["sigterm-process", "two-sigterms-thread"],
)
def test_sigterm_while_the_async_face_drains_loses_nothing(
    tmp_path: Path, mode: str, signals: list[signal.Signals]
) -> None:
    # thread mode: the pump is a task on the caller's own loop, whose drain a hold would
    # stop with the loop (the signals are then sent after a real drain of 30,000 steps)
    hold = "until-signal" if mode == "process" else ""
    rc, out, err = run_and_signal(tmp_path, mode, signals, face="async", hold=hold)
    assert rc == 143, (rc, out, err)
    check_everything_on_disk(tmp_path)


_ROUND_CHILD = """
import signal, sys
import anyio
from aoff import AsyncOffPolicyLogger
from aoff.testing._faults import signal_while_draining

async def main(run, mode, progress):
    async with AsyncOffPolicyLogger(
        log_dir=run, backends=("jsonl",), pump=mode, log_backend="none"
    ) as log:
        signal_while_draining(log, signal.SIGINT, drain=3)
        i = 0
        while True:
            i += 1
            await log.log_step(i, {"x": float(i)})
            progress.write(f"{i}\\n")  # logged
            progress.flush()
            await anyio.sleep(0.002)

signal.signal(signal.SIGINT, signal.default_int_handler)  # as in an interactive shell
with open(sys.argv[4], "w") as progress:
    anyio.run(main, sys.argv[1], sys.argv[2], progress, backend=sys.argv[3])
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("mode", ["process", "thread"])
def test_ctrl_c_inside_a_round_of_the_async_face_loses_nothing(
    tmp_path: Path, mode: str, backend: str
) -> None:
    """Ctrl+C lands just after the shipper's (process mode) or the pump's (thread mode)
    round took events out of the buffer, in aoff's task on the caller's event loop. Trio
    raises ``KeyboardInterrupt`` wherever the loop's thread is unless the code is
    protected: it must come out of the caller's ``async with`` body, never out of aoff's
    task (that lost the events the round held, and the drain with them)."""
    run, progress = tmp_path / "run", tmp_path / "progress.txt"
    got = subprocess.run(
        [sys.executable, "-c", _ROUND_CHILD, str(run), mode, backend, str(progress)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert got.returncode != 0 and got.stderr.rstrip().endswith("KeyboardInterrupt"), got.stderr
    logged = [int(x) for x in progress.read_text().split()]
    assert len(logged) >= 3 and logged == list(range(1, len(logged) + 1)), logged
    written = [json.loads(line)["step"] for line in (run / "metrics.jsonl").open()]
    # the interrupted step may or may not have been logged: it is written if it was
    assert written[: len(logged)] == logged and len(written) <= len(logged) + 1, got.stderr
    assert "_buffer" not in got.stderr and "drain" not in got.stderr, got.stderr


def test_a_child_sent_ctrl_c_gets_sigint_back_though_the_runner_ignores_it() -> None:
    """The tests that send Ctrl+C to a child (``python -m aoff ...``, a pexpect'd viewer)
    start it with :func:`sigint_as_in_a_shell`, so they pass when the runner ignores SIGINT
    (``nohup``, a backgrounded job); without it, the child inherits the ignore."""
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as under `(trap '' INT; pytest)`
    try:
        inherited, reset = (
            subprocess.run(
                [sys.executable, "-c", probe],
                capture_output=True,
                text=True,
                timeout=60,
                preexec_fn=fn,
            ).stdout.strip()
            for fn in (None, sigint_as_in_a_shell)
        )
    finally:
        signal.signal(signal.SIGINT, before)
    assert (inherited, reset) == ("False", "True")
