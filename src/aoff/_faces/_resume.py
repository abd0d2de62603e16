"""Resume a run at a checkpoint step (``resume_step=N``): check the run folder, cut it back.

Why at construction, in the training process: a wrong ``resume_step`` must fail at the
line that gave it, before anything is written or a helper process is started, and the
files must be cut back before any backend appends to them.

What happens (also in docs/guides/resume.md):

* the last logged step is read from the run folder: the last row of ``metrics.jsonl``
  and of ``progress.csv`` (their tails only), else the TensorBoard event files (every
  record's step, following TensorBoard's own ``SessionLog.START`` purge rule, so an
  earlier resume is taken into account). ``N`` beyond it, no run in the folder, or no
  ``log_dir`` at all is a ``ValueError`` naming what was found;
* ``metrics.jsonl`` and ``progress.csv`` lose every row with a step after ``N`` (the file
  is written again to a temporary file, ``fsync``-ed, and renamed over the old one; the
  CSV header is kept). A last line cut short by a crash is dropped too;
* the TensorBoard backend starts a new event file whose first event after the file
  version is a ``SessionLog.START`` at step ``N + 1`` (see ``_tensorboard.py``); old files
  are kept, and TensorBoard hides their points after ``N``;
* the W&B backend continues the run whose id it stored in ``log_dir/wandb-run-id``.
"""

from __future__ import annotations

import csv
import json
import os
import re
import stat
import struct
from collections.abc import Callable, Iterator

from .._backends._replace import replaced
from .._pump._options import Options
from .._runfolder._tbwire import varint

__all__ = ["last_logged_step", "prepare_resume"]

_JSONL = "metrics.jsonl"
_CSV = "progress.csv"
_TB = "TensorBoard event files"
_STEP_PREFIX = re.compile(rb'\{"step": ?(-?\d+)[,}]')  # compact, or older runs' spaces
_TAIL = 1 << 16


def _jsonl_step(line: bytes) -> int | None:
    """The ``step`` of one JSONL row (None: not a row aoff can read)."""
    m = _STEP_PREFIX.match(line)
    if m:
        return int(m[1])
    try:
        row = json.loads(line)
    except ValueError:
        return None
    step = row.get("step") if isinstance(row, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def _csv_step(line: bytes) -> int | None:
    first = line.split(b",", 1)[0].strip()
    try:
        return int(first)
    except ValueError:
        return None


def _last_lines(path: str) -> Iterator[bytes]:
    """The file's complete lines (ending in a newline), last first, read from the end."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        # a last line without its newline was cut short: not a row
        f.seek(max(end - 1, 0))
        if end and f.read(1) != b"\n":
            tail_start = end
            while tail_start > 0:
                start = max(tail_start - _TAIL, 0)
                f.seek(start)
                chunk = f.read(tail_start - start)
                i = chunk.rfind(b"\n")
                if i >= 0:
                    end = start + i + 1
                    break
                tail_start = start
            else:
                return
        pos = end
        rest = b""
        while pos > 0:
            start = max(pos - _TAIL, 0)
            f.seek(start)
            chunk = f.read(pos - start) + rest
            lines = chunk.split(b"\n")
            rest = lines[0] if start > 0 else b""
            body = lines[1:] if start > 0 else lines
            for line in reversed(body):
                if line:
                    yield line
            pos = start


def _last_row_step(path: str, parse: Callable[[bytes], int | None]) -> int | None:
    for line in _last_lines(path):
        step = parse(line)
        if step is not None:
            return step
    return None


def _event_step(payload: bytes) -> tuple[int, bool, bool]:
    """``(step, has a summary, is a SessionLog.START)`` of a serialised ``Event``.

    Reads the wire format directly (fields: wall_time = 1, step = 2, summary = 5,
    session_log = 7 with status = 1, START = 1): a full protobuf parse of every record
    of a long run would cost seconds at construction.
    """
    pos, end = 0, len(payload)
    step, summary, start = 0, False, False
    while pos < end:
        key, pos = varint(payload, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(payload, pos)
            if field == 2:
                step = value - (1 << 64) if value >= 1 << 63 else value
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n, pos = varint(payload, pos)
            if field == 5:
                summary = True
            elif field == 7:
                sub = payload[pos : pos + n]
                start = len(sub) >= 2 and sub[0] == 0x08 and sub[1] == 1
            pos += n
        else:  # groups: not in an Event
            break
    return step, summary, start


def _tensorboard_last_step(files: list[str]) -> int | None:
    """The last step TensorBoard shows for these files (read in name order, as it does):
    the step of the last summary event, lowered by a later ``SessionLog.START``."""
    last: int | None = None
    header = struct.Struct("<Q")
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while pos + 12 <= len(data):
            (n,) = header.unpack_from(data, pos)
            if pos + 12 + n + 4 > len(data):
                break  # a record cut short: readers stop here too
            step, summary, start = _event_step(data[pos + 12 : pos + 12 + n])
            pos += 12 + n + 4
            if start:
                if last is not None and last >= step:
                    last = step - 1
            elif summary and step:
                last = step if last is None else max(last, step)
    return last


def _tensorboard_files(log_dir: str) -> list[str]:
    from .._backends._hparams import HPARAMS_FILE_PREFIX

    names = sorted(
        n
        for n in os.listdir(log_dir)
        if n.startswith("events.out.tfevents.") and not n.startswith(HPARAMS_FILE_PREFIX)
    )
    return [os.path.join(log_dir, n) for n in names]


def last_logged_step(log_dir: str) -> tuple[int | None, list[str], list[str]]:
    """``(last step, read from, found)``: the last row of ``metrics.jsonl`` and
    ``progress.csv`` (the larger), else (when neither has a row) the TensorBoard files;
    ``read from`` names the files the step came from, ``found`` every file kind present
    (empty: no run in the folder)."""
    found: list[str] = []
    used: list[str] = []
    steps: list[int] = []
    for name, parse in ((_JSONL, _jsonl_step), (_CSV, _csv_step)):
        path = os.path.join(log_dir, name)
        if os.path.isfile(path):
            found.append(name)
            step = _last_row_step(path, parse)
            if step is not None:
                steps.append(step)
                used.append(name)
    tb = _tensorboard_files(log_dir) if os.path.isdir(log_dir) else []
    if tb:
        found.append(_TB)
        if not steps:  # the tails above are cheap; a TB scan only without them
            step = _tensorboard_last_step(tb)
            if step is not None:
                steps.append(step)
                used.append(_TB)
    return (max(steps) if steps else None), used, found


def _replace_filtered(path: str, keep: Callable[[bytes], bool], header: bool) -> None:
    """Write the rows of ``path`` that ``keep`` accepts (and the first line, when it is a
    ``header``) to a temporary file, ``fsync`` it, and rename it over ``path``."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    with replaced(path, prefix=".aoff-cut-", mode=mode) as out, open(path, "rb") as src:
        first = header
        for line in src:
            if not line.endswith(b"\n"):
                break  # a last line cut short
            if first or keep(line):
                out.write(line)
            first = False


def _needs_cut(path: str, parse: Callable[[bytes], int | None], step: int) -> bool:
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        if not end:
            return False
        f.seek(end - 1)
        if f.read(1) != b"\n":
            return True  # a torn last line
    last = _last_row_step(path, parse)
    return last is not None and last > step


def _csv_header_ok(path: str) -> bool:
    with open(path, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f), None)
    return header is not None and len(header) > 0 and header[0] == "step"


def cut_after(log_dir: str, step: int) -> None:
    """Drop every row after ``step`` from ``metrics.jsonl`` and ``progress.csv``."""

    def below(parse: Callable[[bytes], int | None]) -> Callable[[bytes], bool]:
        def keep(line: bytes) -> bool:
            s = parse(line)
            return s is not None and s <= step

        return keep

    jsonl = os.path.join(log_dir, _JSONL)
    if os.path.isfile(jsonl) and _needs_cut(jsonl, _jsonl_step, step):
        _replace_filtered(jsonl, below(_jsonl_step), header=False)
    path = os.path.join(log_dir, _CSV)
    if os.path.isfile(path) and _needs_cut(path, _csv_step, step):
        if not _csv_header_ok(path):
            raise ValueError(
                f"resume_step={step}: {path} does not start with a 'step' column; "
                "it was not written by aoff and is left as it is"
            )
        _replace_filtered(path, below(_csv_step), header=True)


def prepare_resume(options: Options) -> None:
    """Check ``options.resume_step`` against the run folder, then cut JSONL/CSV rows."""
    n = options.resume_step
    if n is None:
        return
    log_dir = options.log_dir
    if not log_dir:
        raise ValueError(f"resume_step={n} needs log_dir: the folder of the run to continue")
    from .._backends._wandb import RUN_ID_FILE, read_run_id

    last, used, found = last_logged_step(log_dir) if os.path.isdir(log_dir) else (None, [], [])
    has_wandb_id = os.path.isdir(log_dir) and read_run_id(log_dir) is not None
    if not found and not has_wandb_id:
        raise ValueError(
            f"resume_step={n}: there is no run to resume in {log_dir!r} (no {_JSONL}, "
            f"{_CSV}, TensorBoard event files or {RUN_ID_FILE})"
        )
    if found:
        if last is None:
            raise ValueError(
                f"resume_step={n}: the run in {log_dir!r} has not logged a step yet "
                f"(found {', '.join(found)}, with no rows)"
            )
        if n > last:
            raise ValueError(
                f"resume_step={n} is beyond the last step logged in {log_dir!r}: "
                f"{last} (read from {', '.join(used)})"
            )
        cut_after(log_dir, n)
