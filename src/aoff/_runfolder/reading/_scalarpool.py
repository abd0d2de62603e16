"""Reading many runs across processes: ``read_scalars(..., workers=N)`` and
``ScalarReader(..., workers=N)``.

Why a module of its own: decoding event files is CPU work in Python and NumPy, so one
process reads one core's worth; a folder of many runs is dealt out to ``N`` shares of
about equal bytes (the largest run first, each to the lightest share), each kept by a
reader over it (so ``ScalarReader.read()`` reads only what was appended, in every
share), and each answer is joined back in the runs' order: the same output as one
process. The caller reads the first share itself and ``N - 1`` worker processes the
others, so ``workers=2`` starts one process, not two. The workers are started by
``forkserver`` (no fork of a caller that holds threads or a CUDA context), which is asked
to import the reader's module when it starts: each worker is then a fork of a process
that has aoff and NumPy loaded, not a fresh import of them (~0.3 s of CPU a worker),
and a later call's workers start in milliseconds. What a share keeps and answers is the
caller's (``make``, a picklable callable, and its methods), so this module knows
nothing of what a run is; an exception in a worker is raised in the caller, a worker
that dies is a ``RuntimeError`` that says so.

Like any ``multiprocessing`` program, a script that asks for ``workers > 1`` keeps its
top-level work under ``if __name__ == "__main__":`` (the workers import it).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["STOP_WAIT", "Workers", "check_workers", "deal"]

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


class _Failed:
    """A worker's call raised: the exception, sent back to be raised in the caller."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _serve(
    conn: Connection, make: Callable[[list[str], Any], Any], items: list[str], arg: Any
) -> None:
    """A worker: keep ``make(items, arg)``, answer each method name sent with its result."""
    state: Any = None
    failed: BaseException | None = None
    try:
        state = make(items, arg)
    except BaseException as exc:  # sent back at the first question
        failed = exc
    while True:
        try:
            method = conn.recv()
        except (EOFError, OSError):  # the caller is gone
            return
        if method is None:
            return
        try:
            if failed is not None:
                raise failed
            answer = getattr(state, method)()
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


def deal(weights: Sequence[int], n: int) -> list[list[int]]:
    """``n`` shares of the indexes of ``weights``, of about equal total weight: the
    heaviest first, each to the share that holds least so far (ties: the first); each
    share in index order."""
    shares: list[list[int]] = [[] for _ in range(n)]
    held = [0] * n
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        k = held.index(min(held))
        shares[k].append(i)
        held[k] += weights[i]
    return [sorted(share) for share in shares if share]


def _preload(module: str) -> None:
    """Ask the forkserver to import ``module`` when it starts (beside what it was already
    asked for), so its forks have it loaded. A server already running keeps what it has."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)  # the list has no public getter
    have = list(getattr(server, "_preload_modules", None) or ["__main__"])
    if module not in have:
        forkserver.set_forkserver_preload([*have, module])


class Workers:
    """``workers`` shares of ``items`` (of about equal ``weights``: bytes), each keeping
    ``make(share, arg)``: the first in the caller, each other in a worker process.
    :meth:`ask` calls a method of every one and returns the answers (each a list, one
    element per item of its share) in the order of ``items``. :meth:`close` ends the
    processes (also done when the object is collected, or at exit)."""

    def __init__(
        self,
        make: Callable[[list[str], Any], Any],
        items: Sequence[str],
        arg: Any,
        workers: int,
        weights: Sequence[int] | None = None,
    ) -> None:
        n = max(1, min(workers, len(items)))
        self._shares = deal([1] * len(items) if weights is None else weights, n)
        self._size = len(items)
        self._procs: list[BaseProcess] = []
        self._conns: list[Connection] = []
        self._stopper = weakref.finalize(self, _stop, self._procs, self._conns)
        if n > 1:
            _preload(make.__module__)
        ctx = multiprocessing.get_context("forkserver")
        for share in self._shares[1:]:
            mine, theirs = ctx.Pipe()
            p = ctx.Process(
                target=_serve,
                args=(theirs, make, [items[i] for i in share], arg),
                name="aoff-reader",
                daemon=True,
            )
            p.start()
            theirs.close()
            self._procs.append(p)
            self._conns.append(mine)
        # the caller's own share, made after the workers are started so they work meanwhile
        self._local: Any = None
        self._failed: BaseException | None = None
        try:
            self._local = make([items[i] for i in self._shares[0]], arg)
        except Exception as exc:  # raised at the first question, as a worker's is
            self._failed = exc

    def ask(self, method: str) -> list[Any]:
        if not self._stopper.alive:
            raise RuntimeError("the reader's worker processes were closed")
        for conn in self._conns:
            conn.send(method)
        out: list[Any] = [None] * self._size
        failed: BaseException | None = self._failed
        if failed is None:
            try:
                mine = getattr(self._local, method)()
            except Exception as exc:  # the workers' answers are still taken
                failed = exc
            else:
                for i, answer in zip(self._shares[0], mine, strict=True):
                    out[i] = answer
        for share, conn, p in zip(self._shares[1:], self._conns, self._procs, strict=True):
            try:
                got = conn.recv()
            except (EOFError, OSError) as exc:
                self.close()
                raise RuntimeError(
                    f"a worker process reading {len(share)} runs ended abruptly (exit code "
                    f"{p.exitcode}); workers=1 reads them in this process"
                ) from exc
            if isinstance(got, _Failed):
                failed = failed or got.exc  # the others' answers are still taken
                continue
            for i, answer in zip(share, got, strict=True):
                out[i] = answer
        if failed is not None:
            raise failed
        return out

    def close(self) -> None:
        self._stopper()
