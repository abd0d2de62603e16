"""The fork hook: every face alive in this process, told when a child is forked.

Why a module of its own: ``os.register_at_fork`` is process-wide and registered once, at
import; the faces only join the set (:func:`track`). A child forked from a process with a
live logger (``fork`` start method, ``AsyncVectorEnv``, ``DataLoader`` workers) has its
objects but none of its threads: each face then turns itself into a forked copy
(``Face._forked_in_child``: its calls go into the parent's run through a ``RemoteLogger``
named ``fork-<pid>`` with a ``log_dir``, else they are counted as dropped; its stops
return at once, so it never hangs).
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol

__all__ = ["track"]


class _Forkable(Protocol):
    def _forked_in_child(self) -> None: ...


_live: weakref.WeakSet[_Forkable] = weakref.WeakSet()


def track(face: _Forkable) -> None:
    """``face`` is told (``_forked_in_child``) in every child forked from now on."""
    _live.add(face)


def _after_fork_in_child() -> None:
    for face in list(_live):
        face._forked_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
