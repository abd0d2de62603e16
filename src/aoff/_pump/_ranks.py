"""Which distributed rank this process is, and what a logger does there.

Under ``torchrun`` (or any launcher that sets ``RANK``) every rank runs the same script
and so builds the same logger. Left alone, each would draw its own dashboard on the
shared terminal and write its own event files into the same folder. What torchtitan,
DeepSpeed and Lightning settled on is aoff's default too: only global rank 0 logs
(``ranks="zero"``); every other rank gets an inert logger whose calls are near-free
no-ops (one notice line says so). ``ranks="each"`` gives every rank its own run folder,
``<log_dir>/rank<N>``, and its own dashboard.

The rank comes from ``torch.distributed`` when it is initialised (never imported here:
only looked up if the user's code already imported it), else from ``RANK``.
"""

from __future__ import annotations

import os
import sys
from typing import Literal

RankMode = Literal["zero", "each"]
RANK_MODES: tuple[RankMode, ...] = ("zero", "each")


def this_rank() -> int | None:
    """The global rank of this process, or None when it is not part of a job."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # a half-initialised process group: fall back to the env
            pass
    raw = os.environ.get("RANK", "").strip()
    if not raw:
        return None
    try:
        rank = int(raw)
    except ValueError:
        raise ValueError(
            f"aoff: the RANK environment variable is not an integer: {raw!r}"
        ) from None
    if rank < 0:
        raise ValueError(f"aoff: the RANK environment variable is negative: {rank}")
    return rank


def world_size() -> int | None:
    raw = os.environ.get("WORLD_SIZE", "").strip()
    return int(raw) if raw.isdigit() else None


def muted_line(rank: int) -> str:
    size = world_size()
    of = f" of {size}" if size else ""
    return (
        f"aoff: rank {rank}{of}: this rank does not log (only rank 0 draws and writes); "
        'pass ranks="each" to give every rank its own run folder'
    )


def rank_dir(log_dir: str, rank: int) -> str:
    """``ranks="each"``: this rank's own run folder inside ``log_dir``."""
    return os.path.join(log_dir, f"rank{rank}")
