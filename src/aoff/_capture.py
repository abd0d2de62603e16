"""Slow-path value capture for the hot path: anything that is not a plain number.

Called only when a value is not ``float``/``int``/``bool``. It must return something
the pump can turn into a float later *with the value as it is now*: NumPy scalars and
arrays are converted with ``float()`` (arrays can change in place later), PyTorch
tensors are read without importing torch unless the caller already passed one, and
anything else that is not a number raises ``TypeError`` naming the argument and key.
"""

from __future__ import annotations

from typing import Any


def _is_tensor(value: object) -> bool:
    mod = type(value).__module__
    return mod == "torch" or mod.startswith("torch.")


def capture_value(value: object, where: str, key: object) -> Any:
    if value is None or isinstance(value, str | bytes | bytearray):
        raise TypeError(
            f"{where}: value for {key!r} is {type(value).__name__} {value!r:.60}; "
            "aoff logs real numbers only"
        )
    if _is_tensor(value):
        from ._tensors import capture_tensor

        return capture_tensor(value, where, key)
    if hasattr(value, "__float__"):
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: value for {key!r} cannot be converted: {exc}") from None
    raise TypeError(f"{where}: value for {key!r} is {type(value).__name__}, not a real number")
