"""Silencing one thread's prints, and only that thread's.

trackio prints where a run went (``trackio.init``) and what it is doing, and aoff's
dashboard already says it. ``contextlib.redirect_stdout`` would silence it by swapping
``sys.stdout`` for the whole process: while trackio's call lasts (seconds, on a loaded
machine), every line another thread prints, the dashboard's own (Rich resolves
``sys.stdout`` at each write), would go into the swap and be lost in silence. Here the
swap is a pass-through that drops only the calling thread's writes.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["quiet_this_thread"]


class _AllButOne:
    """``sys.stdout`` as it was, for every thread but ``ident``, whose writes are dropped.
    Every other attribute (``isatty``, ``encoding``, ``fileno``) is the real stream's, so
    a terminal stays a terminal to whoever asks."""

    def __init__(self, real: Any, ident: int) -> None:
        self._real = real
        self._ident = ident

    def write(self, text: str) -> int:
        if threading.get_ident() == self._ident:
            return len(text)
        return int(self._real.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextlib.contextmanager
def quiet_this_thread() -> Iterator[None]:
    """The calling thread's prints dropped for the block; other threads' pass through.
    ``sys.stdout`` is put back unless someone else replaced it meanwhile."""
    real = sys.stdout
    proxy = _AllButOne(real, threading.get_ident())
    sys.stdout = proxy
    try:
        yield
    finally:
        if sys.stdout is proxy:
            sys.stdout = real
