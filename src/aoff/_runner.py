"""Runs one backend in isolation: its own outbox, task, retries and health.

Why a runner per backend: a backend that raises (disk full, permission denied, a W&B
error) or hangs (a network filesystem, a stuck ``wandb.init``) must never stall the
training loop or the other backends. Each runner owns a bounded outbox of records; the
pump only waits for a runner (backpressure, which then reaches the event buffer's
overflow policy) while it is healthy and making progress. A runner whose write has been
in flight longer than ``stall_timeout`` is *stalled*: it no longer holds the pump back,
and its outbox drops its oldest records (counted in ``lost``). A runner whose write still
fails after ``retries`` attempts is *failed*: it is reported once, closed, and every later
record for it is counted in ``lost``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections import deque
from collections.abc import Callable, Sequence

import anyio

from ._backend import Backend, BackendContext
from ._state import StepRecord

MAX_BATCH = 4096


class BackendRunner:
    def __init__(
        self,
        backend: Backend,
        *,
        report: Callable[[str], None],
        max_pending: int = 20_000,
        retries: int = 2,
        retry_backoff: float = 0.1,
        flush_interval: float = 2.0,
        stall_timeout: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.name = str(getattr(backend, "name", type(backend).__name__))
        self.report = report
        self.max_pending = max_pending
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.flush_interval = flush_interval
        self.stall_timeout = stall_timeout
        self.monotonic = monotonic
        self.pending: deque[StepRecord] = deque()
        self.status = "opening"  # opening | ok | failed | closed
        self.error: str | None = None
        self.lost = 0
        self.written = 0
        self.busy_since: float | None = None
        self._closing = False
        self._wake = anyio.Event()
        self._flush_waiters: list[anyio.Event] = []
        self.done = anyio.Event()

    # -- called by the pump (same event loop) ----------------------------------------------
    @property
    def healthy(self) -> bool:
        return self.status in ("opening", "ok")

    def stalled(self) -> bool:
        since = self.busy_since
        return since is not None and self.monotonic() - since > self.stall_timeout

    def holds_back(self) -> bool:
        """True while the pump should wait for this runner before draining more."""
        return self.healthy and len(self.pending) >= self.max_pending and not self.stalled()

    def offer(self, records: Sequence[StepRecord]) -> None:
        if not records:
            return
        if not self.healthy:
            self.lost += len(records)
            return
        self.pending.extend(records)
        excess = len(self.pending) - self.max_pending
        if excess > 0 and self.stalled():
            for _ in range(excess):
                self.pending.popleft()
            self.lost += excess
        self._wake.set()

    def close_input(self) -> None:
        self._closing = True
        self._wake.set()

    def request_flush(self) -> anyio.Event:
        done = anyio.Event()
        if self.status in ("failed", "closed") or self.done.is_set():
            done.set()
        else:
            self._flush_waiters.append(done)
            self._wake.set()
        return done

    def abandon(self) -> None:
        """Count what is still queued as lost (finish timed out on this backend)."""
        self.lost += len(self.pending)
        self.pending.clear()
        if self.status in ("opening", "ok"):
            self.status = "failed"
            self.error = self.error or "timed out at finish"

    # -- the task ------------------------------------------------------------------------
    async def run(self, ctx: BackendContext) -> None:
        try:
            await self._run(ctx)
        except anyio.get_cancelled_exc_class():
            self.abandon()
            with anyio.move_on_after(1.0, shield=True):
                await self._close_quietly()
            raise
        except BaseException as exc:  # never let a backend kill the pump
            self._fail(f"{type(exc).__name__}: {exc}")
            with anyio.move_on_after(1.0, shield=True):
                await self._close_quietly()
        finally:
            for w in self._flush_waiters:
                w.set()
            self._flush_waiters.clear()
            self.done.set()

    async def _run(self, ctx: BackendContext) -> None:
        if not await self._attempt("open", lambda: self.backend.open(ctx)):
            return
        self.status = "ok"
        last_flush = self.monotonic()
        dirty = False
        while True:
            if self.pending:
                batch = [self.pending.popleft() for _ in range(min(MAX_BATCH, len(self.pending)))]
                if not await self._attempt("write", functools.partial(self.backend.write, batch)):
                    self.lost += len(batch)
                    return
                self.written += len(batch)
                dirty = True
            if self.pending:
                continue
            now = self.monotonic()
            want_flush = bool(self._flush_waiters) or self._closing
            if dirty and (want_flush or now - last_flush >= self.flush_interval):
                if not await self._attempt("flush", self.backend.flush):
                    return
                dirty = False
                last_flush = self.monotonic()
            if self._flush_waiters:
                for w in self._flush_waiters:
                    w.set()
                self._flush_waiters.clear()
            if self._closing:
                break
            self._wake = anyio.Event()
            wait = self.flush_interval - (self.monotonic() - last_flush) if dirty else math.inf
            with anyio.move_on_after(max(wait, 0.0)):
                await self._wake.wait()
        await self._attempt("close", self.backend.close)
        if self.status == "ok":
            self.status = "closed"

    async def _attempt(self, what: str, call: Callable[[], object]) -> bool:
        delay = self.retry_backoff
        for attempt in range(self.retries + 1):
            self.busy_since = self.monotonic()
            try:
                await call()  # type: ignore[misc]
                return True
            except Exception as exc:
                msg = f"{what} failed: {type(exc).__name__}: {exc}"
                if attempt == self.retries or what == "open":
                    self._fail(msg)
                    if what != "close":
                        await self._close_quietly()
                    return False
                await anyio.sleep(delay)
                delay *= 4
            finally:
                self.busy_since = None
        return False  # pragma: no cover - loop always returns

    def _fail(self, message: str) -> None:
        if self.status == "failed":
            return
        self.status = "failed"
        self.error = message
        self.lost += len(self.pending)
        self.pending.clear()
        self.report(f"aoff: backend {self.name!r} disabled after error: {message}")

    async def _close_quietly(self) -> None:
        with contextlib.suppress(Exception):
            await self.backend.close()
