"""TFRecord framing's checksum, the container format of TensorBoard event files.

Each record is ``u64 length (LE) | u32 masked CRC32C(length bytes) | data |
u32 masked CRC32C(data)``. Why a module of its own: the writer (``_backends/_tfrecord``)
and every reader of the run folder check the same masked checksum; this is its one
definition.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Callable

__all__ = ["MASK_DELTA", "U32", "crc32c", "masked_crc32c", "unmask"]


def _crc32c() -> Callable[[bytes | bytearray | memoryview], int]:
    """The ``crc32c`` package's C function. Its extension module is loaded by itself:
    the package's ``__init__`` asks ``importlib.metadata`` for its version and imports
    its command line (argparse), 20-60 ms of every first read of a run; the package is
    imported as usual where that fails."""
    try:
        spec = importlib.util.find_spec("crc32c")
        assert spec is not None and spec.submodule_search_locations
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = f"{spec.submodule_search_locations[0]}/_crc32c{suffix}"
            ext = importlib.util.spec_from_file_location("crc32c._crc32c", path)
            if ext is None or ext.loader is None:
                continue
            try:
                module = importlib.util.module_from_spec(ext)
            except ImportError:
                continue
            ext.loader.exec_module(module)
            fn: Callable[[bytes | bytearray | memoryview], int] = module.crc32c
            return fn
    except (ImportError, AssertionError, OSError):
        pass
    from crc32c import crc32c as fn_pkg

    return fn_pkg


crc32c = _crc32c()

MASK_DELTA = 0xA282EAD8
U32 = 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC32C of ``data``, rotated right by 15 bits and offset, as TFRecord stores it."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + MASK_DELTA) & U32


def unmask(masked: int) -> int:
    """The plain CRC32C a stored (masked) checksum stands for."""
    c = (masked - MASK_DELTA) & U32
    return ((c << 15) | (c >> 17)) & U32
