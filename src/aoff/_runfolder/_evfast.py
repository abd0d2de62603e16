"""The bulk path for event records of a layout seen before (filled in by the next step).

Why a module of its own: the general decoder (``_evfolder``) handles any record; this
one decodes runs of records that repeat a known layout without a Python call per record.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FastPath"]


class FastPath:
    """Records of known layouts at ``buf[pos:]``, decoded in bulk."""

    def __init__(self, folder: Any) -> None:
        self.folder = folder

    def run(self, buf: bytes, pos: int, end: int) -> int:
        """Decode the records of known layouts from ``pos``; the position after them."""
        return pos

    def settle(self) -> None:
        """Hand what is held to the folder's series."""
