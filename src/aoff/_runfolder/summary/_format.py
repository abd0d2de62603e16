"""The run summary as an entry of the format table: it makes a folder a run, and holds
no points (its curves are bucket means, for ``aoff ls/show``, which read it themselves as
their shortcut), no rows to cut (the run rewrites it whole).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Collection
from dataclasses import dataclass

from .._format import Points
from ._file import SUMMARY_GLOB, SUMMARY_NAME

__all__ = ["SUMMARY", "SummaryFormat"]


@dataclass(frozen=True)
class SummaryFormat:
    """``aoff-summary*.json``: one a session or writer that wrote in the folder."""

    name: str = "summary"
    label: str = SUMMARY_NAME
    exact: bool = False
    holds_points: bool = False
    last_step_fallback: bool = False

    def files(self, folder: str) -> list[str]:
        return sorted(glob.glob(os.path.join(glob.escape(folder), SUMMARY_GLOB)))

    def points(self, path: str, tags: Collection[str] | None) -> Points | None:
        return None

    def last_step(self, folder: str) -> int | None:
        return None

    def cut_after(self, folder: str, step: int) -> None:
        return

    def writers(self, folder: str) -> int:
        return len(self.files(folder))

    def bytes_to_read(self, path: str) -> int:
        return 0


SUMMARY = SummaryFormat()
