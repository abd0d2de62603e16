"""The agent's C heap: freed memory kept for the next batch, not given back and faulted in.

Why a module of its own: it is the one place the agent tunes its process's allocator,
and it changes only for a reason of the C library's (glibc's ``malloc``), not of aoff's.

Every batch the agent's writer threads make and drop buffers of a megabyte or more (a
JSONL batch encoded by msgspec and joined, TensorBoard's framed records), and the pump's
thread NumPy tables of a slice. glibc's defaults give such memory back to the OS as soon
as the free part at the top of a thread's heap passes its trim threshold (128 KiB at
first, twice the largest ``mmap``-ed block freed so far after that, ``madvise``
``MADV_DONTNEED``) and serve a block above its ``mmap`` threshold from fresh pages: the
next batch touches the same sizes again, and each 4 KiB page of them is a page fault
and a zeroed page, system CPU the agent pays for nothing. Flat out, that was ~0.8 faults
an iteration; fixing it saved 2.7-3.7 µs of system CPU an iteration, of the agent's 30-40
that day (``docs/reference/performance.md``, "The agent's heap").

:func:`keep_freed_memory` fixes both thresholds (``mallopt``) in the agent process only,
never in the training process: blocks up to :data:`MMAP_THRESHOLD` come from the heaps,
and a heap keeps up to :data:`TRIM_THRESHOLD` free at its top. Thresholds the user set
(``GLIBC_TUNABLES``' ``glibc.malloc.mmap_threshold`` or ``trim_threshold``, or glibc's
``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``, inherited from the training
process) are theirs and left as they are. The agent's peak memory is
what it was (the same blocks are live at once); what changes is that after a burst each
heap may stay up to :data:`TRIM_THRESHOLD` above its live blocks instead of falling
back. Elsewhere (macOS, musl, a C library without ``mallopt``) it does nothing.
"""

from __future__ import annotations

import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

#: ``mallopt``'s parameter numbers (glibc's ``malloc.h``)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: the tunables that set the same thresholds: where the user set one, theirs stand
_USERS_OWN = ("glibc.malloc.mmap_threshold=", "glibc.malloc.trim_threshold=")
#: glibc's older environment variables for them, read as well
_USERS_OWN_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
#: blocks up to this size come from the heaps: a writer's batch of 1,024 records (~1.5
#: MiB of JSONL at 32 metrics, its msgspec pieces, TensorBoard's framing), a backlog's
#: frame. Larger ones are ``mmap``-ed as before (glibc's own dynamic threshold stops at
#: 32 MiB); 16 MiB and 32 MiB measured no fewer faults than these
MMAP_THRESHOLD = 4 << 20
#: free memory a heap keeps at its top before giving it back (glibc's dynamic rule: twice
#: the ``mmap`` threshold): what a thread's heap may hold above its live blocks after a
#: burst, at most
TRIM_THRESHOLD = 8 << 20


def _glibc() -> bool:
    """Whether this process runs on glibc (``os.confstr`` reads it without a file)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):  # a name this system does not know
        return False
    return version is not None and version.startswith("glibc")


def keep_freed_memory() -> bool:
    """Set the agent's ``malloc`` thresholds (see the module docstring); whether they
    were set. Any failure leaves the defaults: only speed depends on it."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if any(name in tunables for name in _USERS_OWN) or any(
        var in os.environ for var in _USERS_OWN_VARS
    ):
        return False
    if not _glibc():
        return False
    try:
        import ctypes  # only here: the agent's one call into the C library

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):  # a Python built without ctypes too
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt answers 1 when it took the value, 0 when it refused it
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
