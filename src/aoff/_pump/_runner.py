"""Runs one backend in isolation: its own outbox, task, retries and health.

Why a runner per backend: a backend that raises (disk full, permission denied, a W&B
error) or hangs (a network filesystem, a stuck ``wandb.init``) must never stall the
training loop or the other backends. Each runner owns a bounded outbox of records; the
pump only waits for a runner (backpressure, which then reaches the event buffer's
overflow policy) while it is healthy and making progress.

Failure modes, and what each costs:

*raises*
    a failed ``write``/``flush`` is retried ``retries`` times (backoff 0.1 s, then x4);
    if it still fails the runner is *failed*: reported once on stderr and in the
    dashboard's System column, the backend is closed, and every record it did not
    confirm (the failed batch, the outbox, every later record) is counted in ``lost``.
    A failed ``open`` is not retried.
*hangs*
    a call in flight longer than ``stall_timeout`` makes the runner *stalled*: reported
    (the first time only), it stops holding the pump back, and its outbox keeps only the newest
    ``max_pending`` records (the rest counted in ``lost``). If the call returns, the
    runner carries on. At ``finish`` the pump waits while the runner makes progress; once
    it has shown none for ``finish_timeout`` (``_end.await_runners``), :meth:`abandon`
    counts the outbox *and the batch in flight* as lost.

Invariant (tested): at the end, ``offered == written + lost`` for every runner.
``written`` counts records whose ``write`` returned; ``lost`` counts the others.

A backend's blocking work must be cancellable (``anyio.to_thread.run_sync(...,
abandon_on_cancel=True)``): the runner is cancelled when finish gives up on it, and
an await that ignores cancellation would hold ``finish`` back.

Memory: the outbox holds at most ``max_pending`` records plus one fold slice, and one
batch (``MAX_BATCH`` records) is in flight; with ~30 scalars a record that is a few MB
a backend (see ``benchmarks/bench_soak.py``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from operator import call
from typing import Any

import anyio

from .._backends._base import Backend, BackendContext, Takes, takes_of
from .._core._records import MediaRecord, Record

#: what a backend raises for a record its format cannot hold (a tag UTF-8 cannot
#: encode, a step beyond int64, a value of the wrong type): that record's fault alone
RECORD_ERRORS = (ValueError, TypeError, OverflowError)

#: records handed to one ``Backend.write`` call at most
MAX_BATCH = 1024
#: outbox size at which a healthy runner holds the pump back (backpressure)
DEFAULT_MAX_PENDING = 4 * MAX_BATCH


class BackendRunner:
    def __init__(
        self,
        backend: Backend,
        *,
        say: Callable[[str], None],
        max_pending: int = DEFAULT_MAX_PENDING,
        retries: int = 2,
        retry_backoff: float = 0.1,
        flush_interval: float = 2.0,
        stall_timeout: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backend = backend
        self.name = str(getattr(backend, "name", type(backend).__name__))
        self.say = say
        self.max_pending = max_pending
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.flush_interval = flush_interval
        self.stall_timeout = stall_timeout
        self.monotonic = monotonic
        self.pending: deque[Record | MediaRecord] = deque()
        #: what the backend writes besides steps (its ``takes``): the pump routes the
        #: run's alerts and media by it
        self.takes = takes_of(backend)
        #: the backend writes images and videos (``write_media``; ``_media/``): each is a
        #: record here too, in order with the steps
        self.takes_media = bool(self.takes & Takes.MEDIA) and callable(
            getattr(backend, "write_media", None)
        )
        #: told once of each media record this runner is done with, and whether it wrote
        #: it (else lost: refused, failed, abandoned), so its frames' block can be freed
        #: and the record counted written only when a backend wrote it (``Intake``)
        self.media_done: Callable[[MediaRecord, bool], None] | None = None
        self.status = "opening"  # opening | ok | failed | closed
        self.error: str | None = None
        self.offered = 0
        self.lost = 0
        self.written = 0
        self.in_flight = 0  # records of the write in progress
        self.busy_since: float | None = None
        self.busy_with = ""
        self._stall_reported = False
        #: records the backend could not encode, each dropped alone (counted in ``lost``)
        self.refused = 0
        self._refused_run = 0  # refused in a row, none written between
        self._refusals_said: set[str] = set()
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
        if since is None or self.monotonic() - since <= self.stall_timeout:
            return False
        if not self._stall_reported:
            self._stall_reported = True
            self.say(
                f"aoff: backend {self.name!r}: {self.busy_with} has not returned for "
                f"{self.stall_timeout:g}s; training goes on, and this backend keeps only "
                f"its newest {self.max_pending:,} records until it answers"
            )
        return True

    def progress(self) -> tuple[int, float | None]:
        """What changes while this runner works: records settled (written or lost) and
        the start of the call it is in (a new write, flush or close starts a new one).
        finish() waits on a runner while this changes (slow is not hung)."""
        return (self.written + self.lost, self.busy_since)

    def holds_back(self) -> bool:
        """True while the pump should wait for this runner before draining more."""
        return self.healthy and len(self.pending) >= self.max_pending and not self.stalled()

    def offer(self, records: Sequence[Record | MediaRecord]) -> None:
        if not records:
            return
        self.offered += len(records)
        if not self.healthy:
            self.lost += len(records)
            self._let_go(records)
            return
        self.pending.extend(records)
        excess = len(self.pending) - self.max_pending
        if excess > 0 and self.stalled():
            self._let_go([self.pending.popleft() for _ in range(excess)])
            self.lost += excess
        self._wake.set()

    def _let_go(self, records: Sequence[Record | MediaRecord], written: bool = False) -> None:
        """The media records among ``records`` leave this runner, ``written`` or lost."""
        done = self.media_done
        if done is not None:
            for rec in records:
                if type(rec) is MediaRecord:
                    done(rec, written)

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
        """Count everything not confirmed written as lost (finish gave up on it)."""
        self.lost += len(self.pending) + self.in_flight
        self._let_go(self.pending)
        self.pending.clear()
        self.in_flight = 0
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
            self.lost += self.in_flight
            self.in_flight = 0
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
                batch, write = self._next_batch()
                n = len(batch)
                self.in_flight = n
                before = self.written
                ok = False
                try:
                    ok = await self._write(batch, write)
                finally:  # written or lost: a media record's block may be freed
                    if type(batch[0]) is MediaRecord:
                        self._let_go(batch, written=ok and self.written > before)
                self.in_flight = 0
                if not ok:
                    return
                dirty = True
                continue
            now = self.monotonic()
            want_flush = bool(self._flush_waiters) or self._closing
            if dirty and (want_flush or now - last_flush >= self.flush_interval):
                if not await self._attempt("flush", self.backend.flush):
                    return
                dirty = False
                last_flush = self.monotonic()
                continue  # records may have arrived during the flush
            if self._flush_waiters:
                for w in self._flush_waiters:
                    w.set()
                self._flush_waiters.clear()
            if self._closing:
                break
            # No await between the checks above and this wait: an offer() made while a
            # write or flush was in flight was seen by `if self.pending` (no lost wake-up).
            self._wake = anyio.Event()
            wait = self.flush_interval - (self.monotonic() - last_flush) if dirty else math.inf
            with anyio.move_on_after(max(wait, 0.0)):
                await self._wake.wait()
        await self._attempt("close", self.backend.close)
        if self.status == "ok":
            self.status = "closed"

    def _next_batch(self) -> tuple[list[Any], Callable[[Any], Any]]:
        """The next write: up to ``MAX_BATCH`` step records, or one media record."""
        pending = self.pending
        if type(pending[0]) is MediaRecord:
            return [pending.popleft()], self.backend.write_media  # type: ignore[attr-defined]
        # the step records before the next media record, at C speed (no loop a record)
        n = min(len(pending), MAX_BATCH)
        kinds = list(map(type, itertools.islice(pending, n)))
        with contextlib.suppress(ValueError):
            n = kinds.index(MediaRecord)
        # (not iter(pending.popleft, None): it compares each record with None, a Python
        # call of the dataclass's __eq__, ~85 ns a record)
        batch: list[Any]
        if n == len(pending):  # all of them (only this loop touches it)
            batch = list(pending)
            pending.clear()
        else:  # a backlog (flat out, the usual case then): n pops at C speed
            batch = list(map(call, itertools.repeat(pending.popleft, n)))
        return batch, self.backend.write

    async def _write(self, batch: list[Any], write: Callable[[Any], Any]) -> bool:
        """Write one batch, each record counted in ``written`` or ``lost``; False once
        the runner failed. A record the backend cannot encode (``RECORD_ERRORS``: a
        value or tag its format cannot hold) costs only itself: the batch is written
        again record by record, and a record refused alone is dropped, counted in
        ``lost`` and ``refused`` and said (the first of each kind of error only). The
        file backends and TensorBoard encode a batch whole before writing any of it, so
        nothing is written twice (W&B logs record by record: a record it refused after
        others of its batch were logged would see those logged again).
        ``MAX_BATCH`` refusals in a row, none written, say the backend itself is broken:
        it fails as for any other error."""
        attempt = self._attempt
        n = len(batch)
        try:
            if not await attempt("write", functools.partial(write, batch), split=True):
                self.lost += n
                return False
            self._refused_run = 0
            self.written += n
            return True
        except RECORD_ERRORS as exc:
            if n == 1:
                self.lost += 1
                return await self._refuse(batch[0], exc)
        for i, rec in enumerate(batch):  # the batch again, record by record
            self.in_flight = n - i
            try:
                if not await attempt("write", functools.partial(write, (rec,)), split=True):
                    self.lost += n - i
                    return False
            except RECORD_ERRORS as exc:
                self.lost += 1
                if not await self._refuse(rec, exc):
                    self.lost += n - i - 1
                    return False
                continue
            self.written += 1
            self._refused_run = 0
        return True

    async def _refuse(self, rec: Record | MediaRecord, exc: Exception) -> bool:
        """One record the backend refused: counted (in ``lost``, by the caller) and said
        once per kind of error. False when the runner failed instead (``MAX_BATCH`` in a
        row)."""
        self.refused += 1
        self._refused_run += 1
        if self._refused_run >= MAX_BATCH:
            self._fail(f"write failed for {MAX_BATCH:,} records in a row: {_said(exc)}")
            await self._close_quietly()
            return False
        kind = type(exc).__name__
        if kind in self._refusals_said:
            return True
        self._refusals_said.add(kind)
        what = f"the media record {rec.key!r}" if type(rec) is MediaRecord else "a record"
        self.say(
            f"aoff: backend {self.name!r} could not write {what} at step {rec.step} "
            f"({_said(exc)}); that record is skipped and counted, the backend goes on "
            "(said once)"
        )
        return True

    async def _attempt(self, what: str, call: Callable[[], object], *, split: bool = False) -> bool:
        """Run ``call`` with retries; False once it failed for good (the runner failed).
        ``split``: a record error (``RECORD_ERRORS``) is raised to the caller at once,
        not retried: retrying cannot make a record encodable."""
        delay = self.retry_backoff
        for attempt in range(self.retries + 1):
            self.busy_since = self.monotonic()
            self.busy_with = what
            try:
                await call()  # type: ignore[misc]
                return True
            except Exception as exc:
                if split and isinstance(exc, RECORD_ERRORS):
                    raise
                msg = f"{what} failed: {_said(exc)}{self._argument(what, exc)}"
                if attempt == self.retries or what in ("open", "close"):
                    self._fail(msg)
                    if what != "close":
                        await self._close_quietly()
                    return False
                await anyio.sleep(delay)
                delay *= 4
            finally:
                self.busy_since = None
        return False  # pragma: no cover - loop always returns

    def _argument(self, what: str, exc: Exception) -> str:
        """For an ``open`` that failed: the argument to change. On the file system, the
        folder the run was given (``log_dir``); on a text UTF-8 cannot hold (which the
        calls refuse or escape, so only a custom backend's own input), the arguments
        that carry texts to every backend at open."""
        if what != "open":
            return ""
        if isinstance(exc, UnicodeError):
            return " (a text UTF-8 cannot hold: look at config=, log_config(), algo_name, env_name)"
        if not isinstance(exc, OSError):
            return ""
        folder = getattr(self.backend, "log_dir", None)
        path = getattr(self.backend, "path", None)
        if not folder and isinstance(path, str):  # a file backend: the file's folder
            folder = os.path.dirname(os.path.abspath(path))
        return f" (the run's log_dir: {str(folder)!r})" if folder else ""

    def _fail(self, message: str) -> None:
        if self.status == "failed":
            return
        self.status = "failed"
        self.error = message
        self.lost += len(self.pending)
        self._let_go(self.pending)
        self.pending.clear()
        self.say(f"aoff: backend {self.name!r} disabled after error: {message}")

    async def _close_quietly(self) -> None:
        with contextlib.suppress(Exception):
            await self.backend.close()


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
