"""Tag naming rules shared by every backend.

The seed wrote metrics as ``train/<key>`` unless the key already had a namespace, and
rewards as ``reward/<key>`` unless already prefixed; legacy flat aliases were dropped when
their canonical key was present. Keeping these rules in one place is what lets
TensorBoard, W&B and JSONL agree on tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

V = TypeVar("V")

#: legacy flat key -> canonical key; the legacy one is dropped when both are present.
METRIC_ALIASES: Mapping[str, str] = {
    "surrogate_loss": "loss/policy_loss",
    "value_loss": "loss/value_loss",
    "entropy": "policy/entropy",
    "kl": "ppo/approx_kl",
}


def metric_tag(key: str) -> str:
    """``loss/q`` stays as is; a flat ``q_loss`` becomes ``train/q_loss``."""
    return key if "/" in key else "train/" + key


def reward_tag(key: str) -> str:
    """``reward/x`` stays as is; a bare ``x`` becomes ``reward/x``."""
    return key if key.startswith("reward/") else "reward/" + key


def drop_aliases(metrics: dict[str, V]) -> dict[str, V]:
    """Return ``metrics`` without legacy aliases whose canonical key is also present."""
    for legacy, canonical in METRIC_ALIASES.items():
        if legacy in metrics and canonical in metrics:
            metrics = {k: v for k, v in metrics.items() if k != legacy}
    return metrics
