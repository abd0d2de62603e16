"""MLflow backend: metrics in ``log_batch`` calls, the config as params, resumable runs.

Why its own thread and plain data: ``MlflowClient`` calls block (a file store, a SQL
database, an HTTP server), so every call runs on one daemon thread owned by this
backend (as in the W&B backend: a hung store is abandoned by the runner and never keeps
the process from exiting). The object holds only plain settings until :meth:`open`, so
it pickles: given in ``backends=`` (by name or as an object) it runs in the agent
process like the built-in backends. ``import mlflow`` (about a second) happens in that
thread, at :meth:`open`, never at ``import aoff``.

Where records go: the tracking URI, experiment and run come from the arguments, else
from MLflow's own environment variables (``MLFLOW_TRACKING_URI``,
``MLFLOW_EXPERIMENT_NAME``/``MLFLOW_EXPERIMENT_ID``, ``MLFLOW_RUN_ID``; the agent
inherits the environment), else MLflow's defaults (its default tracking URI, the
``Default`` experiment, a new run named ``f"{algo}_{env}"``).

What is written:

* each record's scalars as metrics at the record's step and wall time (milliseconds); a
  producer's record (``log.remote(name)``) as ``<name>/<tag>`` at that producer's own
  step. Metric keys keep what MLflow allows (letters, digits, ``_ - . / `` and space);
  any other character becomes ``_`` and empty, ``.`` or ``..`` path segments are
  dropped or replaced (MLflow refuses such keys, and one bad key would fail its batch).
* metrics in ``log_batch`` calls within MLflow's limits: at most 1,000 metrics (and
  1,000 entities) a call, at most 100 params or tags a call.
* the run's config (the run description: algo, env, sizes; then ``config=`` and
  ``log_config``) as params, ``str(value)`` cut to MLflow's 6,000 characters. MLflow
  params cannot change: a key whose value changes later keeps its first value as the
  param, and the new value goes to the run tag ``aoff.config.<key>`` (with one console
  line naming the keys).
* images and videos (``log_image``/``log_video``) as artifacts ``media/<key>_s<step>_
  <ms>.png|.mp4`` (the JSONL/CSV backends' names, ``_mediafiles.py``).

Runs: a run created here has its id stored in ``dir/mlflow-run-id`` (``dir`` is the
logger's ``log_dir`` when the backend is built by name); with ``resume=True``
(``resume_step=``) the stored run is continued: marked ``RUNNING`` again and written to
under the same run id. MLflow cannot delete metric points, so points the first life
logged after the resume step stay in its history next to the new ones. At close, a run
this backend created or resumed is ended ``FINISHED`` (``KILLED`` when the run was
interrupted); a run given by ``run_id`` (or ``MLFLOW_RUN_ID``) belongs to the caller
and is left as it is.

Failures: a batch is sent in chunks; when a chunk fails, the runner retries the batch
and the chunks already stored are not sent again (no duplicated points). A store that
keeps failing or hangs is handled by the runner like any backend: training goes on,
the FinishReport counts what did not reach MLflow.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from typing import Any

from rich.markup import escape

from .._core._config import ConfigValue
from .._core._records import MediaRecord, Record, RunConfig, TextRecord
from .._runfolder._mediafiles import MEDIA_FORMATS, write_media_file
from .._runfolder._replace import replaced
from ._base import BackendContext, Takes
from ._configwrites import run_config
from ._threads import SerialWorker, wait_future

__all__ = ["MAX_METRICS_PER_CALL", "MAX_PARAMS_PER_CALL", "RUN_ID_FILE", "MlflowBackend"]

#: the file in ``dir`` that holds the id of the run this backend created
RUN_ID_FILE = "mlflow-run-id"
#: MLflow's limits for one ``log_batch`` call (``mlflow.utils.validation``)
MAX_METRICS_PER_CALL = 1000
MAX_PARAMS_PER_CALL = 100
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
MAX_KEY = 250
#: the tag a changed config value goes to (params cannot change)
CHANGED_TAG_PREFIX = "aoff.config."

_BAD_CHARS = re.compile(r"[^/\w.\- ]")


@functools.lru_cache(maxsize=4096)
def metric_key(tag: str) -> str:
    """``tag`` as a key MLflow accepts (see the module docstring)."""
    parts = []
    for seg in _BAD_CHARS.sub("_", tag).split("/"):
        if not seg:
            continue
        parts.append("_" * len(seg) if seg in (".", "..") else seg)
    return ("/".join(parts) or "_")[:MAX_KEY]


def _read_run_id(folder: str) -> str | None:
    try:
        with open(os.path.join(folder, RUN_ID_FILE), encoding="utf-8") as f:
            return f.read().strip() or None
    except FileNotFoundError:
        return None


def _param_text(value: ConfigValue) -> str:
    return str(value)[:MAX_PARAM_VALUE]


class _MlflowMissing(ImportError):
    pass


class MlflowBackend:
    """Logs :class:`~aoff.StepRecord` scalars to an MLflow run with ``log_batch``.

    ``tracking_uri``, ``experiment`` (a name; created if missing) and ``run_name``/
    ``run_id`` say where (None: MLflow's environment variables, then its defaults);
    ``dir`` holds ``mlflow-run-id`` and ``resume`` continues the run stored there.
    ``tags`` are set on a run created here. All arguments are plain data: the object
    pickles, so the logger's agent process runs it.
    """

    name = "mlflow"
    takes = Takes.MEDIA | Takes.HPARAMS
    #: plain data until open(): the logger may send it to its agent process
    portable = True

    def __init__(
        self,
        *,
        tracking_uri: str | None = None,
        experiment: str | None = None,
        run_name: str | None = None,
        run_id: str | None = None,
        tags: dict[str, str] | None = None,
        dir: str | os.PathLike[str] | None = None,
        resume: bool = False,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_name = run_name
        self.run_id = run_id
        self.tags = {str(k): str(v) for k, v in (tags or {}).items()}
        self.dir = os.fspath(dir) if dir else None
        self.resume = resume
        self._state: _Open | None = None
        self._worker: SerialWorker | None = None
        self._ctx: BackendContext | None = None
        self._closed = False

    def __getstate__(self) -> dict[str, Any]:
        # only the settings travel (an open backend's client and thread stay here)
        state = self.__dict__.copy()
        state.update(_state=None, _worker=None, _ctx=None)
        return state

    # -- Backend protocol --------------------------------------------------------------
    async def open(self, ctx: BackendContext) -> None:
        if self._closed:
            raise RuntimeError("MLflow backend: open() after close()")
        if self._state is not None:
            return
        if self._worker is None:
            self._worker = SerialWorker("aoff-mlflow")
        self._ctx = ctx
        version, values = ctx.hparams.snapshot()
        params = run_config(ctx.config, values)
        self._state = state = await wait_future(
            self._worker.submit(_Open.start, self, ctx.config, params)
        )
        state.config_version = version
        ctx.say(
            f"[dim]MLflow logging to {escape(state.uri)}, experiment "
            f"{escape(state.experiment_name)}, run {escape(state.run_id)}[/]"
        )

    async def write(self, records: Sequence[Record]) -> None:
        if not records:
            return
        state, worker = self._state, self._worker
        if state is None or worker is None:
            raise RuntimeError("MLflow backend: write() before open() or after close()")
        await self._maybe_update_config(state, worker)
        await wait_future(worker.submit(state.log_records, tuple(records)))

    media_formats = MEDIA_FORMATS  # PNG, MP4: artifacts under media/

    async def write_media(self, items: Sequence[MediaRecord]) -> None:
        """Log the encoded images and videos as MLflow artifacts (in order with ``write``)."""
        state, worker = self._state, self._worker
        if state is None or worker is None:
            raise RuntimeError("MLflow backend: write_media() before open() or after close()")
        await wait_future(worker.submit(state.log_media, tuple(items)))

    async def flush(self) -> None:
        # each write() returns once log_batch stored its points: nothing is held here
        return

    async def close(self) -> None:
        self._closed = True
        state, worker = self._state, self._worker
        self._worker = None
        if worker is None:
            return
        try:
            if state is not None:
                await self._maybe_update_config(state, worker)
                interrupted = self._ctx is not None and self._ctx.hparams.interrupted
                await wait_future(worker.submit(state.end, interrupted))
        finally:
            worker.stop()

    async def _maybe_update_config(self, state: _Open, worker: SerialWorker) -> None:
        ctx = self._ctx
        if ctx is None or ctx.hparams.version == state.config_version:
            return
        version, values = ctx.hparams.snapshot()
        changed = await wait_future(worker.submit(state.log_params, run_config(ctx.config, values)))
        state.config_version = version
        if changed:
            shown = ", ".join(changed[:8]) + (" ..." if len(changed) > 8 else "")
            ctx.say(
                f"[yellow]MLflow params cannot change: new values of {escape(shown)} "
                f"are in the run's {CHANGED_TAG_PREFIX}* tags[/]"
            )


class _Open:
    """An open run: the client and what was sent; used on the backend's thread only."""

    def __init__(self, client: Any, entities: Any, run_id: str, owned: bool) -> None:
        self.client = client
        self.entities = entities  # mlflow.entities (Metric, Param, RunTag)
        self.run_id = run_id
        self.owned = owned
        self.uri = ""
        self.experiment_name = ""
        self.params: dict[str, str] = {}
        self.config_version = -1
        # a batch whose first chunks were stored before a chunk failed: the retry skips them
        self._partial: tuple[Record, int, int] | None = None

    @classmethod
    def start(cls, backend: MlflowBackend, cfg: RunConfig, params: dict[str, ConfigValue]) -> _Open:
        try:
            import mlflow.entities
            from mlflow.tracking import MlflowClient
        except ImportError as exc:
            raise _MlflowMissing(
                "the mlflow backend needs MLflow: pip install 'aoff[mlflow]' (mlflow-skinny)"
            ) from exc
        client = MlflowClient(tracking_uri=backend.tracking_uri)
        run_id = backend.run_id or os.environ.get("MLFLOW_RUN_ID") or None
        owned = run_id is None
        if run_id is None and backend.resume and backend.dir:
            run_id = _read_run_id(backend.dir)
        if run_id is not None:
            run = client.get_run(run_id)
            if owned:  # our own run, continued: running again until close
                client.update_run(run_id, status="RUNNING")
        else:
            run = client.create_run(
                cls._experiment_id(client, backend.experiment),
                run_name=backend.run_name or f"{cfg.algo_name}_{cfg.env_name}",
                tags=backend.tags or None,
            )
            run_id = run.info.run_id
            if backend.dir:
                os.makedirs(backend.dir, exist_ok=True)
                path = os.path.join(backend.dir, RUN_ID_FILE)
                with replaced(path, prefix=".mlflow-run-id-") as f:
                    f.write((run_id + "\n").encode("utf-8"))
        self = cls(client, mlflow.entities, run_id, owned)
        self.uri = str(client.tracking_uri)
        exp = client.get_experiment(run.info.experiment_id)
        self.experiment_name = str(exp.name) if exp is not None else run.info.experiment_id
        self.params = dict(run.data.params)  # a continued run keeps its params
        self.log_params(params)
        return self

    @staticmethod
    def _experiment_id(client: Any, name: str | None) -> str:
        if name is None:
            env_id = os.environ.get("MLFLOW_EXPERIMENT_ID")
            if env_id:
                return env_id
            name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or None
        if name is None:
            return "0"  # MLflow's Default experiment
        exp = client.get_experiment_by_name(name)
        if exp is not None:
            return str(exp.experiment_id)
        return str(client.create_experiment(name))

    def log_params(self, values: dict[str, ConfigValue]) -> list[str]:
        """Log new keys as params; changed ones as tags. Returns the changed keys."""
        e = self.entities
        new: list[Any] = []
        tags: list[Any] = []
        changed: list[str] = []
        sent: dict[str, str] = {}
        for key, value in values.items():
            k, text = metric_key(key), _param_text(value)
            old = self.params.get(k)
            if old is None:
                new.append(e.Param(k, text))
                sent[k] = text
            elif old != text:
                changed.append(key)
                tag = (CHANGED_TAG_PREFIX + k)[:MAX_KEY]
                tags.append(e.RunTag(tag, str(value)[:MAX_TAG_VALUE]))
        for i in range(0, len(new), MAX_PARAMS_PER_CALL):
            self.client.log_batch(self.run_id, params=new[i : i + MAX_PARAMS_PER_CALL])
        for i in range(0, len(tags), MAX_PARAMS_PER_CALL):
            self.client.log_batch(self.run_id, tags=tags[i : i + MAX_PARAMS_PER_CALL])
        self.params.update(sent)
        return changed

    def log_records(self, records: Sequence[Record]) -> None:
        metric = self.entities.Metric
        points: list[Any] = []
        for rec in records:
            if isinstance(rec, TextRecord):  # MLflow's metrics are numbers
                continue
            ms = int(rec.wall_time * 1000)
            p = "" if rec.producer is None else rec.producer + "/"
            for tag, value in rec.scalars:
                points.append(metric(metric_key(p + tag), float(value), ms, rec.step))
        start = 0
        partial = self._partial
        if partial is not None and partial[0] is records[0] and partial[1] == len(records):
            start = partial[2]  # a retry of the batch that failed part-way
        self._partial = None
        for i in range(start, len(points), MAX_METRICS_PER_CALL):
            try:
                self.client.log_batch(self.run_id, metrics=points[i : i + MAX_METRICS_PER_CALL])
            except BaseException:
                if i:
                    self._partial = (records[0], len(records), i)
                raise

    def log_media(self, items: Sequence[MediaRecord]) -> None:
        """Each item as an artifact ``media/<name>`` (named as the file backends do)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="aoff-mlflow-media-") as folder:
            for rec in items:
                path = os.path.join(folder, write_media_file(folder, rec))
                self.client.log_artifact(self.run_id, path, artifact_path="media")

    def end(self, interrupted: bool) -> None:
        if self.owned:
            self.client.set_terminated(self.run_id, "KILLED" if interrupted else "FINISHED")
