"""The live panel fits the terminal: on a real pty of 80x24, 80x30 and 120x40, every
frame the dashboard draws keeps its bottom border, with the alert banner above it and
the logger's cost line under it counted in its height (Rich's ``Live`` replaces the
lines past the screen's bottom with ``...``). Frames are read from the pty's bytes:
Rich's ``Live`` starts each redraw by moving the cursor up over the last frame."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from aoff.testing import wait_until

from .test_terminal import child_env

HERE = Path(__file__).resolve().parent
CHILD = str(HERE / "fit_child.py")
TITLE = "Off-Policy Training"
SIZES = [(24, 80), (30, 80), (40, 120)]
_SGR = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]")
#: the alert banner's first line: where a frame with a banner starts
_BANNER = re.compile(r"^ \d+ alerts? ")
#: the footer: the logger's cost, one line under the panel
_FOOTER = re.compile(r"^ (logging cost|agent lag)")
#: what ``Live`` writes before a redraw: back to the top of the last frame, erasing it
_REDRAW = re.compile(r"\r?\x1b\[2K(?:\x1b\[1A\x1b\[2K)*")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def _frames(raw: str) -> list[list[str]]:
    """Each live frame's lines, as the terminal shows them (colours dropped)."""
    chunks = _REDRAW.split(_SGR.sub("", raw.replace("\r\n", "\n")))
    return [c.split("\n") for c in chunks if TITLE in c]


def _assert_fits(raw: str, rows: int, *, footer: bool, banner: bool) -> None:
    frames = _frames(raw)
    assert frames, raw[-2000:]
    for lines in frames:
        top = next(i for i, ln in enumerate(lines) if TITLE in ln)
        start = next((i for i in range(top) if _BANNER.match(lines[i])), top)
        bottom = next((i for i in range(top, len(lines)) if lines[i].startswith("╰")), None)
        assert bottom is not None, "\n".join(lines)  # the bottom border, not "..."
        end = bottom + 1
        if end < len(lines) and _FOOTER.match(lines[end]):
            end += 1
        assert end - start <= rows, "\n".join(lines)
        assert not any(ln.strip() == "..." for ln in lines[start:end]), "\n".join(lines)
    text = "\n".join("\n".join(f) for f in frames)
    if footer:  # the frames this is about were drawn: the cost line under the panel
        assert "agent lag" in text or "logging cost" in text, text[-3000:]
    if banner:
        assert "alert" in text and "stat_0 is nan" in text, text[-3000:]


def _run_on_pty(args: list[str], rows: int, cols: int, timeout: float = 120) -> str:
    child = pexpect.spawn(
        sys.executable, args, env=child_env(), dimensions=(rows, cols), timeout=timeout
    )
    raw = child.read().decode("utf-8", errors="replace")
    child.close()
    assert child.exitstatus == 0, raw[-3000:]
    return raw


@pytest.mark.parametrize(("rows", "cols"), SIZES)
def test_the_panel_with_its_banner_and_footer_fits(tmp_path: Path, rows: int, cols: int) -> None:
    raw = _run_on_pty([CHILD, "logger", str(tmp_path), "30", "200"], rows, cols)
    _assert_fits(raw, rows, footer=True, banner=True)


def test_long_tag_names_are_cut_with_an_ellipsis_never_wrapped_at_80x24(tmp_path: Path) -> None:
    """Each frame on a real 80x24 pty shows each long name on one row: whole, or cut
    with "…" (before, the wide layout wrapped "Critic/Q Value Loss Of / The First
    Network" over two rows)."""
    raw = _run_on_pty([CHILD, "names", str(tmp_path)], 24, 80)
    _assert_fits(raw, 24, footer=False, banner=False)
    frames = [f for f in _frames(raw) if any("Critic/Q" in ln for ln in f)]
    assert frames, raw[-2000:]
    for lines in frames:
        for start, tail in (("Critic/Q", "First Network"), ("Actor/Entropy", "Alpha")):
            [row] = [ln for ln in lines if start in ln]
            assert tail in row or "…" in row, "\n".join(lines)
            assert all(start in ln for ln in lines if tail in ln), "\n".join(lines)


@pytest.mark.slow  # torch and SB3 imported, a real PPO run: ~10 s quiet
def test_an_sb3_runs_panel_fits_at_80x24(tmp_path: Path) -> None:
    pytest.importorskip("stable_baselines3")
    raw = _run_on_pty([CHILD, "sb3", str(tmp_path)], 24, 80)
    _assert_fits(raw, 24, footer=True, banner=False)


def test_aoff_attachs_panel_fits_at_80x24(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with open(tmp_path / "run.out", "wb") as out:
        trainer = subprocess.Popen(
            [sys.executable, CHILD, "logger", str(run), "60", "1000000"],  # until "stop"
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=child_env(),
        )
    try:
        wait_until(lambda: (run / "aoff.sock").exists(), what="the run's socket")
        viewer = pexpect.spawn(
            sys.executable,
            ["-m", "aoff", "attach", str(run)],
            env=child_env(),
            dimensions=(24, 80),
            timeout=60,
        )
        got = b""
        try:
            viewer.expect("agent lag|logging cost")  # the footer is drawn
            viewer.expect(TITLE)  # and at least one more frame after it
            got = viewer.before + viewer.after
        finally:
            (run / "stop").touch()
            rest = viewer.read()
            viewer.close()
        raw = (got + rest).decode("utf-8", errors="replace")
    finally:
        trainer.wait(timeout=60)
    _assert_fits(raw, 24, footer=True, banner=True)


@pytest.mark.slow  # the demo's cost line comes after 5 s of its run
def test_the_demos_panel_fits_at_80x24(tmp_path: Path) -> None:
    args = ["-m", "aoff", "demo", "--iterations", "120", "--iter-ms", "75"]  # 9 s
    raw = _run_on_pty([*args, "--logdir", str(tmp_path)], 24, 80)
    _assert_fits(raw, 24, footer=True, banner=False)
    assert os.listdir(tmp_path)
