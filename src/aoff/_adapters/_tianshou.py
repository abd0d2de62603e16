"""``aoff.tianshou.Logger``: a Tianshou ``BaseLogger`` whose writes go through aoff.

Why: Tianshou's trainers log through one small object, a ``BaseLogger`` (``write``,
``log_training_data``, ``log_test_data``, ``log_update_data``, ``log_info_data``,
``save_data``, ``restore_data``, ``finalize``). Its ``TensorboardLogger`` calls a torch
``SummaryWriter`` on the training thread, and with ``write_flush=True`` (its default)
flushes the event file after every ``write``: a file write and ``fsync`` inside the
training loop. This class does what ``TensorboardLogger`` does with the same calls, over
``aoff.tensorboard.SummaryWriter`` (``_writer.py``): the same tags, steps and values in
the same folder, each one an event on the training thread and the files written by
aoff's agent process. ``write_flush`` is accepted and has no effect (a flush would make
the trainer wait on the disk; aoff's agent flushes every ``flush_secs`` and ``finalize``
drains).

Resuming (``resume_from_log=True``): ``save_data`` writes ``save/epoch``,
``save/env_step`` and ``save/gradient_step`` as Tianshou's logger does; ``restore_data``
reads them back with aoff's own reader (``_runfolder/reading/_scalars.py``), so a run folder
written by Tianshou's ``TensorboardLogger`` resumes here too. With ``resume=True`` (and
the run's folder), the logger does what aoff's own resume does before its writer opens
the folder: it reads the last whole checkpoint (the three counters of one ``save_data``)
and cuts every point logged after it, each scope on its own axis (``train``/``test`` at
the env step, ``update`` at the gradient step, ``info`` at the epoch:
``_runfolder/reading/_tagcut.py``; one TensorBoard purge step would cut three axes at one
value); ``restore_data`` then returns that checkpoint and carries each interval's
counter across on its own axis. Without it, as with Tianshou's logger, those points stay
(said once).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from tianshou.utils.logger.logger_base import VALID_LOG_VALS, BaseLogger, TRestoredData

from .._core._say import say_to_stderr
from .._runfolder.lines._csv import CSV_NAME
from .._runfolder.reading._scalars import ScalarReader
from .._runfolder.reading._tagcut import cut_tags_after
from ._writer import SummaryWriter

__all__ = ["Logger"]

#: what ``save_data`` writes and ``restore_data`` reads (each tag is its own step type)
_SAVED = ("save/epoch", "save/env_step", "save/gradient_step")
#: which of a checkpoint's counters (epoch, env step, gradient step) is each scope's step
_AXIS = {"train": 1, "training": 1, "test": 1, "update": 2, "info": 0}


def _flat(
    data: Mapping[Any, Any], prefix: str, delimiter: str, exclude_arrays: bool
) -> dict[str, Any]:
    """Nested dicts as one level, keys joined by ``delimiter``; only what Tianshou's
    loggers keep (numbers, NumPy scalars, arrays unless excluded)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if exclude_arrays and isinstance(value, np.ndarray):
            continue
        name = f"{prefix}{delimiter}{key}".lstrip(delimiter)
        if isinstance(value, dict):
            out.update(_flat(value, name, delimiter, exclude_arrays))
        elif isinstance(value, VALID_LOG_VALS):
            out[name] = value
    return out


def _is_figure(value: Any) -> bool:
    """A Matplotlib figure (only possible when Matplotlib is imported)."""
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(value, figure.Figure)


def _writer(target: Any, aoff_options: dict[str, Any]) -> SummaryWriter:
    """The writer behind the logger: the one given, or one made for a folder."""
    if isinstance(target, SummaryWriter):
        if aoff_options:
            raise TypeError(
                f"aoff.tianshou.Logger: aoff's options ({', '.join(sorted(aoff_options))}) go "
                "to the SummaryWriter you pass, not to the logger"
            )
        return target
    if isinstance(target, str | os.PathLike):
        return SummaryWriter(target, **aoff_options)
    raise TypeError(
        "aoff.tianshou.Logger needs an aoff.tensorboard.SummaryWriter or a folder, got "
        f"{type(target).__module__}.{type(target).__name__} (for torch's SummaryWriter: "
        "change its import to `from aoff.tensorboard import SummaryWriter`)"
    )


class Logger(BaseLogger):
    """Tianshou's ``TensorboardLogger``, written through aoff.

    ``writer`` is an :class:`aoff.tensorboard.SummaryWriter` (what Tianshou's logger gets
    as a torch ``SummaryWriter``) or a folder, for which one is made with
    ``aoff_options`` (``dashboard=True``, ``backends=``, ``rules=``, ...). The intervals
    mean what they mean for Tianshou's ``TensorboardLogger``; ``write_flush`` is accepted
    and unused (nothing on the training thread waits for the disk).

    ``resume=True`` (with a folder, for a trainer given ``resume_from_log=True``): before
    the writer opens the folder, every point logged after its last checkpoint is cut,
    each scope on its own step axis, as aoff's own resume cuts a run; ``restore_data``
    returns that checkpoint.
    """

    def __init__(
        self,
        writer: SummaryWriter | str | os.PathLike[str],
        training_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int | None = None,
        write_flush: bool = True,
        resume: bool = False,
        **aoff_options: Any,
    ) -> None:
        super().__init__(
            training_interval, test_interval, update_interval, info_interval, save_interval
        )
        self.write_flush = write_flush
        self.last_save_step = -1
        #: the checkpoint a ``resume=True`` logger cut the folder back to
        self.checkpoint: tuple[int, int, int] | None = None
        if resume:
            if not isinstance(writer, str | os.PathLike):
                raise TypeError(
                    "aoff.tianshou.Logger(resume=True) needs the run's folder, not a "
                    "writer: it cuts the folder back before its writer opens it"
                )
            self.checkpoint = _cut_to_checkpoint(os.fspath(writer))
        self.writer = _writer(writer, aoff_options)

    @property
    def should_stop(self) -> bool:
        """True once one of the run's rules made with ``stop=True`` fired (aoff's
        :attr:`aoff.OffPolicyLogger.should_stop`): give Tianshou a ``stop_fn`` that reads it."""
        return self.writer._engine.should_stop

    def prepare_dict_for_logging(
        self,
        input_dict: dict[str, Any],
        parent_key: str = "",
        delimiter: str = "/",
        exclude_arrays: bool = True,
    ) -> dict[str, Any]:
        """The trainer's nested statistics as one level of ``a/b/c`` keys, only numbers
        (and arrays when ``exclude_arrays`` is false), as Tianshou's logger keeps them."""
        return _flat(input_dict, parent_key, delimiter, exclude_arrays)

    def write(self, step_type: str, step: int, data: dict[str, Any]) -> None:
        """``step_type`` (``"<scope>/<axis>"``) as a scalar at ``step``, then each value
        as ``<scope>/<key>``: arrays as histograms, Matplotlib figures as images."""
        scope = step_type.split("/")[0]
        add = self.writer.add_scalar
        add(step_type, step, global_step=step)
        for key, value in data.items():
            tag = f"{scope}/{key}"
            if isinstance(value, np.ndarray):
                self.writer.add_histogram(tag, value, global_step=step, bins="auto")
            elif _is_figure(value):
                self.writer.add_figure(tag, value, global_step=step)
            else:
                add(tag, value, global_step=step)

    def finalize(self) -> None:
        """Drain and close: returns once every backend wrote what was logged."""
        self.writer.close()

    def save_data(
        self,
        epoch: int,
        env_step: int,
        update_step: int,
        save_checkpoint_fn: Callable[[int, int, int], str] | None = None,
    ) -> None:
        """Every ``save_interval`` epochs: call ``save_checkpoint_fn`` and log where it
        was (``save/epoch``, ``save/env_step``, ``save/gradient_step``)."""
        if (
            self.save_interval is None
            or save_checkpoint_fn is None
            or epoch - self.last_save_step < self.save_interval
        ):
            return
        self.last_save_step = epoch
        save_checkpoint_fn(epoch, env_step, update_step)
        for tag, step in zip(_SAVED, (epoch, env_step, update_step), strict=True):
            self.write(tag, step, {tag: step})

    def restore_data(self) -> tuple[int, int, int]:
        """``(epoch, env_step, gradient_step)`` of the last checkpoint logged in the
        writer's folder (0 for what is not there), read with aoff's reader.

        With ``resume=True``: the checkpoint the folder was cut back to, and each
        interval's counter continues on its own axis (training and test at the env step,
        updates at the gradient step, info and saves at the epoch). Without it, the
        intervals continue as Tianshou's logger continues them."""
        if self.checkpoint is not None:
            epoch, env_step, gradient_step = self.checkpoint
            self.last_save_step = self.last_log_info_step = epoch
            self.last_log_training_step = self.last_log_test_step = env_step
            self.last_log_update_step = gradient_step
            return self.checkpoint
        last = _last_steps(self.writer.get_logdir())
        if "save/epoch" in last and "save/gradient_step" in last:
            epoch = last["save/epoch"]
            gradient_step = last["save/gradient_step"]
            self.last_save_step = self.last_log_test_step = epoch
            self.last_log_update_step = gradient_step
        else:
            epoch = gradient_step = 0
        # Tianshou's logger leaves the training interval's count alone (it sets an
        # attribute no method reads): the same, so a resumed run logs the same points
        env_step = last.get("save/env_step", 0)
        if epoch:
            say_to_stderr(
                "aoff.tianshou.Logger: resumed without resume=True, so the points logged "
                "after the checkpoint stay in the run (as with Tianshou's logger); "
                "Logger(log_path, resume=True) cuts them"
            )
        return epoch, env_step, gradient_step

    @staticmethod
    def restore_logged_data(log_path: str) -> TRestoredData:
        """Every scalar in ``log_path`` as nested dicts of arrays, one level a ``/`` of
        the tag (Tianshou's format), read with aoff's reader."""
        out: dict[str, Any] = {}
        for _run, tag, (_steps, _walls, values) in ScalarReader(log_path).read_columns():
            *path, leaf = tag.split("/")
            node = out
            for part in path:
                node = node.setdefault(part, {})
            node[leaf] = np.asarray(values)
        return out

    def __repr__(self) -> str:
        return f"aoff.tianshou.Logger({self.writer.get_logdir()!r})"


def _cut_to_checkpoint(log_dir: str) -> tuple[int, int, int]:
    """Cut ``log_dir`` back to its last whole checkpoint; ``(epoch, env_step,
    gradient_step)`` of it (zeros when none: everything Tianshou logged goes)."""
    saved = _saved_points(log_dir)
    epochs, envs, grads = (saved.get(tag, []) for tag in _SAVED)
    # the k-th save wrote one point to each tag: the last k all three have is whole (a
    # session that died between the three writes left a torn one); an offline trainer's
    # runs may have no env step at all
    k = min(len(epochs), len(grads), len(envs) if envs else len(epochs))
    at = (epochs[k - 1], envs[k - 1] if envs else 0, grads[k - 1]) if k else (0, 0, 0)

    def limit(tag: str) -> int | None:
        scope = tag.split("/", 1)[0]
        if scope == "save":  # save/<counter> and the data's own save/save/<counter>
            name = "save/" + tag.rsplit("/", 1)[-1]
            return at[_SAVED.index(name)] if name in _SAVED else None
        axis = _AXIS.get(scope)
        return None if axis is None else at[axis]

    if os.path.isdir(log_dir):
        cut_tags_after(log_dir, limit)
        if os.path.isfile(os.path.join(log_dir, CSV_NAME)):
            say_to_stderr(
                f"aoff.tianshou.Logger(resume=True): {CSV_NAME} is not cut per step axis; "
                "its rows after the checkpoint stay (the event files and metrics.jsonl "
                "were cut)"
            )
    return at


def _saved_points(log_dir: str) -> dict[str, list[int]]:
    """Each of ``_SAVED``'s steps in ``log_dir``, in order (absent when never logged)."""
    if not os.path.isdir(log_dir):
        return {}
    try:
        columns = ScalarReader(log_dir, _SAVED).read_columns()
    except ValueError:  # no run there yet
        return {}
    return {tag: [int(s) for s in steps] for _run, tag, (steps, _w, _v) in columns}


def _last_steps(log_dir: str) -> dict[str, int]:
    """The last step of each of ``_SAVED`` in ``log_dir`` (absent when never logged)."""
    return {tag: steps[-1] for tag, steps in _saved_points(log_dir).items() if steps}
