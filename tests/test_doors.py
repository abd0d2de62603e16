"""Every door shows the run: the live panel opens with the first call, without ``start()``.

Each test runs ``tests/door_child.py`` (one door: the sync face, ``aoff.sb3``,
``aoff.tensorboard.SummaryWriter``, ``aoff.rsl_rl.LogWriter``, a remote producer's run)
in a child process on a real pseudo-terminal, or with stdout piped to a file, and reads
what a user sees.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .test_terminal import (
    PANEL_TITLE,
    PtyRun,
    Screen,
    child_env,
    frames_drawn,
    pty_run,
    run_to_file,
    strip_sgr,
)

__all__ = ["pty_run"]  # the fixture, used by name

CHILD = str(Path(__file__).with_name("door_child.py"))

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty"),
    pytest.mark.slow,  # a child process on a pty or a pipe
]


def total_seconds(text: str) -> int:
    """The summary's ``Total time: Ns`` (the run lasts about a second)."""
    m = re.search(r"Total time: (\d+)s", text)
    assert m is not None, text[-2000:]
    return int(m.group(1))


@pytest.mark.parametrize("door", ["sync", "sb3", "writer", "rsl_rl", "remote"])
def test_the_panel_opens_with_the_first_call_on_a_pty(
    tmp_path: Path, pty_run: Callable[..., PtyRun], door: str
) -> None:
    run = pty_run([CHILD, door, str(tmp_path)])
    assert run.wait() == 0, run.text()[-3000:]
    raw = run.text()
    plain = strip_sgr(raw)
    assert PANEL_TITLE in plain and frames_drawn(raw) >= 2, plain[-3000:]
    screen = Screen()
    screen.feed(raw)
    assert screen.cursor_visible and not screen.unknown, screen.unknown
    lines = screen.lines()
    # the panel was redrawn in place, the summary printed under it
    assert sum(PANEL_TITLE in line for line in lines) == 1, "\n".join(lines)
    text = "\n".join(lines)
    if door in ("writer", "rsl_rl"):  # writers print nothing at close: the last frame stays
        summary = ""
        timer = re.search(r"⏱ (\d+)s", text)
        assert timer is not None and int(timer.group(1)) >= 1, text
    else:
        summary = text[text.index("Training Summary") :]
        # the clock ran from the first call (the run lasts 1.2 s), not from finish()
        assert total_seconds(summary) >= 1, summary
    # nothing that no call logged, nor a default no one gave (num_envs: the original
    # logger's 4096 is kept as the face's attribute, never shown)
    assert "Sync Collect" not in text and "Weight Sync" not in text
    assert "Envs" not in text and "4,096" not in text, text
    assert "Learner" not in text and "Wait " not in text and "Terminated Rate" not in text
    if door == "sb3":
        # SB3's keys drawn as written: its reward, its train/* losses, its timesteps as
        # env steps
        assert "train/actor_loss" in text and "12.50" in text, text
        assert re.search(r"Mean \(last 50\)\s+-?\d", text), text
        assert "Ep Len 200.0" in text
        steps = re.search(r"Total env steps: ([\d,]+)", summary)
        assert steps is not None and int(steps.group(1).replace(",", "")) >= 100, summary
        assert "Buffer" not in text and "Collector" not in text
    elif door == "remote":  # the producer's collector and steps: counted for the run
        assert "Producers" in text and "Initializing" not in text.split(PANEL_TITLE)[-1]
        assert "Total env steps:" in summary
    else:  # no log_collector came: no "Total env steps: 0"
        assert "Total env steps" not in summary and "Collector" not in text


def test_piped_output_gets_plain_lines(tmp_path: Path) -> None:
    # the sync face's door (the README's wandb.log switch); once a run has started, what
    # a pipe gets is the display's, the same for every door (SB3's import of torch would
    # add ~5-15 s here for no other path)
    out, err, code = run_to_file([CHILD, "sync", str(tmp_path)], tmp_path, child_env())
    assert code == 0, out + err
    assert "\x1b" not in out
    progress = [line for line in out.splitlines() if line.startswith("iter ")]
    # the first when the run opened (then one every 5 s; the summary at the end)
    assert progress and "reward" in progress[0], out
    assert out.index(progress[0]) < out.index("Training Summary")
    assert total_seconds(out) >= 1, out
