"""Reading many runs across processes: ``read_scalars(..., workers=N)`` and
``ScalarReader(..., workers=N)``.

Why a module of its own: decoding event files is CPU work in Python and NumPy (most of it
holding the GIL, so threads do not scale it), so one process reads one core's worth. A
folder of many runs is read by ``N`` participants: the caller and ``N - 1`` worker
processes (``workers=2`` starts one process, not two). They share the runs by claiming
them: each takes the next contiguous range of runs not yet taken, an ever smaller part of
what is left (a ``2N``-th of it, down to one run at the end), until none is left. A
participant slowed down (a bigger run, a core taken by another job) simply claims fewer,
so all end at about the same time; nothing is stat'ed or weighed before the reading
starts. Each participant keeps what it made of its ranges (``make``, a picklable
callable, and its methods), so ``ScalarReader.read()`` asks each again for what was
appended; a range's answer comes back whole (the maker decides its shape: one set of
columns for all its runs, not an object per run), and the caller puts the ranges in the
runs' order. This module knows nothing of what a run is.

The workers are started by ``forkserver`` (no fork of a caller that holds threads or a
CUDA context), which is asked to import the maker's module when it starts: each worker
is then a fork of a process that has aoff and NumPy loaded, not a fresh import of them
(~0.3 s of CPU a worker), and a later call's workers start in milliseconds. An exception
in a worker is raised in the caller; a worker that dies is a ``RuntimeError`` that says
so. When the first question fails anywhere, every participant forgets its ranges and the
next question shares the runs anew.

Like any ``multiprocessing`` program, a script that asks for ``workers > 1`` keeps its
top-level work under ``if __name__ == "__main__":`` (the workers import it).
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ._nocollect import collector_paused

if TYPE_CHECKING:  # loaded by the first pool of workers: one process never needs them
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

__all__ = ["CLAIM_WAIT", "STOP_WAIT", "Workers", "check_workers", "claim_end"]

#: seconds a worker is given to end after it is asked to, before it is terminated
STOP_WAIT = 5.0


def check_workers(workers: object) -> int:
    """``workers`` as a count of processes (``ValueError``/``TypeError`` otherwise);
    ``0`` means one per core."""
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers: an int (0: one per core), not {type(workers).__name__}")
    if workers < 0:
        raise ValueError(f"workers={workers}: 1 or more (0: one per core)")
    return workers or (os.cpu_count() or 1)


def claim_end(start: int, total: int, participants: int) -> int:
    """The end of the range claimed from ``start`` of ``total`` items: the part of what is
    left that each of twice the participants would get, at least one item. Big ranges
    first (few answers to join), small ones last (no participant left waiting long on
    another's last range)."""
    left = total - start
    return start + max(1, -(-left // (2 * participants)))


class _Counter(Protocol):
    """``multiprocessing.Value``: the next item not yet claimed, shared by all."""

    value: int

    def get_lock(self) -> Any: ...


#: seconds a participant waits for the claim lock (held for microseconds) before it takes
#: the holder for dead: a process killed while holding it would leave the others blocked
CLAIM_WAIT = 60.0


def _claim(
    counter: _Counter, total: int, participants: int, wait: float = CLAIM_WAIT
) -> tuple[int, int] | None:
    lock = counter.get_lock()
    if not lock.acquire(timeout=wait):
        raise RuntimeError(
            f"no reader process let go of the runs' claim lock in {wait:g} s: one of them "
            "died holding it; workers=1 reads them in this process"
        )
    try:
        start = counter.value
        if start >= total:
            return None
        end = counter.value = claim_end(start, total, participants)
    finally:
        lock.release()
    return start, end


class _Failed:
    """A worker's call raised: the exception, sent back to be raised in the caller."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


Held = list[tuple[int, Any]]
Maker = Callable[[list[str], Any], Any]


def _answer(
    held: Held | None,
    method: str,
    make: Maker,
    items: Sequence[str],
    arg: Any,
    counter: _Counter,
    participants: int,
) -> tuple[Held, list[tuple[int, Any]]]:
    """A participant's answers, ``(start, answer)`` per range it holds: those it holds
    already (``held``), or, asked to claim (``held`` None), the ranges it claims now."""
    with collector_paused():  # what the ranges make is kept or answered: nothing to free
        if held is not None:
            return held, [(start, getattr(state, method)()) for start, state in held]
        held, answers = [], []
        while (got := _claim(counter, len(items), participants)) is not None:
            start, end = got
            state = make(list(items[start:end]), arg)
            held.append((start, state))
            answers.append((start, getattr(state, method)()))
        return held, answers


def _serve(
    conn: Connection,
    make: Maker,
    pickled_items: bytes,
    arg: Any,
    counter: _Counter,
    participants: int,
) -> None:
    """A worker: answer each ``(claim, method)`` sent (``claim``: forget the ranges held
    and claim anew), until ``None`` or the caller is gone. ``pickled_items``: the items,
    pickled once by the caller for all its workers (not once a worker: tens of thousands
    of paths take milliseconds each time)."""
    # what the worker inherited from the server lives as long as it does: out of the
    # collector's sight, its collections do not touch (and so copy) those pages
    gc.freeze()
    items: list[str] = pickle.loads(pickled_items)
    held: Held | None = None
    while True:
        try:
            question = conn.recv()
        except (EOFError, OSError):  # the caller is gone
            return
        if question is None:
            return
        claim, method = question
        if claim:
            held = None
        answer: Any
        try:
            held, answer = _answer(held, method, make, items, arg, counter, participants)
        except BaseException as exc:
            answer = _Failed(exc)
        try:
            conn.send(answer)
        except Exception as exc:  # an answer that cannot be pickled
            conn.send(_Failed(RuntimeError(f"a worker's answer could not be sent: {exc}")))


def _stop(procs: list[BaseProcess], conns: list[Connection]) -> None:
    for conn in conns:
        with contextlib.suppress(OSError, ValueError):
            conn.send(None)
    for p in procs:
        p.join(STOP_WAIT)
        if p.is_alive():
            p.terminate()
            p.join()
    for conn in conns:
        conn.close()


def _preload(module: str) -> None:
    """Ask the forkserver to import ``module`` when it starts (beside what it was already
    asked for), so its forks have it loaded. A server already running keeps what it has."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)  # the list has no public getter
    have = list(getattr(server, "_preload_modules", None) or ["__main__"])
    if module not in have:
        forkserver.set_forkserver_preload([*have, module])


class _NoLock:
    def acquire(self, timeout: float | None = None) -> bool:
        return True

    def release(self) -> None:
        pass


class _Local:
    """A counter for the caller alone (``workers=1``, or one item): no lock to share."""

    def __init__(self) -> None:
        self.value = 0

    def get_lock(self) -> _NoLock:
        return _NoLock()


class Workers:
    """``items`` read by ``workers`` participants (the caller and ``workers - 1`` worker
    processes), each range of items claimed keeping ``make(range, arg)``. :meth:`ask`
    calls a method of every range's state and returns ``(start, answer)`` per range, in
    the items' order (the ranges cover every item once). :meth:`close` ends the processes
    (also done when the object is collected, or at exit)."""

    def __init__(self, make: Maker, items: Sequence[str], arg: Any, workers: int) -> None:
        self._n = n = max(1, min(workers, len(items)))
        self._items = list(items)
        self._make, self._arg = make, arg
        self._procs: list[BaseProcess] = []
        self._conns: list[Connection] = []
        self._stopper = weakref.finalize(self, _stop, self._procs, self._conns)
        self._held: Held | None = None  # the caller's ranges (None: to be claimed)
        self._counter: _Counter = _Local()
        if n == 1:
            return
        import multiprocessing  # ~3 ms of a first call, only for workers > 1

        _preload(make.__module__)
        ctx = multiprocessing.get_context("forkserver")
        self._counter = ctx.Value("q", 0)
        pickled = pickle.dumps(self._items, pickle.HIGHEST_PROTOCOL)
        for _ in range(n - 1):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(
                target=_serve,
                args=(theirs, make, pickled, arg, self._counter, n),
                name="aoff-reader",
                daemon=True,
            )
            p.start()
            theirs.close()
            self._procs.append(p)
            self._conns.append(mine)

    def ask(self, method: str) -> list[tuple[int, Any]]:
        if not self._stopper.alive:
            raise RuntimeError("the reader's worker processes were closed")
        claim = self._held is None
        if claim:
            self._counter.value = 0
        for conn in self._conns:
            conn.send((claim, method))
        out: list[tuple[int, Any]] = []
        failed: BaseException | None = None
        try:
            self._held, mine = _answer(
                self._held, method, self._make, self._items, self._arg, self._counter, self._n
            )
            out.extend(mine)
        except Exception as exc:  # the workers' answers are still taken
            failed = exc
        for conn, p in zip(self._conns, self._procs, strict=True):
            try:
                got = conn.recv()
            except (EOFError, OSError) as exc:
                self.close()
                raise RuntimeError(
                    f"a worker process reading some of {len(self._items)} runs ended "
                    f"abruptly (exit code {p.exitcode}); workers=1 reads them in this process"
                ) from exc
            if isinstance(got, _Failed):
                failed = failed or got.exc  # the others' answers are still taken
                continue
            out.extend(got)
        if failed is not None:
            if claim:  # the ranges are shared anew at the next question
                self._held = None
            raise failed
        out.sort(key=lambda answer: answer[0])
        return out

    def close(self) -> None:
        self._stopper()
