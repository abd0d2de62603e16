"""``aoff-summary.json``: the run summary's name, its format's mark, and when it may
stand for the run.

Why a module of its own: the summary backend (``_runfolder/summary/_writer.py``) writes it,
``aoff ls/show`` read it first (each tag's first, last, range and a short curve, so a
run is shown without reading its data files); the name, the format's mark and the rule
of when it stands for the run (finished, or refreshed by a live run; not left by a
killed one, not when a data file was cut since) are here once. It is read without
numpy: ``ls`` stays light. It holds no full series, so :func:`aoff.read_scalars` reads
the data files instead.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = [
    "FORMAT",
    "STAGING_PREFIX",
    "SUMMARY_GLOB",
    "SUMMARY_NAME",
    "VERSION",
    "load_summary",
    "summary_name",
]

SUMMARY_NAME = "aoff-summary.json"
#: every session's summary file in a folder: one per session or writer that wrote there
SUMMARY_GLOB = "aoff-summary*.json"
#: a summary being written, before it is moved to its name
STAGING_PREFIX = ".aoff-summary-"
FORMAT = "aoff.run-summary"
VERSION = 1


def summary_name(n: int) -> str:
    """The ``n``-th session's summary in a folder: ``aoff-summary.json``,
    ``aoff-summary-2.json``, …"""
    return SUMMARY_NAME if n == 1 else f"aoff-summary-{n}.json"


def load_summary(
    run_dir: str, *, live: bool, name: str = SUMMARY_NAME, check_files: bool = True
) -> dict[str, Any] | None:
    """The summary's content when it may stand for the run: finished (or interrupted),
    or still being refreshed by a live run; ``None`` when absent, unreadable or left by
    a run that was killed (its files go further than it). ``name``: another session's
    summary in the folder; ``check_files=False``: also when a data file was cut since
    (for how the run ended, which the cut does not change)."""
    path = os.path.join(run_dir, name)
    try:
        with open(path, "rb") as f:
            content = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        return None
    if content.get("version") != VERSION or not isinstance(content.get("tags"), dict):
        return None
    if content.get("state") == "running" and not live:
        return None
    files = content.get("files")
    # a data file cut since: read the files, say what is lost
    if check_files and isinstance(files, dict):
        for data_file, size in files.items():
            try:
                if os.path.getsize(os.path.join(run_dir, str(data_file))) < int(size):
                    return None
            except (OSError, TypeError, ValueError):
                return None
    return content
