"""PyTorch tensor values (imported only once a tensor has been passed).

Interim implementation: a one-element tensor is read with ``.item()``; for CUDA tensors
this synchronises, which the deferred-copy path will remove.
"""

from __future__ import annotations

from typing import Any


def capture_tensor(value: Any, where: str, key: object) -> float:
    if value.numel() != 1:
        raise ValueError(
            f"{where}: tensor for {key!r} has shape {tuple(value.shape)}; "
            "log a 0-d or one-element tensor (reduce it first, e.g. .mean())"
        )
    return float(value.detach().reshape(()).item())
