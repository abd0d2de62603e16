"""Stable-Baselines3's logger, writing through aoff (``aoff.sb3``).

Why a ``KVWriter``: SB3 hands every dump to the output formats of its ``Logger`` as
``write(key_values, key_excluded, step)``. One writer, :class:`AoffOutputFormat`, turns a
dump into aoff calls on one :class:`~aoff.OffPolicyLogger` (the hot path: a few
appends), so the files are written by aoff's pump, off SB3's training loop, and the run
shows in aoff's off-policy dashboard. ``model.set_logger(aoff.sb3.configure(...))`` is
the only change in a user's script.

A dump becomes, in this order:

* ``log_collector(total_steps=step, buffer_size=0)``: the record's step is SB3's step
  (``num_timesteps``, the x axis of SB3's TensorBoard charts); SB3 does not report its
  replay buffer, so the dashboard's buffer stays 0;
* ``update_ep_length(rollout/ep_len_mean)`` when SB3 logged it;
* ``log_step(n, metrics=<every number, under SB3's own key>, reward=rollout/ep_rew_mean,
  axes={"grad_steps": train/n_updates})`` where ``n`` counts the dumps (1, 2, ...) and
  the ``grad_steps`` axis is SB3's gradient step count, once a dump has one (read even
  where a format excludes the key, as SB3's TensorBoard format does: it is a clock).
  SB3's keys have a ``/``, so they keep their names in every backend
  (``train/actor_loss``, ``rollout/ep_rew_mean``, ``time/fps``); aoff adds only its axes
  (``axis/iteration``, ``axis/env_steps_total``, ``axis/grad_steps``), the reward
  (``reward/mean``) and ``episode/length``, never the original logger's scaffolding
  (done rates, learner times, ``perf/iter_ms``: SB3 logs none of them).
  A dump with no number (only an ``HParam``, say) logs no step.

Values: numbers (Python, NumPy, 0-d) are metrics; arrays and tensors go to
``log_histogram(key, value)`` (SB3's TensorBoard format writes them as histograms too);
``HParam`` goes to ``log_config(hparam_dict)`` (its ``metric_dict`` names metrics for
TensorBoard's HParams view: aoff writes its own, ``hparams/reward_mean_last`` and
``_best``); ``Video``, ``Image`` and ``Figure`` go to aoff's media path at SB3's step,
with the pixels SB3's TensorBoard format would write (torch's ``add_video``/``add_image``/
``add_figure`` rules, ``_writer_media.py``); media over ``media_budget`` are refused and
counted there. Text, and media whose input the media path refuses (a shape or dtype it
cannot log), are skipped with one :class:`~aoff.AoffWarning` per key and counted in
:attr:`AoffOutputFormat.skipped` (never silently, never a crash of the training run).

Exclusion: SB3 lets a key be excluded per format (``record(key, v, exclude="tensorboard")``;
SB3 itself excludes ``time/total_timesteps`` from TensorBoard). aoff writes one record to
all its backends, so a key goes to aoff unless every aoff-backed format of the logger
excludes it.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import tempfile
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.logger import (
    Figure,
    HParam,
    HumanOutputFormat,
    Image,
    KVWriter,
    Logger,
    Video,
)

# public names: they keep their place whatever the package's inner layout
from .._core._report import FinishReport
from .._core._warning import AoffWarning
from .._display._api import NullDisplay
from .._faces._sync import OffPolicyLogger
from ._writer_media import torch_figure, torch_image, torch_video

__all__ = ["FORMATS", "AoffLogger", "AoffOutputFormat", "configure"]

#: what each SB3 format string means here
FORMATS = {
    "stdout": "aoff's live dashboard (instead of SB3's table)",
    "tensorboard": "aoff's TensorBoard backend, event files in the folder",
    "csv": "aoff's CSV backend, folder/progress.csv",
    "json": "aoff's JSONL backend, folder/metrics.jsonl",
    "log": "SB3's own text table, folder/log.txt",
}
#: the formats aoff writes (``log`` stays SB3's own)
AOFF_FORMATS = ("stdout", "tensorboard", "csv", "json")
#: options :func:`configure` sets itself from ``folder`` and ``format_strings``
_SET_BY_CONFIGURE = ("log_dir", "log_backend")
#: SB3's gradient step count (off-policy and on-policy algorithms log it): the
#: ``grad_steps`` axis
_N_UPDATES = "train/n_updates"


class _SB3Run(OffPolicyLogger):
    """aoff's sync logger as SB3's dumps drive it: its step records carry what the dumps
    carry, not the original logger's scaffolding tags (done rates, learner times,
    ``perf/iter_ms``), which SB3 never logs."""

    def _setup_face(self) -> None:
        self._options = dataclasses.replace(self._options, seed_tags=False)
        super()._setup_face()


class AoffOutputFormat(KVWriter):
    """SB3 output format that records every dump on an aoff logger."""

    def __init__(self, log: OffPolicyLogger, formats: Sequence[str]) -> None:
        #: the aoff logger the dumps go to (its other methods are yours to call too)
        self.log = log
        #: the SB3 format names this writer stands for (for ``exclude=``)
        self.formats = tuple(formats)
        #: values aoff could not log, by key (media and text; see the module docstring)
        self.skipped: Counter[str] = Counter()
        self.dumps = 0
        #: what ``finish()`` returned, once closed
        self.report: FinishReport | None = None

    def _excluded(self, excluded: tuple[str, ...] | None) -> bool:
        return excluded is not None and all(f in excluded for f in self.formats)

    def _skip(self, key: str, value: object, why: str = "") -> None:
        if not self.skipped[key]:
            kind = type(value).__name__
            what = "text, which aoff cannot log yet" if kind == "str" else f"a {kind}"
            if why:
                what += f" aoff cannot log{why}"
            warnings.warn(
                f"aoff.sb3: {key!r} is {what}: skipped (counted in AoffOutputFormat.skipped; "
                "this warning is shown once per key)",
                AoffWarning,
                stacklevel=5 if why else 4,  # (_media,) write, Logger.dump, dump_logs
            )
        self.skipped[key] += 1

    def _media(self, key: str, value: Video | Image | Figure, step: int) -> None:
        """SB3's media, as its TensorBoard format logs them (torch's rules)."""
        try:
            if isinstance(value, Video):
                torch_video(self.log, "sb3 Video", key, value.frames, step, value.fps, None)
            elif isinstance(value, Image):
                fmt = value.dataformats
                torch_image(self.log, "sb3 Image", key, value.image, step, None, fmt)
            else:
                torch_figure(self.log, "sb3 Figure", key, value.figure, step, value.close, None)
        except (TypeError, ValueError) as exc:
            self._skip(key, value, f" ({exc})")

    def write(
        self,
        key_values: dict[str, Any],
        key_excluded: dict[str, tuple[str, ...]],
        step: int = 0,
    ) -> None:
        """One SB3 dump (``Logger.dump``): its numbers become one ``log_step`` (the dump's
        count as the iteration, ``step`` as the env steps), ``HParam`` the config, arrays
        histograms, media ``log_image``/``log_video``/``log_figure`` calls. Keys excluded
        for every aoff format are left out; a value aoff cannot log warns once per key and
        is counted in :attr:`skipped`."""
        log = self.log
        metrics: dict[str, float] = {}
        for key, value in key_values.items():
            if self._excluded(key_excluded.get(key)):
                continue
            if isinstance(value, float | int | np.number | np.bool_):
                metrics[key] = float(value)
            elif isinstance(value, HParam):
                log.log_config(dict(value.hparam_dict))
            elif isinstance(value, Video | Image | Figure):
                self._media(key, value, int(step))
            elif isinstance(value, str):
                self._skip(key, value)
            elif isinstance(value, np.ndarray) or type(value).__name__ == "Tensor":
                if getattr(value, "ndim", 1) == 0:
                    metrics[key] = float(value)
                else:
                    log.log_histogram(key, value)
            else:
                self._skip(key, value)
        if not metrics:
            return
        self.dumps += 1
        log.log_collector(int(step), 0)
        ep_len = metrics.get("rollout/ep_len_mean")
        if ep_len is not None:
            log.update_ep_length(ep_len)
        # a clock, not a metric: read whichever formats exclude it (SB3 keeps it out of
        # TensorBoard, where its charts' x is the step)
        updates = key_values.get(_N_UPDATES)
        if not isinstance(updates, int | np.integer):
            updates = None
        log.log_step(
            self.dumps,
            metrics=metrics,
            reward=metrics.get("rollout/ep_rew_mean"),
            axes=None if updates is None else {"grad_steps": int(updates)},
        )

    def close(self) -> None:
        """Drain and close the aoff logger (idempotent); keeps its :class:`FinishReport`."""
        if self.report is None:
            self.report = self.log.finish()


class AoffLogger(Logger):
    """SB3's ``Logger``, plus the aoff side: :attr:`aoff` and :attr:`report`."""

    def __init__(self, folder: str | None, output_formats: list[KVWriter]) -> None:
        super().__init__(folder, output_formats)
        self._aoff = next(f for f in output_formats if isinstance(f, AoffOutputFormat))

    @property
    def aoff(self) -> OffPolicyLogger:
        """The :class:`~aoff.OffPolicyLogger` the dumps go to."""
        return self._aoff.log

    @property
    def writer(self) -> AoffOutputFormat:
        """The :class:`AoffOutputFormat` among this logger's output formats."""
        return self._aoff

    @property
    def report(self) -> FinishReport | None:
        """What aoff's ``finish()`` returned (None until :meth:`close`)."""
        return self._aoff.report


def configure(
    folder: str | None = None, format_strings: list[str] | None = None, **options: Any
) -> AoffLogger:
    """``stable_baselines3.common.logger.configure``, with the records going through aoff.

    ``folder``: the run folder (None: ``$SB3_LOGDIR``, else ``<tmp>/SB3-<date>``, as SB3).
    ``format_strings``: None means ``$SB3_LOG_FORMAT``, else ``stdout,log,csv`` (SB3's
    default); see :data:`FORMATS` for what each means here. ``options`` go to
    :class:`~aoff.OffPolicyLogger` (``algo_name``, ``env_name``, ``config``, extra
    ``backends`` such as ``"wandb"`` or ``"mlflow"``, ...); ``log_dir`` and
    ``log_backend`` come from ``folder`` and ``format_strings``.
    """
    for name in _SET_BY_CONFIGURE:
        if name in options:
            raise TypeError(
                f"aoff.sb3.configure() sets {name} from folder and format_strings; "
                f"do not pass {name}="
            )
    if folder is None:
        folder = os.getenv("SB3_LOGDIR")
    if folder is None:
        stamp = datetime.datetime.now().strftime("SB3-%Y-%m-%d-%H-%M-%S-%f")
        folder = os.path.join(tempfile.gettempdir(), stamp)
    folder = os.fspath(folder)
    if format_strings is None:
        format_strings = os.getenv("SB3_LOG_FORMAT", "stdout,log,csv").split(",")
    formats = [f for f in format_strings if f]
    for f in formats:
        if f not in FORMATS:
            raise ValueError(
                f"aoff.sb3.configure(): unknown format {f!r}; use one of {', '.join(FORMATS)}"
            )
    os.makedirs(folder, exist_ok=True)
    extra = [b for b in ("csv", "json") if b in formats]
    backends = tuple(options.pop("backends", ()))
    names = {"csv": "csv", "json": "jsonl"}
    options["backends"] = (*[names[b] for b in extra], *backends)
    # SB3 dumps every log_interval episodes or rollouts: how many there will be is not
    # known here, so the summary says "Training complete" rather than "stopped at 3 of 1,500"
    options.setdefault("max_iterations", 0)
    # SB3 does not tell its logger how many envs it steps: no "Envs" row unless given
    options.setdefault("num_envs", 0)
    if "stdout" not in formats and "display" not in options:
        options["display"] = NullDisplay()
    log = _SB3Run(
        log_dir=folder,
        log_backend="tensorboard" if "tensorboard" in formats else "none",
        **options,
    )
    ours = [f for f in formats if f in AOFF_FORMATS]
    writers: list[KVWriter] = [AoffOutputFormat(log, ours or ["aoff"])]
    if "log" in formats:
        writers.append(HumanOutputFormat(os.path.join(folder, "log.txt")))
    logger = AoffLogger(folder=folder, output_formats=writers)
    if formats and formats != ["stdout"]:
        logger.log(f"Logging to {folder}")
    return logger
