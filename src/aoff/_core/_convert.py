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


#: the range of TensorBoard's ``Event.step`` (an int64), which every format here holds
I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


def int64_step(where: str, step: int, what: str = "step") -> int:
    """``step`` if an int64 holds it, else the ``ValueError`` torch's writer raises at the
    call (``Value out of range``), naming ``where``: a step beyond it would make the
    TensorBoard backend refuse the record later, far from the line that gave it."""
    if I64_MIN <= step <= I64_MAX:
        return step
    raise ValueError(
        f"{where}: {what} {step} is out of range: TensorBoard's step is a 64-bit integer "
        f"[{I64_MIN}, {I64_MAX}]"
    )


def unencodable(where: str, what: str, s: str) -> ValueError:
    """The error for a ``str`` UTF-8 cannot hold (a lone surrogate, as ``os.fsdecode``
    gives for a non-UTF-8 file name): every format aoff writes is UTF-8."""
    return ValueError(
        f"{where}: {what} {s!r:.80} is not valid Unicode (it holds a lone "
        "surrogate, which UTF-8 cannot encode)"
    )


def visible(s: str) -> str:
    """``s`` with each character UTF-8 cannot hold written as its escape (``\\udce9``):
    text every format can store, that still shows what was given."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")
