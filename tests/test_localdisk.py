"""``_backends/_localdisk.py``: a path's filesystem, read from a ``mountinfo`` table."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoff._backends._localdisk import on_local_disk

#: a machine's table: the root on ext4, /data on NFS, a Lustre scratch inside it, /tmp
#: in memory, a mount point with a space, and a FUSE mount hidden by a later ext4 one
MOUNTINFO = "\n".join(
    [
        "22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda rw",
        "30 22 0:40 / /data rw,relatime shared:9 - nfs4 srv:/export rw,vers=4.2",
        "31 30 0:41 / /data/scratch rw shared:10 - lustre 10.0.0.1@tcp:/fs rw",
        "32 22 0:26 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw",
        r"33 22 252:2 / /mnt/my\040runs rw shared:11 - xfs /dev/vdb rw",
        "34 22 0:50 / /fast rw shared:12 - fuse.sshfs host:/ rw",
        "35 22 252:3 / /fast rw shared:13 - btrfs /dev/vdc rw",
        "36 22 0:51 / /odd rw - someotherfs none rw",
    ]
)


@pytest.mark.parametrize(
    ("path", "local"),
    [
        ("/home/me/runs/metrics.jsonl", True),  # the root's ext4
        ("/data/runs/events.out", False),  # NFS
        ("/data", False),  # the mount point itself
        ("/database/runs", True),  # a name that starts like a mount point is not inside it
        ("/data/scratch/run1", False),  # Lustre inside NFS: the longest prefix
        ("/tmp/run/metrics.jsonl", True),  # tmpfs
        ("/mnt/my runs/a/metrics.csv", True),  # the kernel's \040 is a space
        ("/fast/run", True),  # the later mount at one point hides the earlier
        ("/odd/run", False),  # a type not known to be local: the worker thread
    ],
)
def test_a_path_is_local_by_the_longest_mount_point_that_holds_it(path: str, local: bool) -> None:
    assert on_local_disk(path, MOUNTINFO) is local


def test_no_mount_table_reads_as_not_local() -> None:
    assert on_local_disk("/anything", "") is False


def test_this_machines_temporary_folder_is_read_from_its_own_table(tmp_path: Path) -> None:
    """The default table is this process's: a folder pytest made is under some mount, and
    the answer is the one the table's matching line gives."""
    table = Path("/proc/self/mountinfo")
    if not table.exists():
        pytest.skip("no /proc/self/mountinfo here")
    assert on_local_disk(str(tmp_path)) is on_local_disk(str(tmp_path), table.read_text())
