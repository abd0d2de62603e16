"""Memory a read frees kept by the process for the next one: :func:`keep_freed_memory`.

Why a module of its own: a read allocates its file's bytes and NumPy temporaries of a few
MB (a file of MBs), and glibc's ``malloc`` gives memory of that size back to the kernel
when it is freed: a block over ``M_MMAP_THRESHOLD`` is a mapping of its own, unmapped at
its ``free``, and a free top of the heap over ``M_TRIM_THRESHOLD`` is trimmed. Both start
at 128 KiB and rise only when the process frees a mapped block bigger than the first (to
its size, and twice that, up to 32 and 64 MiB), so in a process that has not freed a big
array every read touched fresh pages again: each a page fault, ~4 us on the 2-core VM
the figures are from, 900-5,400 a warm read of `bench_read.py`'s files, a fifth to near
half of the read's CPU time (as system time; `docs/guides/read.md`).

Freeing, once, a mapped block of just under 32 MiB that nothing touched (no page of it is
ever faulted in) raises both thresholds to glibc's most, as in any process that has
freed an array that big: a read's memory then comes from the heap and stays there for
the next read. The setting is the process's, as the collector's pause while reading
(``reading/_nocollect``): freed memory up to 64 MiB stays with the process instead of
going back to the kernel, and blocks under 32 MiB come from the heap, not a mapping of
their own (glibc's own behaviour once a process has freed such a block). Not
``mallopt``, as the agent's process has it (``_agent/_heap``): a read runs in the
caller's process, whose thresholds are left glibc's to move (``mallopt`` would fix them
for good). A caller that set them itself (``mallopt``, ``GLIBC_TUNABLES``,
``MALLOC_*_`` variables) keeps them: glibc moves them only while they are its own.
Another ``malloc`` sees one allocation and a free (~0.07 ms, one page fault).
"""

from __future__ import annotations

import numpy as np

__all__ = ["keep_freed_memory"]

#: just under glibc's largest dynamic mmap threshold (32 MiB on 64-bit), the block's
#: header and page rounding included: a bigger block would not move it
_BLOCK = (32 << 20) - (8 << 10)
_done = [False]


def keep_freed_memory() -> None:
    """Free a mapped block of ~32 MiB, untouched, once a process (see the module)."""
    if not _done[0]:
        _done[0] = True
        # (``np.empty`` writes none of it: no page is faulted in; it is freed, unmapped,
        # as soon as made)
        np.empty(_BLOCK, np.uint8)
