"""The real TensorBoard server, for tests that read runs back the way users see them.

One place starts ``python -m tensorboard.main`` on 127.0.0.1 (a free port, loopback
only, no proxy), polls its HTTP API until the test's condition holds, and stops it;
``test_tensorboard``, ``test_resume`` and ``test_remote`` read their runs through it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from aoff.testing import wait_until

T = TypeVar("T")

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A running server: :meth:`get` its JSON API, :meth:`until` a condition holds."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path: str, body: object = None) -> Any:
        """GET (or POST ``body`` as JSON) ``path``, e.g. ``/data/plugin/scalars/tags``."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "X-XSRF-Protected": "1"}
        req = urllib.request.Request(self.base + path, data=data, headers=headers)
        with _opener.open(req, timeout=5) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def scalars(self, run: str, tag: str) -> list[list[float]]:
        """The scalars API's ``[wall_time, step, value]`` points of ``tag`` in ``run``."""
        query = urllib.parse.urlencode({"run": run, "tag": tag})
        points = self.get(f"/data/plugin/scalars/scalars?{query}")
        return points if isinstance(points, list) else []

    def until(self, probe: Callable[[], T | None], what: str, timeout: float = 90) -> T:
        """Poll ``probe`` (an ``OSError`` counts as not yet) until it returns something
        other than None; fail with the server's stderr if it exits, or after ``timeout``."""

        def served() -> tuple[T] | None:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                pytest.fail(f"tensorboard exited with {self.proc.returncode}: {err[-2000:]}")
            try:
                got = probe()
            except OSError:
                return None
            return None if got is None else (got,)  # a tuple: a falsy result is one too

        got = wait_until(served, timeout=timeout, interval=0.3, what=f"tensorboard to serve {what}")
        assert got is not None  # wait_until returns a true value only
        return got[0]


@contextmanager
def tensorboard_server(logdir: Path, *flags: str) -> Iterator[Server]:
    """``tensorboard --logdir LOGDIR`` on a free loopback port, reloading every second,
    with its default loader unless ``flags`` say otherwise (``--load_fast=false``)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--reload_interval", "1", *flags]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        yield Server(proc, port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()
