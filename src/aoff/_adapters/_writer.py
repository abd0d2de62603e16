"""``aoff.tensorboard.SummaryWriter``: torch's ``SummaryWriter`` calls, through aoff.

Why: most RL code (CleanRL and the research repos built like it) logs with
``torch.utils.tensorboard.SummaryWriter``, whose ``add_scalar`` builds a protobuf and a
record on the training thread. This class takes the same constructor and calls, turns
each call into one event tuple for aoff's hot path (``_core/_events.py``: ``W_SCALAR``,
``W_TEXT``, ``W_HISTOGRAM``, ``W_HPARAMS``) and leaves everything else to aoff's agent
process: the fold makes one record a call (``_core/_fold_writer.py``) and the
TensorBoard backend writes it into the same run folder, under the same tag, step and
wall time as torch's writer would (``_runfolder/tensorboard/_encode.py`` for what is not a
plain scalar). What lands on disk reads back the same through TensorBoard's reader
(``tests/test_summarywriter.py`` plays one call sequence through both and compares).

What is checked at the call (a clear error there, as torch's writer raises there):
a tag that is not a ``str``, a value that is not one number, a text that is not a
``str``, empty histogram input, hyperparameters of the wrong types, and what no
format holds: a string with a lone surrogate, a ``global_step`` beyond int64 (or NaN,
infinity), an int value beyond the float range (docs/migrate/summarywriter.md has the
table, case by case against torch's writer). Everything else (reducing histograms,
building protobufs, files) happens in the agent. A ``global_step`` that is a plain
int in range costs one comparison; a plain float value none.

Calls torch's writer has and this one does not cover raise ``NotImplementedError``
naming what to use instead (``_writer_conventions.py``, with the default log dir and W&B's
``sync_tensorboard`` notice). Media calls are in ``_writer_media.py`` (aoff's media path).
"""

from __future__ import annotations

import dataclasses
import os
import time
import types
from collections.abc import Mapping, Sequence
from typing import Any

from .._core import _events as ev
from .._core._buffer import Overflow
from .._core._capture import finish
from .._core._convert import I64_MAX, I64_MIN, encodable
from .._core._histogram import DEFER_MAX
from .._core._pending import Gather, pending_event
from .._core._report import FinishReport
from .._core._rules import Rule
from .._display._api import NullDisplay
from .._faces._sync import OffPolicyLogger
from .._pump._options import PumpMode
from . import _writer_checks as checked
from ._writer_conventions import UNSUPPORTED, default_log_dir, notify_wandb, unsupported
from ._writer_media import WriterMedia

__all__ = ["SummaryWriter"]

_time = time.time
_W_SCALAR = ev.W_SCALAR
_W_TEXT = ev.W_TEXT
_W_HISTOGRAM = ev.W_HISTOGRAM
_W_HPARAMS = ev.W_HPARAMS
_I64_MIN = I64_MIN
_I64_MAX = I64_MAX
#: ints within this bound are floats for sure (2**1024 is beyond the float range)
_BIG_INT = 2**1023


def _discard(event: ev.Event) -> None:
    return None


class _Engine(OffPolicyLogger):
    """aoff's sync logger, with the writer's TensorBoard options set before it starts."""

    def __init__(self, writer_options: dict[str, Any], **kwargs: Any) -> None:
        self._writer_options = writer_options
        super().__init__(**kwargs)

    def _setup_face(self) -> None:
        self._options = dataclasses.replace(self._options, **self._writer_options)
        super()._setup_face()


#: the writer's arguments that go to the logger as they are (None: the logger's default)
_PASSED_ON = frozenset(
    (
        "backends",
        "backend_options",
        "overflow",
        "finish_timeout",
        "flush_secs",
        "pump",
        "ranks",
        "wandb_project",
        "wandb_entity",
        "wandb_name",
        "rules",
        "webhook",
        "command",
        "capacity",
        "media_budget",
    )
)


def _engine(
    logdir: str,
    filename_suffix: str,
    purge_step: int | None,
    total_steps: int,
    dashboard: bool,
    passed: dict[str, Any],
) -> _Engine:
    """The logger behind a writer: TensorBoard files in ``logdir``, the writer's own
    conventions (no envs, a dashboard only when asked), the rest as passed."""
    if not isinstance(dashboard, bool):
        raise TypeError(f"SummaryWriter(dashboard=) must be True or False, got {dashboard!r}")
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 0:
        raise TypeError(f"SummaryWriter(total_steps=) must be an int >= 0, got {total_steps!r}")
    if isinstance(passed.get("backends"), str):  # a name's letters would be names
        raise TypeError("SummaryWriter(backends=) must be a sequence, e.g. backends=('jsonl',)")
    if "backends" in passed:
        passed["backends"] = tuple(passed["backends"])
    return _Engine(
        {
            "tb_filename_suffix": filename_suffix,
            "tb_purge_step": purge_step,
            "own_description": True,  # not the user's config: algo, env, sizes are ours
        },
        algo_name="SummaryWriter",
        env_name=logdir,
        max_iterations=total_steps,
        num_envs=0,  # a writer's calls never say: no "Envs" row on the dashboard
        log_dir=os.path.abspath(logdir),
        log_backend="tensorboard",
        display=None if dashboard else NullDisplay(),
        system_interval=2.0 if dashboard else 0,
        **passed,
    )


class SummaryWriter(WriterMedia):
    """A drop-in for ``torch.utils.tensorboard.SummaryWriter`` that writes through aoff.

    The positional arguments and every ``add_*`` method mean what they mean in torch's
    writer. ``max_queue`` is accepted and unused (aoff's buffer is ``capacity`` events
    and never blocks the caller); ``flush_secs`` bounds how long records wait before the
    backends flush. aoff's extras are keyword-only:

    dashboard
        draw aoff's live dashboard (default ``False``: the script's own prints stay as
        they are; the pump runs in aoff's agent process either way).
    total_steps
        the dashboard's end: the ``global_step`` the run ends at (for its progress and
        ETA; 0, the default: no end shown).
    backends
        more outputs besides TensorBoard: ``"jsonl"`` (``log_dir/metrics.jsonl``),
        ``"csv"`` (``log_dir/progress.csv``), ``"wandb"`` (``wandb_project``, ...).
    capacity, overflow
        aoff's event buffer (100,000 events by default). ``overflow="block"`` (the
        default here, like torch's writer, whose calls wait when its queue is full):
        a call waits for room, so nothing is lost; ``"drop_oldest"`` never waits.
    backend_options, finish_timeout, pump, ranks, media_budget, wandb_*
        as for :class:`aoff.OffPolicyLogger`.
    rules, webhook, command
        what the run watches itself with (:mod:`aoff.rules`; the defaults: NaN/inf and
        a stall) and where an alert goes besides ``alerts.jsonl`` and the ``aoff/alerts``
        text summary, as for :class:`aoff.OffPolicyLogger`.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        *,
        dashboard: bool = False,
        total_steps: int = 0,
        backends: Sequence[str] = (),
        backend_options: Mapping[str, Mapping[str, Any]] | None = None,
        capacity: int | None = None,
        overflow: Overflow = "block",
        finish_timeout: float = 10.0,
        pump: PumpMode = "process",
        ranks: str = "zero",
        wandb_project: str = "aoff",
        wandb_entity: str | None = None,
        wandb_name: str = "",
        media_budget: int | None = None,
        rules: Sequence[Rule] | None = None,
        webhook: str | None = None,
        command: Sequence[str] | None = None,
    ) -> None:
        if not log_dir:
            log_dir = default_log_dir(comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._logdir = os.fspath(log_dir)
        if purge_step is not None:  # any int64, as torch's (-1: every point is hidden)
            purge_step = checked.step("SummaryWriter", purge_step, "purge_step")
        passed = {k: v for k, v in locals().items() if k in _PASSED_ON and v is not None}
        os.makedirs(self._logdir, exist_ok=True)  # torch's writer makes it at once too
        self._engine = _engine(
            self._logdir, filename_suffix, purge_step, total_steps, dashboard, passed
        )
        if self._engine._inert:  # a rank that does not log (see aoff's ``ranks=``)
            self._engine._put = _discard
        self._runs: set[str] = set()
        self._closed = False
        # no start(): the dashboard opens, and its clock starts, with the first call
        self._new_run("", self._logdir)

    def _new_run(self, run: str, logdir: str) -> None:
        """First use of a run folder: tell W&B's TensorBoard sync, as torch's would."""
        if run not in self._runs:
            self._runs.add(run)
            notify_wandb(logdir)

    # -- the calls ----------------------------------------------------------------------------
    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
        axes: Mapping[str, float] | None = None,
    ) -> None:
        """Log one number at ``tag`` (Python numbers, NumPy scalars or one-element arrays,
        one-element tensors; CUDA tensors are copied without a sync).

        ``axes`` (aoff's, passed by name): the point's other clocks, e.g.
        ``{"env_steps": n, "grad_steps": g}``, written beside it in the same event (same
        step and wall time) as ``axis/<name>``, so ``read_scalars(..., axes=True)`` and
        ``aoff compare --x env_steps`` read them; ``global_step`` stays TensorBoard's step.
        Not keyword-only on purpose: CPython gives a function with a keyword-only
        parameter no specialised call, ~250 machine instructions more on every
        ``add_scalar(tag, value, step)``.
        """
        if axes is not None:
            self._add_scalar_on_axes(tag, scalar_value, global_step, walltime, new_style,
                                     double_precision, axes)  # fmt: skip
            return
        if type(tag) is not str or not (tag.isascii() or encodable(tag)):
            raise checked.bad_tag("add_scalar", tag)
        if global_step is not None and (
            type(global_step) is not int or not _I64_MIN <= global_step <= _I64_MAX
        ):
            global_step = checked.step("add_scalar", global_step)
        style = (2 if double_precision else 1) if new_style else 0
        wall = _time() if walltime is None else checked.walltime("add_scalar", walltime)
        # a plain float, or an int a float holds (torch's float() of it); the rest is checked
        if type(scalar_value) is float or (
            type(scalar_value) is int and -_BIG_INT < scalar_value < _BIG_INT
        ):
            self._engine._put((_W_SCALAR, wall, "", tag, scalar_value, global_step, style))
            return
        g: Gather = []
        value = checked.number("add_scalar", tag, scalar_value, g)
        event = (_W_SCALAR, wall, "", tag, value, global_step, style)
        self._engine._put(finish(g, event) if g else event)

    def _add_scalar_on_axes(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None,
        walltime: float | None,
        new_style: bool,
        double_precision: bool,
        axes: Mapping[str, float],
    ) -> None:
        """``add_scalar(..., axes=...)``: the call's event with the axes after its fields
        (the fold checks each value and writes it as ``axis/<name>``)."""
        if type(tag) is not str or not (tag.isascii() or encodable(tag)):
            raise checked.bad_tag("add_scalar", tag)
        if not isinstance(axes, Mapping):
            raise TypeError(f"add_scalar(axes=) must be a dict, got {type(axes).__name__}")
        if global_step is not None:
            global_step = checked.step("add_scalar", global_step)
        style = (2 if double_precision else 1) if new_style else 0
        wall = _time() if walltime is None else checked.walltime("add_scalar", walltime)
        g: Gather = []
        value = checked.number("add_scalar", tag, scalar_value, g)
        event = (_W_SCALAR, wall, "", tag, value, global_step, style, dict(axes))
        self._engine._put(finish(g, event) if g else event)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, Any],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log several numbers under ``main_tag``, each in its own run folder
        ``<log_dir>/<main_tag with "/" as "_">_<key>`` (torch's layout)."""
        main_tag = checked.text("add_scalars", "main_tag", main_tag)
        if not isinstance(tag_scalar_dict, Mapping):
            got = type(tag_scalar_dict).__name__
            raise TypeError(f"add_scalars: tag_scalar_dict must be a dict, got {got}")
        if global_step is not None:
            global_step = checked.step("add_scalars", global_step)
        wall = _time() if walltime is None else checked.walltime("add_scalars", walltime)
        prefix = main_tag.replace("/", "_") + "_"
        g: Gather = []
        events = []
        for key, v in tag_scalar_dict.items():
            key = checked.text("add_scalars", "key", key)
            value = checked.number("add_scalars", key, v, g)
            events.append((_W_SCALAR, wall, prefix + key, main_tag, value, global_step, 0))
        for e in events:  # every value was good: the new sub-runs are real
            if e[2] not in self._runs:
                self._new_run(e[2], self._logdir + "/" + e[2])
        put = self._engine._put
        if g:  # device values: the call's copies are launched together, once
            put(finish(g, events[0]))
            for e in events[1:]:
                put(pending_event(e))
            return
        for e in events:
            put(e)

    def add_text(
        self,
        tag: str,
        text_string: str,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log a (markdown) text at ``<tag>/text_summary``, TensorBoard's Text tab."""
        tag = checked.text("add_text", "tag", tag)
        text_string = checked.text("add_text", "text_string", text_string)
        if global_step is not None:
            global_step = checked.step("add_text", global_step)
        wall = _time() if walltime is None else checked.walltime("add_text", walltime)
        self._engine._put((_W_TEXT, wall, "", tag, text_string, global_step))

    def add_histogram(
        self,
        tag: str,
        values: Any,
        global_step: int | None = None,
        bins: Any = "tensorflow",
        walltime: float | None = None,
        max_bins: int | None = None,
    ) -> None:
        """Log a distribution with torch's statistics and buckets (``bins``: torch's
        ``"tensorflow"`` default, any ``np.histogram`` rule, a count or edges). The input
        is copied here; the buckets are made in aoff's agent (inputs over 65,536 values
        are reduced here, to bound what one buffered event holds)."""
        tag = checked.text("add_histogram", "tag", tag)
        if global_step is not None:
            global_step = checked.step("add_histogram", global_step)
        wall = _time() if walltime is None else checked.walltime("add_histogram", walltime)
        arr = checked.histogram_values(tag, values)
        b = checked.bins(tag, arr, bins)
        if max_bins is not None:
            max_bins = int(max_bins)
        payload: Any = arr
        if arr.size > DEFER_MAX:
            from .._core._fold_writer import torch_histogram

            payload = torch_histogram(tag, arr, b, max_bins)
        self._engine._put((_W_HISTOGRAM, wall, "", tag, payload, global_step, b, max_bins))

    def add_hparams(
        self,
        hparam_dict: dict[str, Any],
        metric_dict: dict[str, Any],
        hparam_domain_discrete: dict[str, list[Any]] | None = None,
        run_name: str | None = None,
        global_step: int | None = None,
    ) -> None:
        """Log hyperparameters and their metrics into the sub-run ``run_name`` (default
        ``str(time.time())``), for TensorBoard's HParams tab, as torch's writer does."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionary.")
        values = {
            checked.text("add_hparams", "key", k): checked.hparam(k, v)
            for k, v in hparam_dict.items()
        }
        discrete = checked.check_discrete(values, hparam_domain_discrete)
        if global_step is not None:
            global_step = checked.step("add_hparams", global_step)
        g: Gather = []
        metrics = {
            checked.text("add_hparams", "metric", k): checked.number("add_hparams", k, v, g)
            for k, v in metric_dict.items()
        }
        if not run_name:
            run_name = str(time.time())
        run_name = checked.text("add_hparams", "run_name", run_name)
        self._new_run(run_name, os.path.join(self._logdir, run_name))
        event = (_W_HPARAMS, _time(), run_name, values, metrics, discrete, global_step)
        self._engine._put(finish(g, event) if g else event)

    # -- not covered -----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in UNSUPPORTED:
            return unsupported(name, UNSUPPORTED[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- the rest of torch's writer --------------------------------------------------------------
    def get_logdir(self) -> str:
        """The directory the event files go into (as given, or the default)."""
        return self._logdir

    def flush(self) -> None:
        """Block until everything logged so far is written (and flushed) by every backend."""
        if not self._closed:
            self._engine.flush()

    def close(self) -> None:
        """Write everything logged so far and close the files. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.report = self._engine.close()

    #: the engine's :class:`~aoff.FinishReport` once closed (dropped, written per backend)
    report: FinishReport | None = None

    def remote(self, name: str | None = None, *, timeout: float = 10.0) -> Any:
        """A picklable :class:`~aoff.RemoteLogger` that logs into this run from another
        process (aoff's calls: ``log_step``, ...; see docs/guides/sync.md)."""
        return self._engine.remote(name, timeout=timeout)

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        self.close()
