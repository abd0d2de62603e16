"""A progress bar for a long read of event files, on a terminal only.

Why a module of its own: ``show`` and ``ls`` both wrap their reading in it; it decides
whether a bar is worth drawing (a terminal, and enough bytes to wait for) and hands the
readers a callback, or nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TextIO

from rich.console import Console

__all__ = ["PROGRESS_MIN_BYTES", "reading_progress"]

#: event files to read before a progress bar is worth showing (~0.1 s of reading)
PROGRESS_MIN_BYTES = 16 << 20


@contextlib.contextmanager
def reading_progress(err: TextIO, total: int, what: str) -> Iterator[Callable[[int], None] | None]:
    """A Rich progress bar on ``err`` while ``total`` bytes of event files are read, when
    ``err`` is a terminal and the read is long enough to wait for; else nothing."""
    console = Console(file=err)
    if total < PROGRESS_MIN_BYTES or not console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(what, total=total)
        yield lambda n: progress.advance(task, n)
