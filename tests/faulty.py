"""Backends that misbehave on purpose, for the reliability tests.

Each does its blocking work in a worker thread with ``abandon_on_cancel=True``, as the
:class:`aoff.Backend` contract asks, so what is tested is aoff's isolation, not a
backend that also blocks the event loop.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

import anyio.to_thread
import pytest

from aoff import BackendContext, Record
from aoff._core._records import MediaRecord
from aoff._pump._registry import BackendOptions, NamedBackend
from aoff.testing._faults import without_tensor_capture


class CountingBackend:
    """Keeps only each record's iteration (cheap enough for millions of records)."""

    def __init__(self, name: str = "counting") -> None:
        self.name = name
        self.iterations: list[int] = []
        self.writes = 0
        self.opened = 0
        self.closed = 0

    async def open(self, ctx: BackendContext) -> None:
        self.opened += 1

    async def write(self, records: Sequence[Record]) -> None:
        self.writes += 1
        self.iterations.extend(r.iteration for r in records)

    async def flush(self) -> None:
        pass

    async def close(self) -> None:
        self.closed += 1


class SlowBackend(CountingBackend):
    """Every write blocks a worker thread for ``delay`` seconds (a slow disk)."""

    def __init__(self, delay: float = 0.002, name: str = "slow") -> None:
        super().__init__(name)
        self.delay = delay

    async def write(self, records: Sequence[Record]) -> None:
        await anyio.to_thread.run_sync(time.sleep, self.delay, abandon_on_cancel=True)
        await super().write(records)


class GatedBackend(CountingBackend):
    """Every write blocks a worker thread until :attr:`gate` is set (a hung backend).

    Never setting the gate makes it hang forever; tests set it at teardown so that the
    abandoned worker thread ends.
    """

    def __init__(self, name: str = "gated") -> None:
        super().__init__(name)
        self.gate = threading.Event()
        self.entered = threading.Event()  # set once a write is blocked on the gate

    def _wait(self) -> None:
        self.entered.set()
        self.gate.wait()

    async def write(self, records: Sequence[Record]) -> None:
        await anyio.to_thread.run_sync(self._wait, abandon_on_cancel=True)
        await super().write(records)


class RaisingBackend(CountingBackend):
    """Raises ``make_error()`` from ``write`` (or from ``open``), every time or ``times``."""

    def __init__(
        self,
        make_error: Callable[[], BaseException],
        *,
        on: str = "write",
        times: int | None = None,
        name: str = "raising",
    ) -> None:
        super().__init__(name)
        self.make_error = make_error
        self.on = on
        self.times = times
        self.attempts = 0

    def _maybe_raise(self, what: str) -> None:
        if what != self.on:
            return
        self.attempts += 1
        if self.times is None or self.attempts <= self.times:
            raise self.make_error()

    async def open(self, ctx: BackendContext) -> None:
        self._maybe_raise("open")
        await super().open(ctx)

    async def write(self, records: Sequence[Record]) -> None:
        self._maybe_raise("write")
        await super().write(records)


@pytest.fixture(params=["plain", "capturing"])
def number_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a test on both recorder paths: torch-free, and capturing (torch imported).

    Once torch is imported anywhere in the process, the recorder inspects values at the
    call; the outcome of a bad value must not change (docs/reference/input-handling.md).
    """
    if request.param == "plain":
        with without_tensor_capture():  # loggers built now keep the torch-free path
            yield "plain"
    else:
        pytest.importorskip("torch")
        yield "capturing"


#: while a file of this name is in the run's ``log_dir``, :class:`HeldMediaBackend`'s
#: ``write_media`` waits (the agent keeps the item unwritten as long as a test likes)
HOLD_MEDIA = "hold-media"


class HeldMediaBackend:
    """A media backend built in the agent (``portable``, registered by name): it writes
    ``key step frames`` lines to ``log_dir/held-media.txt``, and waits while the
    :data:`HOLD_MEDIA` file exists (a slow upload that outlives the agent)."""

    name = "heldmedia"
    portable = True
    media_formats: ClassVar[dict[str, str]] = {"image": "png", "video": "gif"}

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir

    def _write(self, items: Sequence[MediaRecord]) -> None:
        if os.path.exists(os.path.join(self.log_dir, HOLD_MEDIA)):
            open(os.path.join(self.log_dir, "held-media-waiting"), "w").close()
        while os.path.exists(os.path.join(self.log_dir, HOLD_MEDIA)):
            time.sleep(0.01)
        with open(os.path.join(self.log_dir, "held-media.txt"), "a", encoding="utf-8") as f:
            f.writelines(f"{r.key} {r.step} {r.shape[0]}\n" for r in items)

    async def open(self, ctx: BackendContext) -> None:
        return

    async def write(self, records: Sequence[Record]) -> None:
        return

    async def write_media(self, items: Sequence[MediaRecord]) -> None:
        await anyio.to_thread.run_sync(self._write, items, abandon_on_cancel=True)

    async def flush(self) -> None:
        return

    async def close(self) -> None:
        return


def build_held_media(o: BackendOptions) -> HeldMediaBackend:
    return HeldMediaBackend(o.log_dir)


HELD_MEDIA = NamedBackend("heldmedia", build_held_media, "held media")
