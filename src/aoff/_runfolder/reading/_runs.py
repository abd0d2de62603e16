"""Reading a finished run back from disk, for ``aoff show`` and ``aoff ls``.

A run folder holds what aoff wrote: ``aoff-summary.json`` (the run summary the pump keeps,
:mod:`aoff._runfolder.summary._writer`), ``metrics.jsonl`` (JSON Lines backend) and/or
``events.out.tfevents.*`` (TensorBoard backend, or any other tool). The commands only need
each tag's first/last/min/max values and a curve to draw, plus the run's step, iteration
and wall-time range, so every source is read into one small ``RunData`` (``_rundata``), in this
order: the summary (a few kilobytes, whatever the run's length) when the run finished
or is live; else ``metrics.jsonl`` (exact float64 values); else the event files, read by
aoff's own scalar reader (:mod:`aoff._runfolder.tensorboard._scan`, >100 MB/s).

A run that was killed, or a disk that filled up, can leave a torn last record. Both file
readers keep everything before it and add a one-line note naming the file, so the
commands can show what is there and say what is not.

This module is the choice between the sources (:func:`read_run`) and what it will cost
(:func:`scan_bytes`); the shape read into is ``_rundata``'s, the summary ``_runsummary``'s,
the data files ``_runfiles``', finding run folders ``_runfind``'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..tensorboard._format import TensorBoardFormat
from ._formats import formats, writers
from ._rundata import RunData
from ._runfiles import read_points, read_tensorboard
from ._runfind import tb_files
from ._runsummary import from_summary, load_summary, sessions_state

__all__ = ["read_run", "scan_bytes"]


def scan_bytes(run_dir: str, *, live: bool = False, ends: bool = False) -> int:
    """How many bytes of event files :func:`read_run` will read (0: none, or little)."""
    if load_summary(run_dir, live=live) is not None:
        return 0
    if any(f.exact and f.files(run_dir) for f in formats()):
        return 0  # read before the event files
    from ..tensorboard._scan import TAIL_BYTES

    files = tb_files(run_dir)
    total = 0
    for p in files:
        try:
            total += os.path.getsize(p)
        except OSError:
            continue
    return 2 * TAIL_BYTES if ends and total > 2 * TAIL_BYTES else total


def read_run(
    run_dir: str,
    *,
    live: bool = False,
    progress: Callable[[int], None] | None = None,
    ends: bool = False,
) -> RunData | None:
    """Read ``run_dir``'s summary, or else its JSONL file, or else its TensorBoard files,
    or else its ``progress.csv``.

    ``None`` when the folder holds none of them. With several sessions or writers in
    the folder (:func:`~._runsummary.writers`), their files are read: the union of their
    tags, as TensorBoard shows the folder. A JSONL file without a single readable
    record falls back to the TensorBoard files when there are any. ``live``: the run is
    serving ``aoff attach`` now, so a summary it is still refreshing stands for it.
    ``progress`` is called with the bytes of each chunk of event file read. ``ends``
    (``aoff ls``): only the last values, steps and time range are needed, so big event
    files are read at their two ends only (each tag's count and curve then cover only
    the end of the run). Raises ``OSError`` when a file cannot be read.
    """
    found = load_summary(run_dir, live=live)
    if found is not None:
        got = from_summary(run_dir, *found)
        if got is not None:
            return got
    data = _read_files(run_dir, progress, ends)
    if data is not None:
        data.writers = writers(run_dir)
        if data.state is None:
            data.state = sessions_state(run_dir, live=live)
    return data


def _read_files(run_dir: str, progress: Callable[[int], None] | None, ends: bool) -> RunData | None:
    """The first format with records, exact ones first (``metrics.jsonl``), then in the
    table's order (the TensorBoard files, then ``progress.csv``, then formats added);
    a format present without a readable record is named in the note of the next."""
    present = [f for f in formats() if f.holds_points and f.files(run_dir)]
    present.sort(key=lambda f: not f.exact)
    empty: RunData | None = None
    for fmt in present:
        if isinstance(fmt, TensorBoardFormat):
            # the scan: stops at a corrupt record, as TensorBoard does; only a big run's
            # ends for ``ls``
            data = read_tensorboard(run_dir, tb_files(run_dir), progress, ends=ends)
        else:
            got = read_points(run_dir, fmt)
            if got is None:
                continue
            data = got
        if data.records > 0 or fmt is present[-1]:
            if empty is not None and empty is not data:
                no_records = f"{empty.source}: no readable records; read {fmt.label}"
                data.notes[:0] = [*empty.notes, no_records]
            return data
        empty = empty or data
    return empty
