"""Weights & Biases backend, with the seed logger's run rules, off the event loop.

Seed rules kept: if a run is already active (``wandb.run``) it is reused and never
finished here; otherwise a run is created with ``name or f"{algo}_{env}"`` and the
config ``{algo, env, num_envs, obs_dim, action_dim, max_iterations}`` (merged with the
``config`` argument, whose keys win), ``dir`` when given, and entity/group/job_type/
tags/notes only when given; that run is owned and finished at :meth:`close`. Each
record is logged as ``run.log({"iteration": it, **scalars}, step=step)``.

Producers (``log.remote(name)``, ``aoff.ray``): every record is kept. A W&B run has one
row per step and its step only grows, so a producer's several records between two
learner steps cannot each have a row in the learner's run (joined to its latest row,
the last would win). Each producer therefore gets a W&B run of its own, made on its
first record (``reinit="create_new"``: ``wandb.run`` stays the learner's): named
``<run name>/<name>``, ``job_type="producer"``, in the learner run's group (its
``group``, or else a group named after the learner run's id: pass ``group=`` to see
the learner in the same group), same project, entity and ``dir``, config
``{"producer": name, "learner_run": <id>}``. Each record is one row, logged without a
W&B step, as ``{"step", "iteration", **scalars}`` with ``step`` defined as the x axis of
every key (``define_metric``), so W&B charts each record at the producer's own step,
however many share a learner step. Producer runs are finished at :meth:`close` (before
the learner's run); a resumed learner gets new producer runs.

A record of the run's own below the last step logged (a late point, an axis gone back)
is not dropped, as W&B would drop it: it is logged as a row at W&B's next step with its
own step as ``late_step`` (defined with ``define_metric``), counted in
``WandbBackend.late`` and said once.

``x=`` (``"iteration"``, ``"env_steps"`` or an ``axes=`` name): every metric is charted on
that axis (``define_metric("*", step_metric="axis/<name>")``), and W&B's step is only the
row's number (one row a record, in order): no record is late for W&B, whatever its
clocks did. A record without a value on the axis is kept (W&B fills in the axis's last
value, 0 before the first), counted (``off_axis``) and said once.

A ``SummaryWriter`` record (``aoff.tensorboard``; its ``global_step`` may go back) is
logged as its own row, ``{"global_step": step, tag: value}`` without a W&B step (W&B
numbers rows itself, as its TensorBoard sync does), a sub-run's tags under
``<folder>/``; texts and histograms stay TensorBoard's.

Config: the run's config is that seed config, then the ``config`` argument, then the
logger's ``config=`` (:class:`~aoff._core._config.HParams` in the context; later keys
win); keys added by ``log_config`` go to ``run.config.update(..., allow_val_change=True)``
after the next batch, or at :meth:`WandbBackend.close`. Resume: the id of a run created
here is stored in ``dir/wandb-run-id``; with ``resume=True`` (``resume_step=``) the backend
calls ``wandb.init(id=<stored id>, resume="allow")``. Offline, wandb writes a second
``offline-run-*`` folder with the same id.

``reinit``: the seed passed ``reinit=True``, which wandb 0.19+ deprecates; its documented
equivalent is ``"finish_previous"``, used here. (``"create_new"`` would leave
``wandb.run`` unset, so a user's own ``wandb.log(...)`` calls next to the logger would
fail, unlike with the seed.) A run is only created when ``wandb.run`` is None.

Threads: ``wandb.log`` is not documented as thread-safe, so *every* wandb call (import,
init, log, finish) runs on one dedicated thread owned by this backend. That thread is a
daemon: a wandb call that hangs can be abandoned by the pump and can never keep the
process from exiting (a ``ThreadPoolExecutor`` thread would be joined at exit). Results
come back to the event loop through :func:`wait_future`, which wakes the loop directly
(``call_soon_threadsafe`` on asyncio, the trio token on trio) instead of parking a second
thread in ``Future.result()``.

Console: runs created here get ``Settings(silent=True)`` so wandb's banner and
summaries stay out of the dashboard; no environment variable is changed. ``import
wandb`` (~0.5 s) happens lazily, in that thread, only when the backend opens; without
the package the backend prints the seed's yellow ``wandb not installed`` and does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.markup import escape

from .._core._records import MediaRecord, Record, RunConfig, StepRecord, TextRecord, WriterRecord
from .._core._rules import ALERT_TAG
from .._runfolder._replace import replaced
from .._runfolder.tensorboard._xaxis import axis_tag
from ._base import BackendContext, Takes
from ._configwrites import ConfigWrites
from ._configwrites import run_config as merged_config
from ._threads import SerialWorker, wait_future
from ._wandbmedia import MEDIA_FORMATS, MediaFiles

__all__ = ["RUN_ID_FILE", "WandbBackend", "read_run_id"]

#: the file in the run folder (``dir``) that holds the id of the run this backend created
RUN_ID_FILE = "wandb-run-id"


def read_run_id(folder: str) -> str | None:
    """The W&B run id stored in ``folder`` (None: no such file, or empty)."""
    try:
        with open(os.path.join(folder, RUN_ID_FILE), encoding="utf-8") as f:
            return f.read().strip() or None
    except FileNotFoundError:
        return None


def _store_run_id(folder: str, run_id: str) -> None:
    with replaced(os.path.join(folder, RUN_ID_FILE), prefix=".wandb-run-id-") as f:
        f.write((run_id + "\n").encode("utf-8"))


class _WandbMissing(Exception):
    pass


class WandbBackend:
    """Logs each :class:`~aoff.StepRecord` to W&B with one ``run.log`` call."""

    name = "wandb"
    takes = Takes.ALERTS | Takes.MEDIA | Takes.HPARAMS

    def __init__(
        self,
        *,
        project: str,
        entity: str | None = None,
        name: str = "",
        group: str | None = None,
        job_type: str | None = None,
        tags: Sequence[str] | None = None,
        notes: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        config: Mapping[str, Any] | None = None,
        resume: bool = False,
        x: str | None = None,
    ) -> None:
        if x is not None and (
            not isinstance(x, str) or not x or x.startswith("axis/") or x in ("step", "wall_time")
        ):
            raise ValueError(
                "x must be 'iteration', 'env_steps' or a name given to axes= (the step is "
                f"W&B's default x axis, wall time its 'Wall Time'), got {x!r}"
            )
        #: the axis every metric is charted on (``define_metric``), None: W&B's step
        self.x = x
        self._x_tag = None if x is None else axis_tag(x)
        #: records of the run's own without a value on ``x`` (kept; W&B fills the axis's
        #: last value in)
        self.off_axis = 0
        self.project = project
        #: producer name -> its own W&B run (``log.remote(name)``; see the module's doc)
        self._producer_runs: dict[str, Any] = {}
        self.entity = entity
        self.run_name = name
        self.group = group
        self.job_type = job_type
        self.tags = list(tags) if tags is not None else None
        self.notes = notes
        self.dir = os.fspath(dir) if dir else None
        self.config = dict(config) if config else {}
        #: continue the run whose id is stored in ``dir`` (``resume_step=``)
        self.resume = resume
        self._ctx: BackendContext | None = None
        #: why W&B's ``run.alert`` last failed (the alert stays in the run's summary)
        self.alert_error: str | None = None
        self._config = ConfigWrites()  # the config's version sent so far
        #: the wandb run records go to (created here or reused), once open
        self.run: Any = None
        #: True when this backend created the run and so finishes it at close
        self.owns_run = False
        self.disabled = False
        self._worker: SerialWorker | None = None
        self._closed = False
        self._media = MediaFiles()  # images and videos (_wandbmedia.py)
        self._step = 0  # the last step logged on the run (W&B's may not go back)
        #: the run's own records that came below the last step logged: kept as rows at
        #: W&B's next step (see ``_late_row``), never dropped
        self.late = 0
        self._after_late = False

    # -- on the wandb thread -----------------------------------------------------------
    def _open_sync(self, cfg: RunConfig, values: dict[str, Any]) -> tuple[Any, bool, str]:
        try:
            import wandb
        except ImportError as exc:
            raise _WandbMissing from exc
        active: Any = wandb.run
        if active is not None:
            if values:  # the user's keys go to the run they reuse too
                active.config.update(values, allow_val_change=True)
            self._define_x(active)
            return active, False, str(active.name)
        run_name = self.run_name or f"{cfg.algo_name}_{cfg.env_name}"
        # the seed's config, then the ``config`` argument, then config= (later keys win)
        run_config: dict[str, Any] = merged_config(cfg, {})
        run_config.update(self.config)
        run_config.update(values)
        kwargs: dict[str, Any] = {
            "project": self.project,
            "name": run_name,
            "config": run_config,
            "dir": self.dir,
            "reinit": "finish_previous",
            "settings": wandb.Settings(silent=True),
        }
        for key, value in (
            ("entity", self.entity),
            ("group", self.group),
            ("job_type", self.job_type),
            ("tags", self.tags),
            ("notes", self.notes),
        ):
            if value is not None:
                kwargs[key] = value
        if self.dir:
            os.makedirs(self.dir, exist_ok=True)
            stored = read_run_id(self.dir) if self.resume else None
            if stored is not None:
                # the same run again; offline, a second offline-run-* folder with this id,
                # which `wandb sync` sends to that one run
                kwargs["id"] = stored
                kwargs["resume"] = "allow"
        run = wandb.init(**kwargs)
        if self.dir:
            _store_run_id(self.dir, str(run.id))
        self._define_x(run)
        return run, True, run_name

    def _define_x(self, run: Any) -> None:
        """With ``x``: every metric charted against that axis's tag (``define_metric``)."""
        if self._x_tag is not None:
            run.define_metric(self._x_tag)
            run.define_metric("*", step_metric=self._x_tag)

    def _update_config_sync(self, values: dict[str, Any]) -> None:
        self.run.config.update(values, allow_val_change=True)

    async def _maybe_update_config(self) -> None:
        """Send the config if it changed; before the batch it came with (a failure raises
        before anything is logged, so the runner's retry duplicates nothing)."""
        before = self._config.version
        values = self._config.due(self._ctx)
        if values and self._worker is not None and self.run is not None:
            try:
                await wait_future(self._worker.submit(self._update_config_sync, values))
            except BaseException:
                self._config.version = before
                raise

    def _log_sync(self, records: Sequence[Record]) -> None:
        log = self.run.log
        for rec in records:
            match rec:
                case _ if rec.producer is not None:
                    self._producer_row(rec, rec.producer)
                # the run's alerts (a text record each); W&B takes no other texts
                case TextRecord(texts=texts):
                    self._alerts(texts)
                # SummaryWriter: its global_step may go back, W&B's step may not; as
                # W&B's own TensorBoard sync does, a row a call with "global_step" in
                # it, sub-runs' tags under "<folder>/" (histograms: TensorBoard)
                case WriterRecord(scalars=scalars, run=run):
                    if scalars:
                        p = run + "/" if run else ""
                        call: dict[str, Any] = {"global_step": rec.step}
                        call.update([(p + tag, v) for tag, v in scalars])
                        log(call)
                case StepRecord():
                    self._own_row(log, rec)

    def _producer_row(self, rec: Record, producer: str) -> None:
        """A row of its own in the producer's run: every record kept."""
        prun = self._producer_runs.get(producer)
        if prun is None:
            prun = self._producer_runs[producer] = self._open_producer(producer)
        row: dict[str, Any] = {"step": rec.step, "iteration": rec.iteration}
        if not isinstance(rec, TextRecord):
            row.update(rec.scalars)
        prun.log(row)

    def _own_row(self, log: Callable[..., Any], rec: StepRecord) -> None:
        """A step of the run's own: a row at its step (see :meth:`_late_row`)."""
        own: dict[str, Any] = {"iteration": rec.iteration}
        own.update(rec.scalars)
        if self._x_tag is not None:
            # W&B's step is only the row's number here: every metric is charted on
            # the axis (define_metric), so a record is never late for W&B
            if self._x_tag not in own:
                self._off_axis()
            self._step += 1
            log(own, step=self._step)
            return
        if rec.step < self._step or (rec.step == self._step and self._after_late):
            self._late_row(own, rec.step)
            return
        log(own, step=rec.step)
        self._step = rec.step
        self._after_late = False

    def _off_axis(self) -> None:
        if not self.off_axis and self._ctx is not None:
            self._ctx.say(
                f"[yellow]W&B x={self.x!r}: a record without a value on it is kept; W&B "
                "charts it at the axis's last value (0 before the first)[/]"
            )
        self.off_axis += 1

    def _late_row(self, row: dict[str, Any], step: int) -> None:
        """A record of the run's own whose step is below the last one logged (a point
        that came late, or an axis that went back): W&B would drop it, with a warning in
        its own log only. It is kept as a row of its own at W&B's next step, its own step
        under ``late_step`` (defined as a metric, so it can be a chart's x axis), counted
        (:attr:`late`) and said once."""
        if not self.late:
            self.run.define_metric("late_step")
            if self._ctx is not None:
                self._ctx.say(
                    f"[yellow]W&B: a record at step {step:,} came after step {self._step:,}; "
                    "kept as a row at W&B's next step, its own step as late_step[/]"
                )
        self.late += 1
        row["late_step"] = step
        # at an explicit step: a row logged without one would join W&B's open row (the
        # last record's) and overwrite its values
        self._step += 1
        self._after_late = True  # a record at this step next would join this row
        self.run.log(row, step=self._step)

    def _alerts(self, texts: Sequence[tuple[str, str]]) -> None:
        """The run's alerts (``aoff.rules``): under ``aoff/alerts`` in the run's summary
        (every alert so far, newest last; offline runs keep it), and ``run.alert`` where
        the run is online (W&B's own notification)."""
        said = [text for tag, text in texts if tag == ALERT_TAG]
        if not said:
            return
        run = self.run
        kept = list(run.summary.get(ALERT_TAG) or [])
        kept.extend(said)
        run.summary[ALERT_TAG] = kept
        if not getattr(run, "offline", False):
            for text in said:
                try:
                    run.alert(title="aoff alert", text=text)
                except Exception as exc:  # W&B's own notification failed; the alert
                    # is in the summary (and alerts.jsonl, TensorBoard): kept, not raised
                    self.alert_error = f"{type(exc).__name__}: {exc}"

    def _open_producer(self, name: str) -> Any:
        """The W&B run of producer ``name`` (see the module's doc)."""
        import wandb

        learner = self.run
        learner_id = str(learner.id)
        kwargs: dict[str, Any] = {
            "project": str(getattr(learner, "project", "") or self.project),
            "name": f"{learner.name}/{name}",
            "group": getattr(learner, "group", None) or self.group or learner_id,
            "job_type": "producer",
            "config": {"producer": name, "learner_run": learner_id},
            "dir": self.dir,
            "reinit": "create_new",
            "settings": wandb.Settings(silent=True),
        }
        entity = getattr(learner, "entity", None) or self.entity
        if entity:
            kwargs["entity"] = entity
        run = wandb.init(**kwargs)
        run.define_metric("step")
        run.define_metric("*", step_metric="step")
        return run

    def _finish_producers_sync(self) -> None:
        runs, self._producer_runs = list(self._producer_runs.values()), {}
        for run in runs:
            run.finish()

    def _finish_sync(self) -> None:
        self.run.finish()

    # -- Backend protocol --------------------------------------------------------------
    async def open(self, ctx: BackendContext) -> None:
        if self._closed:
            raise RuntimeError("W&B backend: open() after close()")
        if self.run is not None or self.disabled:
            return
        if self._worker is None:
            self._worker = SerialWorker("aoff-wandb")
        self._ctx = ctx
        values = self._config.due(self._ctx) or {}
        try:
            run, owned, run_name = await wait_future(
                self._worker.submit(self._open_sync, ctx.config, values)
            )
        except _WandbMissing:
            self.disabled = True
            self._worker.stop()
            self._worker = None
            ctx.say("[yellow]wandb not installed[/]")
            return
        self.run, self.owns_run = run, owned
        project = self.project if owned else str(getattr(run, "project", "") or self.project)
        ctx.say(f"[dim]W&B logging to project: {escape(project)}, run: {escape(run_name)}[/]")

    async def write(self, records: Sequence[Record]) -> None:
        if self.disabled or not records:
            return
        if self.run is None or self._worker is None:
            raise RuntimeError("W&B backend: write() before open() or after close()")
        await self._maybe_update_config()
        await wait_future(self._worker.submit(self._log_sync, tuple(records)))

    media_formats = MEDIA_FORMATS

    async def write_media(self, items: Sequence[MediaRecord]) -> None:
        """Log the encoded images and videos to the W&B run (in order with ``write``)."""
        if self.disabled or not items or self.run is None or self._worker is None:
            return
        fut = self._worker.submit(self._media.log, self.run, tuple(items), self._step)
        self._step = await wait_future(fut)

    async def flush(self) -> None:
        # Each write() returns only after its run.log calls ran; wandb itself streams
        # them to its service process, and has no public flush.
        return

    async def close(self) -> None:
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is None:
            return
        try:
            if self.run is not None and not self.disabled:
                values = self._config.due(self._ctx)  # keys logged after the last step
                if values:
                    await wait_future(worker.submit(self._update_config_sync, values))
            if self._producer_runs:
                await wait_future(worker.submit(self._finish_producers_sync))
            if self.run is not None and self.owns_run:
                await wait_future(worker.submit(self._finish_sync))
        finally:
            worker.stop()
            self._media.close()
