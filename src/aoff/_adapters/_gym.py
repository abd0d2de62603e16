"""Gymnasium's ``RecordEpisodeStatistics`` infos into a run's episodes (``aoff.gymnasium``).

Why a reader of ``infos`` rather than a wrapper: the statistics are already in the
``infos`` every training loop holds, in one of a few layouts, and one call in the loop
is the smallest change. Nothing here imports Gymnasium (the layouts are plain dicts and
arrays), so this works with any version that writes them:

* a single env (``gymnasium.wrappers.RecordEpisodeStatistics``): on the step an episode
  ends, ``infos["episode"] = {"r": return, "l": length, "t": seconds}``;
* a vector env, Gymnasium 1.x (``gymnasium.wrappers.vector.RecordEpisodeStatistics``,
  or the single-env wrapper inside each sub-env of ``SyncVectorEnv``/``AsyncVectorEnv``):
  ``infos["episode"] = {"r": array, "l": array, "t": array}`` with the boolean mask
  ``infos["_episode"]`` saying which envs finished (the other slots hold 0);
* a vector env, Gymnasium 0.29: ``infos["final_info"]``, an array of the finished envs'
  own infos (``None`` elsewhere; mask ``infos["_final_info"]``), each with its
  ``"episode"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, cast

import numpy as np

__all__ = ["episodes_in", "log_episodes"]

R_co = TypeVar("R_co", covariant=True)


class _Logs(Protocol[R_co]):
    def log_episodes(self, returns: Any, lengths: Any = ...) -> R_co: ...


def _flat(values: object) -> np.ndarray[Any, Any]:
    return np.asarray(values, dtype=np.float64).reshape(-1)


def episodes_in(infos: Mapping[str, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``(returns, lengths)`` of the episodes that ended on this step (empty: none)."""
    if not isinstance(infos, Mapping):
        raise TypeError(
            f"log_episodes: infos must be the dict env.step() returned, got {type(infos).__name__}"
        )
    ep = infos.get("episode")
    if isinstance(ep, Mapping) and "r" in ep:
        r = _flat(ep["r"])
        length = _flat(ep["l"]) if "l" in ep else np.zeros_like(r)
        mask = infos.get("_episode")
        if mask is None:
            return r, length
        keep = np.asarray(mask, dtype=bool).reshape(-1)
        return r[keep], length[keep]
    final = infos.get("final_info")
    if final is not None:  # Gymnasium 0.29's vector layout
        mask = infos.get("_final_info")
        keep = np.ones(len(final), bool) if mask is None else np.asarray(mask, bool)
        rs: list[float] = []
        ls: list[float] = []
        for ok, info in zip(keep.reshape(-1), final, strict=False):
            sub = info.get("episode") if ok and isinstance(info, Mapping) else None
            if isinstance(sub, Mapping) and "r" in sub:
                rs += _flat(sub["r"]).tolist()
                ls += _flat(sub.get("l", 0.0)).tolist()
        return np.asarray(rs), np.asarray(ls)
    empty = np.zeros(0)
    return empty, empty


def log_episodes(log: _Logs[R_co], infos: Mapping[str, Any]) -> R_co:
    """Log the episodes that ended on this step (``log.log_episodes(returns, lengths)``).

    ``log`` is an ``OffPolicyLogger``, an ``AsyncOffPolicyLogger`` or a ``RemoteLogger``
    (a collector in another process). Call it after every ``env.step``: a step on which
    no episode ended records nothing. Returns what ``log.log_episodes`` returns (an
    awaitable on the async face, like every logging call: awaiting it honours
    ``overflow="block"``); on a step with no episode, the same kind of value.
    """
    returns, lengths = episodes_in(infos)
    if not returns.size:
        # what a logging call of this face returns (None; the async face: a done awaitable)
        return cast(R_co, getattr(log, "_closed_result", None))
    return log.log_episodes(returns, lengths)
