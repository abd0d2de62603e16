"""TensorBoard's own options: how the TensorBoard backend names its event files and where
a resumed writer hides the points after, as one typed value.

Why apart from the run's options: each backend takes its own
(``backend_options={"tensorboard": {...}}``, the registry entry's ``options`` type
builds them), so a new TensorBoard option is a field here and nothing in the options
every backend shares. ``aoff.tensorboard.SummaryWriter``'s ``filename_suffix`` and
``purge_step`` come in as these. Light: no ``tensorboard`` import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["TensorBoardOptions"]


@dataclass(frozen=True, slots=True)
class TensorBoardOptions:
    """The TensorBoard backend's options (checked when built: a ``ValueError``)."""

    #: appended to each event file's name (``SummaryWriter(filename_suffix=)``)
    filename_suffix: str = ""
    #: points at this step and after, logged before, are hidden (``SummaryWriter(
    #: purge_step=)``, as torch's: a ``SessionLog.START`` at it); None: none hidden.
    #: ``resume_step=`` sets it for the run
    purge_step: int | None = None

    def __post_init__(self) -> None:
        suffix = self.filename_suffix
        if not isinstance(suffix, str):
            raise ValueError(f"TensorBoard's filename_suffix must be a str, got {suffix!r:.60}")
        if os.sep in suffix or (os.altsep and os.altsep in suffix):
            raise ValueError(
                f"TensorBoard's filename_suffix must not contain a path separator: {suffix!r}"
            )
        step = self.purge_step
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
            raise ValueError(f"TensorBoard's purge_step must be an int or None, got {step!r:.60}")
