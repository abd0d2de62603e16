"""W&B's own options: what ``wandb.init`` is given, as one typed value.

Why apart from the run's options: each backend takes its own (``backend_options={"wandb":
{...}}``, the registry entry's ``options`` type builds them), so a new W&B option is a
field here and nothing in the options every backend shares. Light: no ``wandb`` import.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["DEFAULT_WANDB_PROJECT", "WandbOptions"]

#: the original logger's ``wandb_project`` default
DEFAULT_WANDB_PROJECT = "aoff"


def _str_or_none(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"W&B's {name} must be a str or None, got {value!r:.60}")


@dataclass(frozen=True, slots=True)
class WandbOptions:
    """``wandb.init``'s arguments for the run (checked when built: a ``ValueError``)."""

    project: str = DEFAULT_WANDB_PROJECT
    entity: str | None = None
    #: the run's name (``""``: W&B names it)
    name: str = ""
    group: str | None = None
    job_type: str | None = None
    tags: tuple[str, ...] | None = None
    notes: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("project", "name"):
                if not isinstance(value, str):
                    raise ValueError(f"W&B's {f.name} must be a str, got {value!r:.60}")
            elif f.name == "tags":
                if value is not None:
                    if isinstance(value, str) or not all(isinstance(t, str) for t in value):
                        raise ValueError(f"W&B's tags must be a list of str, got {value!r:.60}")
                    object.__setattr__(self, "tags", tuple(value))
            else:
                _str_or_none(f.name, value)
