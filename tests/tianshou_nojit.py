"""Import Tianshou with Numba's JIT off (import this before anything imports Tianshou).

Tianshou compiles its replay-buffer and n-step code with Numba on first use: 30-60 s on a
busy 2-core machine, for the few hundred steps a test trains. Functions decorated while
``DISABLE_JIT`` is set stay plain Python; the switch is put back at once, so only
Tianshou's own functions are affected. Skips the importing test module without Tianshou.
"""

from __future__ import annotations

import pytest

numba = pytest.importorskip("numba")

_was = numba.config.DISABLE_JIT
numba.config.DISABLE_JIT = True
try:
    pytest.importorskip("tianshou")
    import tianshou.algorithm.algorithm_base
    import tianshou.data  # noqa: F401 - the buffers' and segment tree's functions
finally:
    numba.config.DISABLE_JIT = _was
