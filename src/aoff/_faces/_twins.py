"""The async face's names on the sync face: reading one says what to use instead.

Why descriptors and not a ``__getattr__``: a class that defines ``__getattr__`` gets a
Python-level attribute hook, and CPython 3.11 then specializes no attribute read on its
instances. Every ``self._x`` of the hot path (``_recorder.py``) became a generic lookup,
~0.37 us of a ~1.4 us iteration of the standard four calls (``bench_self_cost.py``).
A descriptor per name costs only those names; :class:`TwinsHidden` keeps them out of
``dir()``, which lists what the face does. ``__aenter__``/``__aexit__`` get none: on the
class they would make ``isinstance(log, contextlib.AbstractAsyncContextManager)`` true,
and ``async with log`` already fails with Python's own ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

__all__ = ["TwinsHidden", "add_twins", "instance_dir"]


class _Twin:
    """One async-only name: reading it raises an ``AttributeError`` naming the sync call."""

    __slots__ = ("face", "name", "right")

    def __init__(self, face: str, name: str, right: str) -> None:
        self.face = face
        self.name = name
        self.right = right

    def __get__(self, obj: object, owner: type | None = None) -> NoReturn:
        raise AttributeError(
            f"{self.face} has no {self.name}: it is the sync face, use {self.right} "
            f"(or AsyncOffPolicyLogger in async code)",
            name=self.name,
            obj=obj,
        )


class TwinsHidden(type):
    """The sync face's metaclass: ``dir(OffPolicyLogger)`` leaves out the twins."""

    _twins: frozenset[str] = frozenset()

    def __dir__(cls) -> Iterable[str]:
        return [n for n in super().__dir__() if n not in cls._twins]


def add_twins(cls: TwinsHidden, twins: Mapping[str, str]) -> None:
    """Give ``cls`` a raising descriptor for each async-only name (name: what to use)."""
    for name, right in twins.items():
        setattr(cls, name, _Twin(cls.__name__, name, right))
    cls._twins = frozenset(twins)


def instance_dir(obj: Any) -> list[str]:
    """``dir()`` of an instance of a :class:`TwinsHidden` class, without the twins."""
    hidden = type(obj)._twins
    return [n for n in object.__dir__(obj) if n not in hidden]
