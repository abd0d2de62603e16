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


@pytest.mark.parametrize("command", ["ls", "show", "compare"])
def test_a_closed_pipe_ends_the_command_quietly(runs: Path, command: str) -> None:
    args = {
        "ls": ["ls", str(runs)],
        "show": ["show", str(runs / "walk-seed1")],
        "compare": ["compare", str(runs), "--metric", "tag/with/a/long/name/3"],
    }[command]
    read, write = os.pipe()
    os.close(read)  # `aoff ... | true`, once true has exited
    try:
        got = subprocess.run(
            [sys.executable, "-m", "aoff", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            timeout=60,
        )
    finally:
        os.close(write)
    assert (got.returncode, got.stderr) == (0, "")


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
