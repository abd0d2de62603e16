"""trackio backend: the run goes into trackio's local store, for trackio's own dashboard.

trackio (Hugging Face) keeps each project in a SQLite file under its data folder
(``TRACKIO_DIR``, else ``$HF_HOME/trackio``) and shows it with ``trackio show``. This
backend opens one trackio run (``trackio.init(project, name, config)``) and logs each
:class:`~aoff.StepRecord`'s scalars at its step; histograms as ``trackio.Histogram``,
images and videos as ``trackio.Image``/``trackio.Video`` (from the encoder's PNG/MP4
bytes); the run's config (seed description, ``config=``, ``log_config``) as the run's
config, updated when it changes. A ``SummaryWriter`` sub-run's tags go under
``<folder>/``, a producer's (``log.remote(name)``) under ``<name>/``.

Why in the agent: trackio logs from a thread inside the process that calls it (a batch
every 0.5 s into SQLite); here that process is aoff's agent, so the training process
never imports trackio (nor gradio). Every trackio call runs on one worker thread
(trackio's run object is not meant to be shared between threads); ``close`` calls
``finish``, which drains trackio's own queue into the store.

No network: trackio logs locally unless told of a Space or a server (``space_id``,
``server_url`` or their environment variables), which this backend never passes.

Only what the user logged or configured reaches trackio, a logger the original never
had. Metrics: the original logger's face's scaffolding (the done rates and learner times
nobody logged, ``perf/iter_ms``, the ``axis/iteration``/``axis/env_steps_total`` clocks)
is left out by :class:`~._usertags.UserTags`; axes named with ``axes=`` are kept as
``axis/<name>`` metrics. Config: the run description's fields the user did not give (the
original's defaults, and all of a ``SummaryWriter``'s, which describes the run itself)
are left out, and a key trackio cannot take (it reserves keys starting with ``_``,
Hydra's ``_target_`` among them, and refuses the whole run for one) is left out alone,
with one line naming it.

Not kept, and said once when the run opens: a point's logged wall time. trackio 0.43
stamps each point with the time its own thread stores it: ``trackio.log``/``Run.log``
take no time, the stored entry has no timestamp field, and the only calls that take
timestamps (``import_csv``, ``import_tf_events``) make a new project. The time each
point was logged stays in the run's own files (TensorBoard, JSONL, CSV).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from rich.markup import escape

from .._core._histogram_data import Histogram
from .._core._records import MediaRecord, Record, RunConfig, StepRecord, TextRecord, WriterRecord
from ._base import BackendContext, Takes
from ._configwrites import ConfigWrites, run_config
from ._quiet import quiet_this_thread
from ._threads import SerialWorker, wait_future
from ._usertags import UserTags
from ._wandbmedia import MEDIA_FORMATS, MediaFiles

__all__ = ["TrackioBackend"]


#: the run description's config keys (``_configwrites.run_config``) and the field each
#: comes from: left out of trackio's config while the field is at its default
_SEED_KEYS = {
    "algo": "algo_name",
    "env": "env_name",
    "num_envs": "num_envs",
    "obs_dim": "obs_dim",
    "action_dim": "action_dim",
    "max_iterations": "max_iterations",
}
_SEED_DEFAULTS = {f.name: f.default for f in fields(RunConfig)}


def trackio_config(
    values: Mapping[str, Any], say: Callable[[str], None], said: set[str]
) -> dict[str, Any]:
    """``values`` as trackio may take them: a key it reserves (starting with ``_``) is
    left out and said once (``said``: the keys said so far)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key.startswith("_"):
            if key not in said:
                said.add(key)
                say(
                    f"[yellow]trackio: config key {escape(repr(key))} left out (trackio "
                    "reserves keys starting with '_'); the other keys are kept[/]"
                )
            continue
        out[key] = value
    return out


#: said once as the run opens (see the module's doc)
WALL_TIME_LINE = (
    "[dim]trackio stamps each point when it stores it (trackio.log takes no time): "
    "the time each point was logged is in the run's own files[/]"
)


def set_description(cfg: RunConfig, unset: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The run description's config keys the user gave: not at their defaults, and not
    named in ``unset``."""
    every = run_config(cfg, {})
    return {
        k: v
        for k, v in every.items()
        if v != _SEED_DEFAULTS[_SEED_KEYS[k]] and _SEED_KEYS[k] not in unset
    }


def _histogram(h: Histogram) -> Any:
    import numpy as np
    import trackio

    edges = np.array([h.min, *h.bucket_limits], dtype=float)
    return trackio.Histogram(np_histogram=(np.array(h.bucket_counts, dtype=float), edges))


class TrackioBackend:
    """Logs each :class:`~aoff.StepRecord` into a trackio run (local store)."""

    name = "trackio"
    takes = Takes.MEDIA | Takes.HPARAMS
    #: plain data until opened: the agent gets it pickled
    portable = True
    media_formats = MEDIA_FORMATS

    def __init__(self, *, project: str = "aoff", name: str = "", group: str | None = None):
        self.project = project
        self.run_name = name
        self.group = group
        self._ctx: BackendContext | None = None
        self._config = ConfigWrites()  # the config's version sent so far
        self._worker: SerialWorker | None = None
        self._run: Any = None
        self._media = MediaFiles("trackio")  # images and videos (_wandbmedia.py)
        self._said: set[str] = set()  # config keys said to be left out
        self._logged = False  # a point was logged: trackio's config is fixed from here
        self._said_late = False
        self._user = UserTags(seed_tags=False)  # set from the context at open

    def __getstate__(self) -> dict[str, Any]:
        return {"project": self.project, "run_name": self.run_name, "group": self.group}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(project=state["project"], name=state["run_name"], group=state["group"])  # type: ignore[misc]

    # -- on the trackio thread ---------------------------------------------------------
    def _open_sync(self, config: dict[str, Any]) -> str:
        import trackio

        # trackio prints where the run went and how to see it; the dashboard says it (this
        # thread's prints only: the dashboard's own lines go on meanwhile)
        with quiet_this_thread():
            self._run = trackio.init(
                project=self.project,
                name=self.run_name or None,
                group=self.group,
                config=config,
                embed=False,
                auto_log_gpu=False,
                auto_log_cpu=False,
            )
        return str(self._run.name)

    def _config_sync(self, values: dict[str, Any]) -> None:
        """Config changes: trackio stores a run's config with its first point and never
        again, so a change after it is said once rather than lost in silence."""
        self._run.config.update(values)
        if self._logged and not self._said_late and self._ctx is not None:
            self._said_late = True
            keys = ", ".join(list(values)[:5]) + (", ..." if len(values) > 5 else "")
            self._ctx.say(
                f"[yellow]trackio keeps a run's config as of its first point: {escape(keys)} "
                "(set after it) are not in trackio's config; the run summary has them, "
                "as has every backend that takes a config (Takes.HPARAMS)[/]"
            )

    def _log_sync(self, records: Sequence[Record]) -> None:
        log = self._run.log
        for rec in records:
            match rec:
                case TextRecord():  # trackio has no texts
                    continue
                case WriterRecord(hparams=hp) if hp is not None:
                    self._hparams_sync(rec)  # add_hparams: its hyperparameters are config
                    continue
                case WriterRecord(run=run):
                    prefix = rec.producer or run
                case StepRecord():
                    prefix = rec.producer or ""
            p = prefix + "/" if prefix else ""
            row: dict[str, Any] = {p + tag: v for tag, v in self._user.of(rec)}
            for h in rec.histograms:
                row[p + h.tag] = _histogram(h)
            if row:
                log(row, step=rec.step)
                self._logged = True

    def _hparams_sync(self, rec: WriterRecord) -> None:
        """``SummaryWriter.add_hparams``: its hyperparameters go to the run's config
        (before the run's first point; after it, said), its metrics are logged at its
        step under their own names (TensorBoard keeps them in a sub-run folder named by
        the time; a trackio run has no sub-runs)."""
        assert rec.hparams is not None
        say = self._ctx.say if self._ctx is not None else (lambda _line: None)
        values = trackio_config(rec.hparams.values, say, self._said)
        if values:
            self._config_sync(values)
        row = dict(rec.scalars)
        if row:
            self._run.log(row, step=rec.step)
            self._logged = True

    def _media_sync(self, items: Sequence[MediaRecord]) -> None:
        for rec, value in self._media.values(items):
            self._run.log({rec.key: value}, step=rec.step)
            self._logged = True

    def _finish_sync(self) -> None:
        with quiet_this_thread():
            self._run.finish()
        self._media.close()

    # -- Backend protocol --------------------------------------------------------------
    async def open(self, ctx: BackendContext) -> None:
        """Start the trackio run (``trackio.init`` on the backend's own thread) with the
        run's config, and say where it logs."""
        if self._worker is not None:
            return
        self._ctx = ctx
        self._user = UserTags(ctx.seed_tags)
        self._worker = SerialWorker("aoff-trackio")
        config = set_description(ctx.config, ctx.unset)
        config.update(self._config.due(self._ctx) or {})
        config = trackio_config(config, ctx.say, self._said)
        run_name = await wait_future(self._worker.submit(self._open_sync, config))
        ctx.say(
            f"[dim]trackio logging to project: {escape(self.project)}, run: "
            f"{escape(run_name)} (trackio show)[/]"
        )
        ctx.say(WALL_TIME_LINE)

    async def write(self, records: Sequence[Record]) -> None:
        """Log each record's scalars (and histograms) at its step, config changes first."""
        if not records:
            return
        if self._run is None or self._worker is None:
            raise RuntimeError("trackio backend: write() before open() or after close()")
        values = self._due()
        if values:
            await wait_future(self._worker.submit(self._config_sync, values))
        await wait_future(self._worker.submit(self._log_sync, tuple(records)))

    def _due(self) -> dict[str, Any]:
        """The config keys changed since the last send, as trackio may take them."""
        values = self._config.due(self._ctx)
        if not values or self._ctx is None:
            return {}
        return trackio_config(values, self._ctx.say, self._said)

    async def write_media(self, items: Sequence[MediaRecord]) -> None:
        """Log the encoded images and videos at their steps (in order with ``write``)."""
        if not items:
            return
        if self._run is None or self._worker is None:
            raise RuntimeError("trackio backend: write_media() before open() or after close()")
        await wait_future(self._worker.submit(self._media_sync, tuple(items)))

    async def flush(self) -> None:
        """Nothing to do: trackio's own thread sends its queue to the store every 0.5 s,
        and ``close`` drains it."""
        return

    async def close(self) -> None:
        """Write the last config changes, finish the trackio run (its queue drained) and
        stop the backend's thread."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        try:
            if self._run is not None:
                values = self._due()
                if values:
                    await wait_future(worker.submit(self._config_sync, values))
                await wait_future(worker.submit(self._finish_sync))
        finally:
            worker.stop()
