"""Output into a pipe that was closed: the commands stop at once, quietly, status 0.

Why a module of its own: ``aoff ls runs | head -1`` is ordinary use, and the reader
closing the pipe is its way of saying it has enough. Rich's console ends the process
with status 1 on a broken pipe, and ``aoff attach`` may have nothing to write for seconds
(a piped dashboard prints a line now and then), so it would notice late: the console here
lets ``BrokenPipeError`` reach the command's entry point (which exits 0, see
``aoff.__main__``), and :func:`output_closed` asks the kernel whether anyone still reads.
"""

from __future__ import annotations

import os
import select
import sys
from typing import IO

from rich.console import Console

__all__ = ["PipeConsole", "output_closed"]


class PipeConsole(Console):
    """A Rich console whose broken pipe is an ordinary ``BrokenPipeError``."""

    def on_broken_pipe(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)  # the flush at exit must not raise again
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise BrokenPipeError


def output_closed(file: IO[str]) -> bool:
    """Whether ``file`` is a pipe (or socket, terminal) nobody reads any more."""
    try:
        fd = file.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
