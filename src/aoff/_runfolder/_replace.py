"""Replacing a small file whole: a reader sees the old file or the new one, never half.

``config.json``, the W&B run id, the HParams event file and a resumed run's cut
JSONL/CSV are all written the same way: a temporary file in the same folder, ``fsync``,
the file's mode set, ``os.replace`` over the target; on any failure the temporary file
is removed and the error raised, the old file untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["replaced"]


@contextlib.contextmanager
def replaced(
    path: str, *, prefix: str, suffix: str = ".tmp", mode: int = 0o644
) -> Iterator[BinaryIO]:
    """Yield a binary file whose content becomes ``path`` when the block ends well
    (``mode``: the new file's permissions, not ``mkstemp``'s 0600)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
    try:
        with open(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
