"""The documented conversion of logged values to floats (docs/input-handling.md).

One rule for every call: ``float`` passes, anything with ``__float__`` is converted,
everything else is a :class:`BadValue` that the fold reports once per key and skips.
"""

from __future__ import annotations


class BadValue(TypeError):
    """A value that is not a real number (raised by :func:`to_float`, reported by the pump)."""


_FLOAT = float


class Opaque:
    """Stands in for a logged value that cannot travel to the agent (pickle refused it).

    It is not a number, so the fold reports and skips it, naming the original type, as
    it would have for the original object in the training process.
    """

    __slots__ = ("text", "type_name")

    def __init__(self, value: object) -> None:
        self.type_name = type(value).__name__
        try:
            self.text = repr(value)[:60]
        except Exception:
            self.text = "<unrepresentable>"

    def __repr__(self) -> str:
        return self.text


def to_float(where: str, key: object, value: object) -> float:
    """Convert a logged value to ``float`` the documented way.

    ``float`` passes through (NaN and ±inf included); ``bool``, ``int`` and anything with
    ``__float__`` (NumPy scalars, 0-d arrays, one-element CPU tensors) is converted;
    strings, bytes, ``None`` and other objects raise :class:`BadValue` naming the key, and
    so does a conversion that fails in any way (an ``int`` beyond the float range, a
    multi-element array, a ``__float__`` that raises).
    """
    if type(value) is _FLOAT:
        return value
    if (
        value is None
        or isinstance(value, str | bytes | bytearray)
        or not hasattr(value, "__float__")
    ):
        name = value.type_name if isinstance(value, Opaque) else type(value).__name__
        raise BadValue(f"{where}: value for key {key!r} is {name} {value!r:.60}, not a real number")
    try:
        return float(value)
    except Exception as exc:
        raise BadValue(
            f"{where}: value for key {key!r} cannot be converted: {type(exc).__name__}: {exc}"
        ) from None


def encodable(key: str) -> bool:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
