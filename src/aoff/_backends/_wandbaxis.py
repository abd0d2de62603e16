"""Which axis W&B may chart every metric on (``WandbBackend(x=)``, ``wandb_x=``).

A module of its own, with no import of wandb nor rich, because the faces check
``wandb_x=`` at their constructor (in the training process, where ``import aoff`` stays
light) and the backend checks ``x=`` when built: one rule, one message.
"""

from __future__ import annotations

__all__ = ["check_x"]


def check_x(x: object, name: str) -> None:
    """Raise ``ValueError`` unless ``x`` names an axis a record carries as
    ``axis/<x>``: ``"iteration"``, ``"env_steps"`` or a name given to ``axes=``."""
    if not isinstance(x, str) or not x or x.startswith("axis/") or x in ("step", "wall_time"):
        raise ValueError(
            f"{name} must be 'iteration', 'env_steps' or a name given to axes= (the step is "
            f"W&B's default x axis, wall time its 'Wall Time'), got {x!r}"
        )
