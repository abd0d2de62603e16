"""TensorBoard event files: their names, where a run keeps them, and the last step.

Why a module of its own: writers name new files (``events.out.tfevents.<time>.<host>...``),
``aoff ls/show``, resume and :func:`aoff.read_scalars` find them; the names are spelled
here once. TensorBoard reads a folder's files sorted by name and takes any file whose
name holds ``tfevents``; each sub-folder is a run of its own.
"""

from __future__ import annotations

import os
import re
import socket
import struct

from ._wire import varint

__all__ = [
    "EVENTS_PATTERN",
    "EVENTS_PREFIX",
    "HPARAMS_FILE_PREFIX",
    "HPARAMS_STAGING_PREFIX",
    "event_files",
    "event_folders",
    "events_name",
    "folder_id",
    "hparams_name",
    "hparams_seq",
    "is_events_name",
    "last_step",
    "name_time",
]

EVENTS_PREFIX = "events.out.tfevents."
EVENTS_PATTERN = EVENTS_PREFIX + "*"
#: aoff's HParams file (config and final metrics, ``_hparams.py``): no run
#: steps in it, so the readers of a run's series leave it out
HPARAMS_FILE_PREFIX = EVENTS_PREFIX + "0000000000.aoff-hparams."
#: an HParams file being written, before it is moved to its name
HPARAMS_STAGING_PREFIX = ".aoff-hparams-"
_MARK = "tfevents"
_TIME = re.compile(re.escape(EVENTS_PREFIX) + r"(\d+)\.")
_SEQ = re.compile(re.escape(HPARAMS_FILE_PREFIX) + r"(\d+)$")


def events_name(stamp: int, n: int, suffix: str = "") -> str:
    """A new event file's name, TensorFlow's: ``events.out.tfevents.<10-digit time>.<host>.
    <pid>.<n>`` and the writer's ``suffix`` (``<n>`` tells apart two files of one second)."""
    return f"{EVENTS_PREFIX}{stamp:010d}.{socket.gethostname()}.{os.getpid()}.{n}{suffix}"


def name_time(name: str) -> int | None:
    """The time in an event file's name (basename); ``None`` for aoff's HParams file or
    any other name."""
    m = _TIME.match(name)
    return int(m[1]) if m and not name.startswith(HPARAMS_FILE_PREFIX) else None


def hparams_name(seq: int) -> str:
    """The name of a folder's ``seq``-th HParams file (a newer one replaces the older)."""
    return f"{HPARAMS_FILE_PREFIX}{seq:06d}"


def hparams_seq(name: str) -> int | None:
    """The ``seq`` of an HParams file's name (basename); ``None`` for any other name."""
    m = _SEQ.match(name)
    return int(m[1]) if m else None


def is_events_name(name: str) -> bool:
    """Whether TensorBoard would read a file of this name (basename) as events."""
    return _MARK in name


def event_files(folder: str, *, hparams: bool = False) -> list[str]:
    """The folder's ``events.out.tfevents.*`` files, sorted by name (as TensorBoard reads
    them); aoff's HParams file only when ``hparams``."""
    # one listing and a prefix test: what ``glob`` of EVENTS_PATTERN finds, without its
    # pattern machinery (most of the cost of telling 20,000 folders apart as runs)
    try:
        names = os.listdir(folder or os.curdir)
    except OSError:  # not a folder, gone, or not readable: no files, as glob says
        return []
    files = sorted(os.path.join(folder, n) for n in names if n.startswith(EVENTS_PREFIX))
    if hparams:
        return files
    return [f for f in files if not os.path.basename(f).startswith(HPARAMS_FILE_PREFIX)]


def folder_id(path: str) -> tuple[int, int] | str:
    """What names the folder at ``path`` whichever way it is reached (through symlinks or
    not), for a walk that follows links to visit each real folder once: its device and
    inode, one ``stat`` (``os.path.realpath`` costs an ``lstat`` per part of the path and
    Python's string work, a third of finding 20,000 runs); the path itself when it
    cannot be stat'ed (gone since it was listed: nothing else will name it)."""
    try:
        st = os.stat(path)
    except OSError:
        return path
    return st.st_dev, st.st_ino


def event_folders(root: str) -> dict[str, list[str]]:
    """Every folder at or below ``root`` with event files: its path relative to ``root``
    (``""`` for ``root`` itself) -> its files sorted by name (any name holding
    ``tfevents``, as TensorBoard; aoff's HParams file left out). Symlinked folders are
    followed once each."""
    found: dict[str, list[str]] = {}
    seen: set[tuple[int, int] | str] = set()
    for here, dirs, files in os.walk(root, followlinks=True):
        real = folder_id(here)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        names = sorted(
            n for n in files if is_events_name(n) and not n.startswith(HPARAMS_FILE_PREFIX)
        )
        if names:
            rel = os.path.relpath(here, root)
            found["" if rel == "." else rel] = [os.path.join(here, n) for n in names]
    return found


def _event_step(payload: bytes) -> tuple[int, bool, bool]:
    """``(step, has a summary, is a SessionLog.START)`` of a serialised ``Event``.

    Reads the wire format directly (fields: wall_time = 1, step = 2, summary = 5,
    session_log = 7 with status = 1, START = 1): a full protobuf parse of every record
    of a long run would cost seconds at a resume.
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


def last_step(files: list[str]) -> int | None:
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
