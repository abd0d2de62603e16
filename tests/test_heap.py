"""The agent's C heap (``aoff._agent._heap``): freed buffers kept for the next batch.

Each case runs in a child process: the thresholds are the whole process's, and this
one's allocator is left as it was.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from aoff._agent import _heap

#: a child makes and drops four 1 MiB buffers at once, 30 times (as a writer thread's
#: batches do), and prints whether the thresholds were set and its page faults meanwhile
CHILD = textwrap.dedent(
    """
    import resource, sys
    from aoff._agent._heap import keep_freed_memory
    kept = keep_freed_memory() if sys.argv[1] == "keep" else False
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [b"\\x01" * (1 << 20) for _ in range(4)]  # the heap grown once
    del blocks
    before = faults()
    for _ in range(30):
        blocks = [b"\\x01" * (1 << 20) for _ in range(4)]
        del blocks
    print(kept, faults() - before)
    """
)


def _without_thresholds() -> dict[str, str]:
    """This environment less glibc's older threshold variables (a caller's own)."""
    return {k: v for k, v in os.environ.items() if k not in _heap._USERS_OWN_VARS}


def _run(mode: str, tunables: str = "", **env: str) -> tuple[bool, int]:
    """The child's answer; ``tunables``: its ``GLIBC_TUNABLES`` (none: glibc's defaults,
    whatever the caller's), ``env``: more of its environment."""
    got = subprocess.run(
        [sys.executable, "-c", CHILD, mode],
        capture_output=True,
        text=True,
        check=True,
        env={**_without_thresholds(), "GLIBC_TUNABLES": tunables, **env},
    )
    kept, faults = got.stdout.split()
    return kept == "True", int(faults)


glibc_only = pytest.mark.skipif(not _heap._glibc(), reason="mallopt is glibc's")


@glibc_only
def test_the_agents_freed_buffers_are_reused_without_faulting_their_pages_in_again() -> None:
    """With glibc's defaults four freed megabytes pass the trim threshold and go back to
    the OS, and the next batch faults each of their pages in again (~1,000 a round);
    with the agent's thresholds the heap keeps them."""
    kept, faults = _run("keep")
    assert kept
    _, default_faults = _run("default")
    assert default_faults > 30 * 256  # the pages of at least one buffer, every round
    assert faults < 300  # the first round's at most, and the interpreter's own


def test_without_glibc_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS, musl: ``mallopt`` is not glibc's (or not there); the defaults stay."""
    monkeypatch.setattr(sys, "platform", "darwin")  # the one _heap reads
    assert not _heap.keep_freed_memory()


@glibc_only
def test_thresholds_the_user_set_are_left_as_they_are() -> None:
    """``GLIBC_TUNABLES`` naming either threshold (inherited from the training process):
    the user's choice stands; another tunable's name that ends alike does not count."""
    assert not _run("keep", "glibc.malloc.trim_threshold=1048576")[0]
    assert not _run("keep", "glibc.malloc.tcache_count=7:glibc.malloc.mmap_threshold=65536")[0]
    assert _run("keep", "glibc.cpu.x86_rep_movsb_threshold=4096")[0]
    assert not _run("keep", MALLOC_TRIM_THRESHOLD_="1048576")[0]


def test_a_python_without_ctypes_keeps_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ctypes`` is optional in a CPython build: the agent starts all the same."""
    monkeypatch.setattr(_heap, "_glibc", lambda: True)
    monkeypatch.setitem(sys.modules, "ctypes", None)  # import ctypes raises ImportError
    assert not _heap.keep_freed_memory()
