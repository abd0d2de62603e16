"""Where a logger's parts live: the one place the test hooks look them up.

Why a module of its own: ``probe()`` (``_probe.py``) reads these parts and the
fault-injection hooks (``_faults.py``) act on them; when a private part is renamed or
moved, the lookup is fixed here once, for both.
"""

from __future__ import annotations

from typing import Any

__all__ = ["_Parts", "_face", "_side"]


def _face(log: object) -> Any:
    """The face behind ``log``: the logger itself, or a ``SummaryWriter``'s engine."""
    engine = getattr(log, "_engine", None)
    face = engine if engine is not None else log
    if not hasattr(face, "_options") or not hasattr(face, "_phase"):
        raise TypeError(
            "probe() takes an OffPolicyLogger, an AsyncOffPolicyLogger or an "
            f"aoff.tensorboard.SummaryWriter, not {type(log).__name__}"
        )
    return face


def _side(face: Any) -> Any:
    """The face's ``AgentSide`` (process mode), or None."""
    from .._faces._side import AgentSide

    got = getattr(face, "_driver", None)  # both faces' driver (``_faces/_driver.py``)
    return got if isinstance(got, AgentSide) else None


class _Parts:
    """The in-process pump's parts that the hooks read: the one place that knows where
    they live inside the pump. The pump keeps them private behind a small surface
    (``_pump/_pump.py``) that has no read-out for them; a rename is fixed here."""

    def __init__(self, log: object) -> None:
        core = getattr(_face(log), "_core", None)
        if core is None:
            raise LookupError(
                "this logger's pump runs in the agent process (or nowhere here): its "
                "state and backends are not in this process (pump='thread' keeps it here)"
            )
        self._core: Any = core
        self._pump: Any = core.pump

    @property
    def state(self) -> Any:
        return self._core.state

    @property
    def runners(self) -> list[Any]:
        return list(self._pump._runners)

    def runner(self, name: str) -> Any:
        runners = self.runners
        for r in runners:
            if r.name == name:
                return r
        raise LookupError(f"no backend named {name!r} (there are {[r.name for r in runners]})")

    @property
    def say_once(self) -> Any:
        """The pump's ``SayOnce``: problem lines once each (``.seen``), ``.write``."""
        return self._pump._say_once

    @property
    def sampler(self) -> Any:
        """The system metrics sampler, or None."""
        return self._pump._system

    @property
    def held(self) -> Any:
        """Events drained and held back (a lost agent's unsent ones, device values)."""
        return self._pump._intake.held

    @property
    def encoder(self) -> Any:
        """The media encoder beside the pump."""
        return self._pump._intake.media
