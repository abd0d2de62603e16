"""``aoff.torchrl.Logger``: a TorchRL ``Logger`` whose calls go through aoff.

Why: TorchRL's trainers, recorders and recipes take a ``torchrl.record.loggers.Logger``
(``TensorboardLogger``, ``CSVLogger``, ...). Its ``TensorboardLogger`` is a thin layer
over torch's ``SummaryWriter`` in ``log_dir/exp_name``; this one is the same layer over
``aoff.tensorboard.SummaryWriter`` (``_writer.py``), so each call is one event on the
training thread and the TensorBoard files (same folder, tags, steps, values) are written
by aoff's agent process. What each method does is what TorchRL's ``TensorboardLogger``
does with the same arguments, including its checks (a video is ``(N, T, C, H, W)`` with
``C`` 1 or 3; ``fps`` as given, else torch's 4); videos need no moviepy here. TorchRL's
base class has no ``log_str``, so neither has this one.

aoff's options (``backends=``, ``dashboard=``, ``media_budget=``, ``pump=``, ``wandb_*``,
...) are keyword arguments, passed to the writer. ``close()``/``shutdown()`` drain: they
return once every backend wrote what was logged.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from torchrl.record.loggers import Logger as _TorchRLLogger

from ._writer import SummaryWriter

__all__ = ["Logger"]


def _plain(cfg: Any) -> dict[str, Any]:
    """A Hydra/OmegaConf config as a plain dict, resolved (as TorchRL's TensorBoard
    logger does); any other mapping as a dict."""
    if type(cfg) is dict:
        return cfg
    omegaconf = sys.modules.get("omegaconf")  # a DictConfig means it is imported
    if omegaconf is not None and isinstance(cfg, omegaconf.DictConfig):
        container = omegaconf.OmegaConf.to_container(cfg, resolve=True)
        return {str(k): v for k, v in container.items()}
    if isinstance(cfg, Mapping):
        return dict(cfg)
    raise TypeError(f"log_hparams needs a dict or an OmegaConf config, got {type(cfg).__name__}")


class Logger(_TorchRLLogger):  # type: ignore[misc]
    """A TorchRL logger that writes through aoff (TensorBoard files by default).

    ``exp_name`` and ``log_dir`` mean what they mean for TorchRL's
    ``TensorboardLogger``: the event files go into ``log_dir/exp_name``. Every other
    keyword argument is one of ``aoff.tensorboard.SummaryWriter``'s (aoff's options).
    """

    #: set by TorchRL's base class: whether ``shutdown`` ran
    _service_shutdown: bool

    def __init__(self, exp_name: str, log_dir: str = "tb_logs", **aoff_options: Any) -> None:
        self._aoff_options = aoff_options
        super().__init__(exp_name=exp_name, log_dir=log_dir)
        self.log_dir = self.experiment.log_dir

    def _create_experiment(self) -> SummaryWriter:
        return SummaryWriter(
            log_dir=os.path.join(self.log_dir, self.exp_name), **self._aoff_options
        )

    def log_scalar(
        self,
        name: str,
        value: float,
        step: int | None = None,
        *,
        axes: Mapping[str, float] | None = None,
    ) -> None:
        """One scalar under ``name`` at ``step`` (TorchRL's trainers pass the frames
        collected). ``axes`` (aoff's, keyword-only): the point's other clocks, e.g.
        ``{"grad_steps": g}``, as ``SummaryWriter.add_scalar(..., axes=)`` writes them."""
        if axes is None:
            self.experiment.add_scalar(name, value, global_step=step)
        else:
            self.experiment.add_scalar(name, value, global_step=step, axes=axes)

    def log_metrics(
        self,
        metrics: Any,
        step: int | None = None,
        *,
        keys_sep: str = "/",
        axes: Mapping[str, float] | None = None,
    ) -> dict[str, Any]:
        """Several scalars at ``step`` (a dict or a TensorDict, nested keys joined with
        ``keys_sep``); returns them with tensors as Python numbers, as TorchRL's does.
        ``axes`` (aoff's, keyword-only): every point's other clocks, as
        :meth:`log_scalar`'s ``axes=``; without it, TorchRL's own ``log_metrics`` runs."""
        if axes is None:
            return super().log_metrics(metrics, step, keys_sep=keys_sep)  # type: ignore[no-any-return]
        # TorchRL's conversion (one device sync for the call's CUDA tensors, a
        # TensorDict's keys flattened), then each point with its axes, as its loop does
        from torchrl.record.loggers.common import _make_metrics_safe

        safe: dict[str, Any] = _make_metrics_safe(metrics, keys_sep=keys_sep)
        for name, value in safe.items():
            self.log_scalar(name, value, step=step, axes=axes)
        return safe

    def log_video(self, name: str, video: Any, step: int | None = None, **kwargs: Any) -> None:
        """A video ``(N, T, C, H, W)`` (``C`` 1 or 3), as an animated GIF; ``fps`` and
        ``walltime`` as keywords (TorchRL's ``VideoRecorder`` passes its ``fps``)."""
        shape = tuple(getattr(video, "shape", ()))
        if len(shape) != 5 or shape[2] not in (1, 3):
            raise ValueError(
                f"log_video({name!r}): the video must be (N, T, C, H, W) with C 1 or 3 "
                f"(TorchRL's layout), got shape {shape}"
            )
        self.experiment.add_video(tag=name, vid_tensor=video, global_step=step, **kwargs)

    def log_hparams(self, cfg: Any) -> None:
        """The config as TensorBoard hyperparameters (a ``dict`` or an OmegaConf config)."""
        self.experiment.add_hparams(_plain(cfg), metric_dict={})

    def log_histogram(self, name: str, data: Sequence[float], **kwargs: Any) -> None:
        """A histogram of ``data``; ``step``, ``bins`` and ``walltime`` as keywords."""
        step = kwargs.pop("step", None)
        bins = kwargs.pop("bins", "tensorflow")
        walltime = kwargs.pop("walltime", None)
        if kwargs:
            raise TypeError(f"log_histogram: unrecognised arguments {kwargs}")
        self.experiment.add_histogram(
            tag=name, values=data, global_step=step, bins=bins, walltime=walltime
        )

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything logged so far is written by every backend."""
        del timeout
        self.experiment.flush()

    def shutdown(self, timeout: float | None = None) -> None:
        """Drain and close (idempotent); ``close()`` is the same."""
        del timeout
        if self._service_shutdown:
            return
        self.experiment.close()
        self._service_shutdown = True

    def __repr__(self) -> str:
        return f"aoff.torchrl.Logger(exp_name={self.exp_name!r}, log_dir={self.log_dir!r})"
