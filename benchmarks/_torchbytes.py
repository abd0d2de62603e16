"""Whether an event file a benchmark built is what torch's ``SummaryWriter`` writes.

Why a module of its own: the read and scale benchmarks build their event files with
aoff's encoder (fast, any size) and prove once, on a small file, that torch writes the
same records for the same calls; the comparison is this module's, once."""

from __future__ import annotations


def records(data: bytes) -> list[bytes]:
    """An event file's TFRecords, each whole (length, its checksum, data, checksum)."""
    out, pos = [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 8], "little")
        out.append(data[pos : pos + 16 + n])
        pos += 16 + n
    return out


def check_same_records(ours: bytes, theirs: bytes, count: int) -> None:
    """Every record after the first (the file version, stamped with the writer's start
    time) equal, and ``count`` of them; else the benchmark stops with why."""
    a, b = records(ours), records(theirs)
    if a[1:] != b[1:] or len(a) != count + 1:
        raise SystemExit("the built file is not what torch's SummaryWriter writes")
    print(f"built file == torch SummaryWriter's bytes ({len(a) - 1} records)")
