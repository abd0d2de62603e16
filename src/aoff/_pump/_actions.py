"""What an alert triggers outside the run: a webhook's POST and a command, on one thread.

Why a thread of their own: a webhook server that does not answer, or a command that
hangs, must never hold the pump (nor, through it, the training loop's buffer). Alerts
are queued (a bounded deque: a flood of them keeps the newest); the thread posts each
with a timeout and a few retries and runs the command with the alert as JSON on stdin.
A failure is counted and said once (a line through ``say``), never raised.
"""

from __future__ import annotations

import collections
import json
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence

from .._core._rules import Alert

__all__ = ["Actions"]

#: seconds a webhook's POST may take (connect and answer) before it counts as failed
WEBHOOK_TIMEOUT = 5.0
#: tries per alert, and the pause before the second (doubled for each later one)
WEBHOOK_TRIES = 3
RETRY_PAUSE = 0.5
#: seconds a command may run before it is killed
COMMAND_TIMEOUT = 30.0
#: alerts waiting at most (rules fire once per tag, so this is rarely reached)
MAX_WAITING = 256


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
        self._said = False
        self._thread: threading.Thread | None = None

    def submit(self, alert: Alert) -> None:
        """Queue ``alert`` (the pump's loop; never waits)."""
        with self._cond:
            if self._closed:
                return
            self._queue.append(alert)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="aoff-alerts", daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self, timeout: float = 5.0) -> None:
        """No more alerts: wait up to ``timeout`` for those queued (then leave them)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._closed = True
            self._cond.notify()
            while (self._queue or self._busy) and self._thread is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        if self.failures:
            self._say(f"aoff: {self.failures} alert action(s) failed (webhook or command)")

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
            try:
                body = json.dumps(alert.as_dict()).encode()
                if self.webhook:
                    self._post(body)
                if self.command:
                    self._run_command(body)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _failed(self, what: str) -> None:
        self.failures += 1
        if not self._said:  # said once: a dead server would otherwise say it per alert
            self._said = True
            self._say(f"aoff: an alert's {what}; later failures are only counted")

    def _post(self, body: bytes) -> None:
        assert self.webhook is not None
        pause = RETRY_PAUSE
        error = ""
        for attempt in range(WEBHOOK_TRIES):
            if attempt:
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
                error = f"{type(exc).__name__}: {exc}"
                continue
            self.sent += 1
            return
        self._failed(f"webhook POST to {self.webhook} failed {WEBHOOK_TRIES} times ({error})")

    def _run_command(self, body: bytes) -> None:
        assert self.command is not None
        try:
            done = subprocess.run(
                self.command,
                input=body,
                timeout=COMMAND_TIMEOUT,
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self._failed(f"command {self.command[0]!r} failed ({type(exc).__name__}: {exc})")
            return
        if done.returncode != 0:
            self._failed(f"command {self.command[0]!r} exited with {done.returncode}")
