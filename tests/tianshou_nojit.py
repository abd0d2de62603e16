"""Tianshou with Numba's JIT off (import this before the test module imports Tianshou).

Tianshou compiles its replay-buffer and n-step code with Numba on first use: 30-60 s on a
busy 2-core machine, for the few hundred steps a test trains. Imported here with
``DISABLE_JIT`` set (the switch is put back at once), its functions stay plain Python;
if another test already imported Tianshou in this process with the JIT on, each of its
compiled functions is replaced by the Python function it wraps, in every Tianshou module
(where its callers look it up). Only Tianshou's own functions are affected. Skips the
importing test module without Tianshou.
"""

from __future__ import annotations

import sys

import pytest

numba = pytest.importorskip("numba")

_was = numba.config.DISABLE_JIT
numba.config.DISABLE_JIT = True
try:
    pytest.importorskip("tianshou")
    import tianshou.algorithm.algorithm_base  # decorated here, with the JIT off
    import tianshou.data  # noqa: F401 - the buffers' and segment tree's functions
finally:
    numba.config.DISABLE_JIT = _was

from numba.core.dispatcher import Dispatcher  # noqa: E402 - numba is optional above

for _name, _module in list(sys.modules.items()):
    if _module is None or not (_name == "tianshou" or _name.startswith("tianshou.")):
        continue
    for _attr, _value in list(vars(_module).items()):
        if isinstance(_value, Dispatcher):
            setattr(_module, _attr, _value.py_func)
