"""Names for the training process's shared-memory blocks, and the sweep of stale ones.

Why: a block outlives a process killed with its whole group (a batch system's cgroup
kill, the OOM killer takes the training process and its resource tracker together). Under
Python's generic ``psm_*`` names nobody could tell such a leftover from another program's
block, and ``/dev/shm`` (memory, not disk) filled up run after run. So every block is
named ``aoff_<ns>_<pid>_<start>_<n>`` (hex): the training process's pid namespace, pid
and start time (so that a reused pid is not mistaken for the run), then a counter. A
later run, and :func:`sweep_stale` where a user asks, unlink the blocks whose process is
gone or is another process now. Only blocks of this pid namespace are judged: containers
that share one ``/dev/shm`` (``--ipc=host``) see other pids, and never sweep each other's.

The start time is the kernel's (``/proc/<pid>/stat``, clock ticks since boot): it names
one process for as long as the machine is up. Where there is no ``/proc`` (macOS), the
names carry 0 and nothing is swept: no ``/dev/shm`` to list there either.
"""

from __future__ import annotations

import itertools
import os

__all__ = [
    "PREFIX",
    "SHM_DIR",
    "block_name",
    "pid_namespace",
    "shm_free_bytes",
    "start_time",
    "sweep_stale",
]

PREFIX = "aoff_"
SHM_DIR = "/dev/shm"
_counter = itertools.count(1)


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None if it is gone or
    this system has no ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count after its ")"
    fields = stat[stat.rindex(b")") + 2 :].split()
    return int(fields[19])  # field 22 of the whole line


def pid_namespace() -> int:
    """This process's pid namespace (its inode), or 0 where there is no ``/proc``."""
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
        return int(link[link.index("[") + 1 : -1])
    except (OSError, ValueError):
        return 0


_mine: tuple[int, str] | None = None


def block_name() -> str:
    """A new block's name: this process's pid namespace, pid and start time, and a
    counter (a forked child has its own pid, so its names never collide with its
    parent's)."""
    global _mine
    pid = os.getpid()
    if _mine is None or _mine[0] != pid:
        _mine = (pid, f"{PREFIX}{pid_namespace():x}_{pid:x}_{start_time(pid) or 0:x}_")
    return f"{_mine[1]}{next(_counter):x}"


def _owner(name: str) -> tuple[int, int, int] | None:
    """``(namespace, pid, start time)`` from one of aoff's block names, else None."""
    parts = name[len(PREFIX) :].split("_")
    if not name.startswith(PREFIX) or len(parts) != 4:
        return None
    try:
        ns, pid, started = (int(p, 16) for p in parts[:3])
    except ValueError:
        return None
    return ns, pid, started


def sweep_stale(directory: str = SHM_DIR) -> list[str]:
    """Unlink aoff's blocks whose training process is gone (no such pid, or a pid now
    another process's: its start time differs); the names unlinked. A block of a live
    run, this one's included, is kept; so is one whose start time is unknown (0)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    gone: list[str] = []
    here = pid_namespace()
    for name in names:
        owner = _owner(name)
        if owner is None or 0 in (here, owner[2]) or owner[0] != here:
            continue
        _, pid, started = owner
        if start_time(pid) == started:
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:  # another run swept it first, or not ours to remove
            continue
        gone.append(name)
    return gone


def shm_free_bytes(directory: str = SHM_DIR) -> int | None:
    """Bytes free for unprivileged use in the shared-memory filesystem (``statvfs``), or
    None where it cannot be asked."""
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize
