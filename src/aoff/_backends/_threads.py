"""Threads that serve an event loop: one serial worker, and awaiting its futures.

Why here and not in a backend: any part that must call a non-thread-safe library from
one thread (W&B today) needs the same two pieces, and neither knows anything of aoff.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

__all__ = ["SerialWorker", "wait_future"]

T = TypeVar("T")


async def wait_future(fut: concurrent.futures.Future[T]) -> T:
    """Await a ``concurrent.futures.Future`` on asyncio or trio without blocking the loop.

    Cancelling the waiter abandons the wait only: the future is not cancelled, so work
    already queued on the worker (e.g. ``run.finish()``) still happens.
    """
    if fut.done():
        return fut.result()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        return await asyncio.shield(asyncio.wrap_future(fut, loop=loop))
    trio: Any = sys.modules.get("trio")
    token: Any = None
    if trio is not None:
        try:
            token = trio.lowlevel.current_trio_token()
        except RuntimeError:
            token = None
    if token is not None:
        event = trio.Event()

        def wake(_: object) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(event.set)

        fut.add_done_callback(wake)
        await event.wait()
        return fut.result()
    # some other anyio backend: park a thread on the result instead
    return await anyio.to_thread.run_sync(fut.result, abandon_on_cancel=True)


_STOP = object()


class SerialWorker:
    """One daemon thread that runs submitted calls in order, returning futures."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._stopped = False

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fut, fn, args = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:
                fut.set_exception(exc)
            else:
                fut.set_result(result)

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        if self._stopped:
            raise RuntimeError("worker stopped")
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((fut, fn, args))
        return fut

    def stop(self) -> None:
        """Let the thread exit after the calls already submitted (does not wait)."""
        if not self._stopped:
            self._stopped = True
            self._queue.put(_STOP)
