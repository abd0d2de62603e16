"""aoff's own counters as a plain dict, for the user's checkpoint (``state_dict``).

A resumed run (``resume_step=N``) starts a fresh :class:`State`: without these, its
ETA would count from the restart, the reward sparkline and the best mean reward would
forget the first session, and the dashboard's dropped total would start again at 0.
``log.state_dict()`` returns them (after a flush, so they cover everything logged so
far); ``log.load_state_dict(d)`` records them as one event, folded in order with the
rest. The dict holds only JSON-safe built-ins, so it pickles into a ``torch.save``
checkpoint and serialises to JSON alike.

What each key restores (documented in docs/guides/resume.md):

``elapsed_seconds``
    the run's elapsed time when the dict was taken (from ``start_training_timer()``,
    else from ``start()``); added to this session's for the header's clock and the ETA,
    whose rate is then iterations / total training time, downtime excluded.
``reward_history``, ``reward_last``, ``reward_best``
    the dashboard's reward sparkline and mean, and the HParams final metrics.
``dropped_events``
    events dropped so far in earlier sessions: the dashboard shows the run's total
    (a session's :class:`FinishReport` still counts its own only).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._state import State

VERSION = 1
_KEYS = (
    "version",
    "elapsed_seconds",
    "reward_history",
    "reward_last",
    "reward_best",
    "dropped_events",
)


def to_state_dict(state: State, now: float, dropped: int = 0) -> dict[str, Any]:
    """The counters of ``state`` as of wall time ``now`` (call where the fold runs);
    ``dropped``: this session's dropped events (the pump's count)."""
    origin = state.training_start_time
    if origin is None:
        origin = state.start_time
    elapsed = state.elapsed_before + (max(now - origin, 0.0) if origin is not None else 0.0)
    return {
        "version": VERSION,
        "elapsed_seconds": elapsed,
        "reward_history": list(state.reward_history),
        "reward_last": state.hparams.reward_last,
        "reward_best": state.hparams.reward_best,
        "dropped_events": state.dropped_before + dropped,  # the run's total
    }


def no_state_line(finish_timeout: float) -> str:
    return (
        "aoff: state_dict(): the agent process did not answer within finish_timeout "
        f"({finish_timeout:g}s) plus grace; its counters are unknown"
    )


def _number(d: Mapping[str, Any], key: str, *, optional: bool = False) -> float | None:
    v = d[key]
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError(f"load_state_dict: {key!r} must be a finite number, got {v!r}")
    return float(v)


def checked_state_dict(d: object) -> dict[str, Any]:
    """Validate a dict from :func:`to_state_dict` (in the caller, so a bad one is a
    clear error at the call, not a problem reported later by the pump)."""
    if not isinstance(d, Mapping):
        got = type(d).__name__
        raise TypeError(f"load_state_dict: expected a dict from state_dict(), got {got}")
    missing = [k for k in _KEYS if k not in d]
    if missing:
        raise ValueError(f"load_state_dict: not a dict from aoff's state_dict(): no {missing}")
    if d["version"] != VERSION:
        raise ValueError(
            f"load_state_dict: version {d['version']!r} is not one this aoff reads ({VERSION})"
        )
    elapsed = _number(d, "elapsed_seconds")
    assert elapsed is not None
    if elapsed < 0:
        raise ValueError(f"load_state_dict: 'elapsed_seconds' must be >= 0, got {elapsed}")
    history = d["reward_history"]
    if not isinstance(history, list | tuple):
        raise ValueError(f"load_state_dict: 'reward_history' must be a list, got {history!r}")
    rewards = [_number({"reward_history": r}, "reward_history") for r in history]
    dropped = d["dropped_events"]
    if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 0:
        msg = f"load_state_dict: 'dropped_events' must be an int >= 0, got {dropped!r}"
        raise ValueError(msg)
    return {
        "version": VERSION,
        "elapsed_seconds": elapsed,
        "reward_history": rewards,
        "reward_last": _number(d, "reward_last", optional=True),
        "reward_best": _number(d, "reward_best", optional=True),
        "dropped_events": dropped,
    }


def load_into(state: State, d: Mapping[str, Any]) -> None:
    """Fold a checked dict into ``state`` (the fold's half of ``load_state_dict``)."""
    state.elapsed_before = d["elapsed_seconds"]
    state.reward_history.clear()
    state.reward_history.extend(d["reward_history"])
    state.hparams.reward_last = d["reward_last"]
    state.hparams.reward_best = d["reward_best"]
    state.dropped_before = d["dropped_events"]
