"""What torch's ``SummaryWriter`` does around its calls, kept by aoff's writer.

Why a module of its own: none of it is a logging call. The default run folder
(``runs/<Mon>DD_HH-MM-SS_<host><comment>``), the notice an active
``wandb.init(sync_tensorboard=True)`` run gets for each new run folder (so W&B tails
aoff's event files as it tails torch's), and the calls aoff does not cover, each with an
error that names what to use instead.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import warnings
from datetime import datetime
from typing import Any, NoReturn

from .._core._warning import AoffWarning

__all__ = ["UNSUPPORTED", "default_log_dir", "notify_wandb", "unsupported"]

#: what to use instead of each call this writer does not cover
_ELSEWHERE = "torch's own writer (torch.utils.tensorboard.SummaryWriter) on the same log_dir"
UNSUPPORTED: dict[str, str] = {
    "add_graph": f"log the model graph once with {_ELSEWHERE}",
    "add_onnx_graph": f"log the ONNX graph once with {_ELSEWHERE}",
    "add_embedding": f"write projector embeddings with {_ELSEWHERE}",
    "add_mesh": f"log meshes with {_ELSEWHERE}",
    "add_pr_curve": f"log PR curves with {_ELSEWHERE}",
    "add_pr_curve_raw": f"log PR curves with {_ELSEWHERE}",
    "add_custom_scalars": f"write the custom-scalars layout once with {_ELSEWHERE}",
    "add_custom_scalars_multilinechart": f"write the layout once with {_ELSEWHERE}",
    "add_custom_scalars_marginchart": f"write the layout once with {_ELSEWHERE}",
    "add_audio": f"log audio with {_ELSEWHERE}",
    "add_image_with_boxes": f"log images with boxes with {_ELSEWHERE}",
    "add_tensor": "log one number with add_scalar, or a distribution with add_histogram",
    "add_histogram_raw": "give the raw values to add_histogram (same statistics as torch's)",
}


def default_log_dir(comment: str = "") -> str:
    """torch's default: ``runs/<Mon>DD_HH-MM-SS_<host><comment>``."""
    now = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", now + "_" + socket.gethostname() + comment)


_notify_failed = False


def notify_wandb(logdir: str) -> None:
    """Tell an active ``wandb.init(sync_tensorboard=True)`` run about a new run folder,
    exactly as W&B's patched ``EventFileWriter`` does for torch's writer (W&B then tails
    the event files there). Nothing without such a run; never imports wandb."""
    global _notify_failed
    wandb = sys.modules.get("wandb")
    if wandb is None or getattr(wandb, "run", None) is None:
        return
    patched = getattr(wandb, "patched", None)
    if not isinstance(patched, dict) or not patched.get("tensorboard"):
        return  # the run does not sync TensorBoard
    try:
        from wandb.integration.tensorboard import monkeypatch

        # W&B's rule: a generated log dir (ending in "-<seconds>_<host>") is its own root
        found = re.search(rf"-\d+_{socket.gethostname()}", logdir)
        root = logdir[: found.span()[1]] if found else ""
        monkeypatch._notify_tensorboard_logdir(logdir, save=True, root_logdir=root)
    except Exception as exc:  # a W&B version without it: say so once, keep logging
        if not _notify_failed:
            _notify_failed = True
            warnings.warn(
                f"aoff: could not tell W&B about {logdir!r} ({type(exc).__name__}: {exc}); "
                "its sync_tensorboard will not see this writer",
                AoffWarning,
                stacklevel=3,
            )


def unsupported(name: str, instead: str) -> Any:
    def call(*args: object, **kwargs: object) -> NoReturn:
        raise NotImplementedError(
            f"aoff.tensorboard.SummaryWriter.{name}() is not covered: {instead}"
        )

    call.__name__ = name
    return call
