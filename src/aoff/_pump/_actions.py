"""What an alert triggers outside the run: a webhook's POST and a command, on one thread.

Why a thread of their own: a webhook server that does not answer, or a command that
hangs, must never hold the pump (nor, through it, the training loop's buffer). Alerts
are queued (a bounded deque: a flood of them keeps the newest); the thread posts each
with a timeout and a few retries and runs the command with the alert as JSON on stdin.
A failure is counted and said once (a line through ``say``), never raised.

A server that is down fails fast: once an alert's every try failed, the next alerts get
one try each (no pauses) until one goes through, and no retry pauses once the run's end
waits (:meth:`Actions.close`). So a dead server's alerts are counted as failed within
moments, not left "still waiting" through the end's whole bounded wait.

A webhook's URL is the credential of Slack-style hooks, so every line shows it with its
path, query and user part cut (:func:`redact`). A command runs in a session of its own:
past its timeout, or when the run's end stops waiting for it, its whole process group is
killed, so no child of it outlives the run. Each alert not delivered (its webhook or
command failed, it was still queued when :meth:`Actions.close` stopped waiting, or a
flood pushed it out of the queue) is counted in :attr:`Actions.undelivered`.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence

from .._core._rules import Alert

__all__ = ["Actions", "redact"]

#: seconds a webhook's POST may take (connect and answer) before it counts as failed
WEBHOOK_TIMEOUT = 5.0
#: tries per alert, and the pause before the second (doubled for each later one)
WEBHOOK_TRIES = 3
RETRY_PAUSE = 0.5
#: seconds a command may run before it is killed
COMMAND_TIMEOUT = 30.0
#: alerts waiting at most (rules fire once per tag, so this is rarely reached)
MAX_WAITING = 256


def redact(url: str) -> str:
    """``url`` as it may be printed: scheme and host kept, the rest (a hook's secret
    path, a token in its query, a user and password) replaced by ``…``."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    hidden = parts.path not in ("", "/") or parts.query or parts.fragment or parts.username
    return f"{parts.scheme}://{host}/…" if hidden else f"{parts.scheme}://{host}/"


class Actions:
    """Posts each alert to ``webhook`` and runs ``command`` with it, on the
    "aoff-alerts" daemon thread. :meth:`close` waits for what is queued, at most
    ``timeout`` seconds, then leaves the thread behind."""

    def __init__(
        self,
        webhook: str | None,
        command: Sequence[str] | None,
        say: Callable[[str], None],
    ) -> None:
        self.webhook = webhook
        self.command = tuple(command) if command else None
        self._say = say
        self._queue: collections.deque[Alert] = collections.deque(maxlen=MAX_WAITING)
        self._cond = threading.Condition()
        self._busy = False
        self._closed = False
        self.failures = 0
        self.sent = 0
        #: alerts whose actions did not all complete: failed, pushed out, or left queued
        self.undelivered = 0
        #: how many were not delivered, by why (the end-of-run line and the report)
        self.why: dict[str, int] = {}
        self._first_failure = ""
        self._said = False
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        #: the last alert's every try failed: the next get one try (see the module's doc)
        self._down = False

    def submit(self, alert: Alert) -> None:
        """Queue ``alert`` (the pump's loop; never waits)."""
        with self._cond:
            if self._closed:
                self._lost("came after the run's end", 1)
                return
            if len(self._queue) == self._queue.maxlen:
                self._lost(f"pushed out of the queue of {MAX_WAITING}", 1)
            self._queue.append(alert)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="aoff-alerts", daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self, timeout: float = 5.0) -> None:
        """No more alerts: wait up to ``timeout`` for those queued, then count those left
        as not delivered and kill a command still running (its process group)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._closed = True
            self._cond.notify()
            while (self._queue or self._busy) and self._thread is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            left_over = len(self._queue) + self._busy
            self._queue.clear()
            self._busy = False  # counted here: the thread's own end does not count it again
            if left_over:
                self._lost(f"still waiting when finish() stopped after {timeout:g}s", left_over)
            proc = self._proc
        if proc is not None:
            _kill_group(proc)

    def _lost(self, why: str, n: int) -> None:
        self.undelivered += n
        self.why[why] = self.why.get(why, 0) + n

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    self._cond.notify_all()
                    return
                alert = self._queue.popleft()
                self._busy = True
            ok = False
            try:
                body = json.dumps(alert.as_dict()).encode()
                ok = not self.webhook or self._post(body)
                ok = (not self.command or self._run_command(body)) and ok
            finally:
                with self._cond:
                    if self._busy and not ok:  # not already counted by close()
                        self._lost(f"failed (the first: {self._first_failure})", 1)
                    self._busy = False
                    self._cond.notify_all()

    def _failed(self, what: str) -> bool:
        self.failures += 1
        self._first_failure = self._first_failure or what
        if not self._said:  # said once: a dead server would otherwise say it per alert
            self._said = True
            self._say(f"aoff: an alert's {what}; later failures are only counted")
        return False

    def _post(self, body: bytes) -> bool:
        # imported here, on this thread, at the first alert: http.client, ssl and email
        # are ~25 ms of every agent's start, and most runs never post
        import urllib.request

        assert self.webhook is not None
        pause = RETRY_PAUSE
        error = ""
        tries = 1 if self._down else WEBHOOK_TRIES
        attempt = 0
        for attempt in range(tries):
            if attempt:
                if self._closed:  # the run's end is waiting: no pause, no more tries
                    break
                time.sleep(pause)
                pause *= 2
            req = urllib.request.Request(
                self.webhook,
                data=body,
                headers={"Content-Type": "application/json", "User-Agent": "aoff"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(req, timeout=WEBHOOK_TIMEOUT) as resp:
                    resp.read()
            except Exception as exc:  # refused, timed out, an HTTP error status
                error = f"{type(exc).__name__}: {exc}".replace(self.webhook, redact(self.webhook))
                continue
            self.sent += 1
            self._down = False
            return True
        self._down = True
        where = redact(self.webhook)
        times = "once" if attempt == 0 else f"{attempt + 1} times"
        return self._failed(f"webhook POST to {where} failed {times} ({error})")

    def _run_command(self, body: bytes) -> bool:
        assert self.command is not None
        name = self.command[0]
        try:
            proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its children too are killed with its group
            )
        except OSError as exc:
            return self._failed(f"command {name!r} failed ({type(exc).__name__}: {exc})")
        with self._cond:
            self._proc = proc
        try:
            try:
                proc.communicate(body, timeout=COMMAND_TIMEOUT)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                return self._failed(f"command {name!r} ran past {COMMAND_TIMEOUT:g}s; killed")
        finally:
            with self._cond:
                self._proc = None
        if proc.returncode != 0:
            return self._failed(f"command {name!r} exited with {proc.returncode}")
        return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill ``proc``'s process group (its own session) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
