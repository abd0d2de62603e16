"""A read's freed memory kept for the next read (``aoff._runfolder._heapkept``).

Each read runs in a child process: glibc's thresholds are the whole process's (this one's
may have moved already), and the case is what a fresh process does.
"""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aoff._runfolder._heapkept import keep_freed_memory
from aoff._runfolder.tensorboard._tfrecord import masked_crc32c

#: a child reads a folder three times, then three times more, and prints its page faults
#: during the last three; ``default``: as if the thresholds had been moved already
CHILD = textwrap.dedent(
    """
    import resource, sys
    from aoff._runfolder import _heapkept
    if sys.argv[1] == "default":
        _heapkept._done[0] = True
    import aoff
    for _ in range(3):
        aoff.read_scalars(sys.argv[2])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        aoff.read_scalars(sys.argv[2])
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """
)


def _glibc() -> bool:
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        return False
    return version is not None and version.startswith("glibc")


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def _field(num: int, data: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def _record(data: bytes) -> bytes:
    head = struct.pack("<Q", len(data))
    return b"".join([head, struct.pack("<I", masked_crc32c(head)), data,
                     struct.pack("<I", masked_crc32c(data))])  # fmt: skip


def _scalar(step: int, tag: str, value: float) -> bytes:
    summary = _field(1, _field(1, tag.encode()) + b"\x15" + struct.pack("<f", value))
    event = b"\x09" + struct.pack("<d", 1e9 + step / 7) + b"\x10" + _varint(step)
    return _record(event + _field(5, summary))


def _ppo_like(folder: Path) -> None:
    """~0.8 MB of CleanRL PPO's pattern: episode returns at random steps between a block
    of nine losses (the sweep's path, whose temporaries are a few MB)."""
    rng = random.Random(1)
    out = [_record(b"\x09" + struct.pack("<d", 1e9) + _field(3, b"brain.Event:2"))]
    for step in range(0, 80_000, 4):
        if rng.random() < 0.3:
            out.append(_scalar(step, "charts/episodic_return", rng.random()))
            out.append(_scalar(step, "charts/episodic_length", rng.randrange(500)))
        if step % 512 == 0:
            out += [_scalar(step, f"losses/loss_{i}", rng.random()) for i in range(9)]
    (folder / "events.out.tfevents.1.host").write_bytes(b"".join(out))


def _faults(mode: str, folder: Path) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("GLIBC_TUNABLES", None)  # glibc's own thresholds, whatever the caller's
    got = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return int(got.stdout.split()[-1])


@pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc's")
def test_a_warm_read_reuses_the_last_reads_memory_without_faulting_it_in(
    tmp_path: Path,
) -> None:
    """With glibc's thresholds as a fresh process has them, each read of this file
    gives its buffer and temporaries back and faults their pages in again (~400 a read);
    once a read has moved them, the next reads fault none in."""
    _ppo_like(tmp_path)
    assert _faults("default", tmp_path) > 3 * 200
    assert _faults("keep", tmp_path) < 60


def test_it_is_done_once_a_process() -> None:
    keep_freed_memory()
    keep_freed_memory()  # (nothing to see but that it returns: the block is freed at once)
