"""``aoff ls/show/compare/attach`` into a pipe whose reader has gone (``| head -1``,
``| true``) stop at once, with status 0 and nothing on stderr (no traceback), so
``set -o pipefail`` scripts go on. The pipes here are real ones (``os.pipe``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_attach import children, start_child  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aoff.tensorboard import SummaryWriter

    root = tmp_path_factory.mktemp("pipes")
    for seed in (1, 2):
        with SummaryWriter(str(root / f"walk-seed{seed}")) as w:
            for step in range(300):  # enough rows that one write cannot hide the close
                w.add_scalar(f"tag/with/a/long/name/{step % 40}", step * seed, step)
    return root


#: every command that prints, its output into a closed pipe (``demo`` and ``attach``: below)
COMMANDS = {
    "ls": ["ls", "{runs}"],
    "ls --json": ["ls", "{runs}", "--json"],
    "show": ["show", "{runs}/walk-seed1"],
    "show --json": ["show", "{runs}/walk-seed1", "--json"],
    "compare": ["compare", "{runs}", "--metric", "tag/with/a/long/name/3"],
    "compare --json": ["compare", "{runs}", "--metric", "tag/with/a/long/name/3", "--json"],
    "export -o -": ["export", "{runs}/walk-seed1", "-o", "-", "--format", "csv"],
    "export -o /dev/stdout": [
        "export",
        "{runs}/walk-seed1",
        "-o",
        "/dev/stdout",
        "--format",
        "csv",
    ],
    "--help": ["compare", "--help"],
    "--version": ["--version"],
}


def _into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)  # `aoff ... | true`, once true has exited
    try:
        return subprocess.run(
            [sys.executable, "-m", "aoff", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            timeout=60,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_closed_pipe_ends_the_command_quietly(runs: Path, command: str) -> None:
    got = _into_closed_pipe([a.format(runs=runs) for a in COMMANDS[command]])
    said = got.stderr.splitlines()
    if command.startswith("export"):  # its one line of what it did, on stderr as ever
        assert said == [] or said[0].startswith("aoff export: "), said
        assert not any("cannot write" in line for line in said), said
        said = []
    assert (got.returncode, said) == (0, [])


def test_compare_follow_leaves_when_its_reader_does(runs: Path) -> None:
    """``aoff compare --follow | head``: the runs are idle (nothing to redraw), yet once
    the reader has closed its end the command ends, 0, without waiting for a change."""
    read, write = os.pipe()
    args = ["compare", str(runs), "--metric", "tag/with/a/long/name/3", "--follow"]
    follower = subprocess.Popen(
        [sys.executable, "-m", "aoff", *args, "--interval", "600"],
        stdout=write,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=ENV,
    )
    os.close(write)
    try:
        assert os.read(read, 1)  # it drew the comparison once
        os.close(read)
        rc = follower.wait(timeout=30)  # the next look is 600 s away
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.stderr is not None
    assert (rc, follower.stderr.read()) == (0, b"")


def test_attach_leaves_when_its_reader_does(
    tmp_path: Path,
    children: list[subprocess.Popen[bytes]],  # noqa: F811
) -> None:
    """A run that goes on; ``aoff attach RUN | head -c 1``: once the reader has closed
    its end, attach notices within a frame or two (it once waited for its next plain
    line, ~5 s) and ends with 0."""
    run = tmp_path / "live"
    children.append(start_child(run))
    read, write = os.pipe()
    viewer = subprocess.Popen(
        [sys.executable, "-m", "aoff", "attach", str(run)],
        stdout=write,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=ENV,
    )
    os.close(write)
    try:
        assert os.read(read, 1)  # it is attached and drawing
        os.close(read)
        closed = time.monotonic()
        rc = viewer.wait(timeout=30)
        took = time.monotonic() - closed
    finally:
        if viewer.poll() is None:
            viewer.kill()
            viewer.wait()
    assert viewer.stderr is not None
    assert (rc, viewer.stderr.read()) == (0, b"")
    assert took < 3.0, took  # a plain line comes every 5 s: it used to wait for one


@pytest.mark.parametrize("face", ["sync", "async"])
def test_the_demo_ends_when_its_reader_has_gone(tmp_path: Path, face: str) -> None:
    """``aoff demo | true``: the demo stops at its next pause (it used to simulate all
    300 iterations), finishes its run and exits 0, with nothing on stderr (its dashboard
    is switched off without waiting for a terminal that would never take output)."""
    args = ["demo", "--iterations", "300", "--logdir", str(tmp_path), "--name", "d"]
    got = _into_closed_pipe([*args, "--async"] if face == "async" else args)
    assert (got.returncode, got.stderr) == (0, "")  # quietly: no "did not take output"
    from aoff import read_scalars

    assert list((tmp_path / "d").glob("events.out.tfevents.*"))  # its run, finished
    points = read_scalars(str(tmp_path / "d"), tags=["axis/iteration"])
    assert points.empty or points["value"].max() < 300  # ended at once, in its warm-up
