"""Whether a file is on a local disk, where a write returns in microseconds.

Why it matters: the agent writes a local file's batches on its own loop's thread, where
the batch it just folded is still in the core's cache (``_lockedfile.py``), but a
network filesystem's write can block for seconds, and on the loop that would hold every
backend back; there, writes stay in a worker thread. So the answer is "local" only for
the filesystem types named here; any other type, a path whose mount is not found, or a
system without ``/proc/self/mountinfo`` reads as not local (the worker thread: today's
way, never wrong, only slower).
"""

from __future__ import annotations

import os

__all__ = ["LOCAL_TYPES", "on_local_disk"]

#: block devices and memory; NFS, CIFS, Lustre, GPFS, BeeGFS, Ceph, FUSE, 9p, ... are not
LOCAL_TYPES = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "jfs", "tmpfs", "ramfs", "overlay"}
)

_MOUNTINFO = "/proc/self/mountinfo"


def _unescape(field: str) -> str:
    """A mount point as the kernel writes it: space, tab, newline and backslash octal."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _mounts(text: str) -> list[tuple[str, str]]:
    """``(mount point, filesystem type)`` of each line of a ``mountinfo`` text."""
    out = []
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)  # after the optional fields; the mount point is 4th
        if len(fields) > dash + 1:
            out.append((_unescape(fields[4]), fields[dash + 1]))
    return out


def on_local_disk(path: str, mountinfo: str | None = None) -> bool:
    """Whether ``path`` (a file or folder; it need not exist yet) is on a filesystem of
    :data:`LOCAL_TYPES`, by the mount whose point is the longest prefix of its real
    path (the last such line: a later mount hides an earlier one at the same point).
    ``mountinfo``: the table's text (default: this process's)."""
    if mountinfo is None:
        try:
            with open(_MOUNTINFO, encoding="utf-8", errors="surrogateescape") as f:
                mountinfo = f.read()
        except OSError:
            return False
    real = os.path.realpath(path)
    best, kind = -1, ""
    for point, fstype in _mounts(mountinfo):
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= best:
            best, kind = len(point), fstype
    return kind in LOCAL_TYPES
