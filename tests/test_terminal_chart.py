"""The live panel in a real pseudo-terminal at 80x24 and 120x40: whole frames, steady
columns, and the reward chart.

A :class:`Dashboard` draws 60 frames on a pty of each size (in this process, so every
frame is drawn: a child's frame rate depends on the machine's load), from states whose
loss cycles through printed widths (``1.500``, ``0.2500``, ``12.000``, ``9.00e-05`` ...).
Each frame Rich writes starts at the panel's top-left corner; every one captured must be
the whole panel (each line exactly as wide as the terminal, top to bottom border), and
the places where the columns start must not move from one frame to the next.
(``tests/test_terminal.py`` runs whole training children on a pty.)
"""

from __future__ import annotations

import os
import re
import select
import struct
import sys
import threading

import pytest
from rich.cells import cell_len
from rich.console import Console

from aoff._core._records import RunConfig
from aoff._core._state import State
from aoff._display._dashboard import Dashboard

if sys.platform != "win32":
    import fcntl
    import pty
    import termios

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def _frames(raw: str) -> list[list[str]]:
    """Each complete panel drawn: its lines, control codes removed."""
    text = _CONTROL.sub("", raw)
    frames = []
    for chunk in text.split("╭")[1:]:
        lines = ("╭" + chunk).split("\n")
        end = next((i for i, ln in enumerate(lines) if ln.startswith("╰")), None)
        if end is not None:
            frames.append(lines[: end + 1])
    return frames


def _column_starts(frame: list[str]) -> tuple[int, ...]:
    """Where each section title starts: the columns' positions."""
    out: list[int] = []
    for line in frame:
        for title in ("Losses & Metrics", "Rewards", "Learner", "Collector", "System"):
            if title in line:
                out.append(cell_len(line[: line.index(title)]))
    return tuple(out)


def _state(i: int) -> State:
    """The state after ``i`` steps: numbers whose printed widths go up and down."""
    s = State(config=RunConfig(algo_name="SAC", env_name="Pendulum-v1", max_iterations=2000))
    s.started = s.training_started = True
    s.start_time = 1000.0
    s.iteration = s.steps_logged = i
    s.total_steps = i * 4096
    loss = (1.5, 0.25, 0.0012, 12.0, 0.00009)[i % 5]  # 1.500 0.2500 0.0012 12.000 9.00e-05
    s.latest_metrics = {"critic_loss": loss, "actor_loss": -2.5 - i % 3, "alpha": 0.125}
    s.reward_history.extend(-100.0 + k * 0.5 for k in range(max(0, i - 200), i))
    s.loss_name = "actor_loss"  # as the fold keeps it: one point per step
    s.loss_history.extend(-2.5 - k % 3 for k in range(max(1, i - 199), i + 1))
    s.collector_timing = {"env_step_ms": 5.0 + i % 7, "replay_ms": 0.4}
    s.train_time, s.throughput_known, s.throughput_steps = 0.004, True, 4096
    return s


def _drain(fd: int, out: bytearray, stop: threading.Event) -> None:
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                return


@pytest.mark.parametrize(("cols", "rows"), [(80, 24), (120, 40)])
def test_frames_are_whole_and_columns_stay_put(cols: int, rows: int) -> None:
    """60 frames drawn by a :class:`Dashboard` on a real pty of that size."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    data = bytearray()
    stop = threading.Event()
    reader = threading.Thread(target=_drain, args=(master, data, stop), daemon=True)
    reader.start()
    with open(slave, "w", encoding="utf-8", closefd=True) as tty:
        console = Console(file=tty, width=cols, height=rows, color_system="truecolor")
        assert console.is_terminal
        dash = Dashboard(console)
        dash.open(_state(1), 1000.0)
        for i in range(1, 61):
            dash.update(_state(i), 1000.0 + i)
        dash.close(_state(60), 1100.0, summary=False)
        tty.flush()
    # the slave is closed: the reader gets EIO once it has read everything, and ends
    reader.join(60)
    stop.set()
    assert not reader.is_alive(), "the pty's output was not read to its end"
    os.close(master)
    frames = _frames(data.decode("utf-8", errors="replace"))
    assert len(frames) >= 50, len(frames)
    for frame in frames:
        assert len(frame) <= rows
        assert all(cell_len(line) == cols for line in frame), [cell_len(x) for x in frame]
        assert frame[-1].startswith("╰") and frame[-1].endswith("╯")
        assert sum("Losses & Metrics" in line for line in frame) == 1
    # once each width has been seen (a cycle of 5 frames), the columns never move again
    starts = {_column_starts(f) for f in frames[10:]}
    assert len(starts) == 1, starts
    last = "\n".join(frames[-1])
    if cols >= 120:  # block charts of the reward and of the first loss
        assert "Reward (mean)" in last and "Actor Loss  -4.5 .. -2.5" in last, last
        # one x axis: both charts count steps
        assert "(last 60 steps)" in last and "(last 59 steps)" not in last, last
        assert last.count("steps)") == 2, last
    else:
        assert "Reward trend" in last
