"""``aoff.ray.TuneCallback``: every Ray Tune trial an aoff run, the sweep one folder.

Why: Tune's ``TBXLoggerCallback`` writes each result on Tune's driver loop (tensorboardX
protobufs, a flush each result), the loop that also starts, stops and schedules trials.
This callback turns each result into events for one aoff run a trial
(``aoff.tensorboard.SummaryWriter``, ``_writer.py``): the same tags (``ray/tune/<key>``,
nested results flattened with ``/``), steps (``timesteps_total``, else
``training_iteration``) and values as Tune's TBX callback, written by the trial's own
aoff agent. Tune's clocks (``training_iteration``, ``timesteps_total``,
``time_total_s``) are the run's axes (``axis/<key>``, at each result's step and wall
time), so ``aoff compare --x time_total_s`` and ``read_scalars(axes=True)`` read them.
A trial's run is closed on a helper thread, so the driver loop never waits for a drain
either.

The sweep is one folder; each trial's run is named after its configuration
(``lr=0.001,tau=0.005-seed3``; ``-s<n>`` for repeats without a seed key), which is how
``aoff compare`` groups seeds of one configuration with no flags (``_cli/_groups.py``).
The trial's config is the run's config. Rules (``rules=``) run in each trial's agent;
:attr:`TuneCallback.stopper` is a Tune ``Stopper`` that stops a trial once one of its
rules made with ``stop=True`` fired. At the end, ``sweep.json`` in the sweep folder says
how each trial ended (completed, failed, stopped by which alert) and a few lines on
stderr say which were not completed.

Where it differs from Tune's TBX callback, on purpose: a NaN result is written (TBX
leaves it out silently; here the ``nonfinite`` rule sees it); a value aoff's writer
refuses is counted in ``sweep.json`` (``refused``) and said once on stderr, not dropped
in silence.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.logger import LoggerCallback
from ray.tune.stopper import Stopper

from .._core._report import FinishReport
from ._writer import SummaryWriter

__all__ = ["AXES", "SWEEP_NAME", "TuneCallback", "run_name"]

#: the sweep's summary, in the sweep folder
SWEEP_NAME = "sweep.json"
#: what Tune's TBX callback leaves out of a result (the config is the run's config)
_NOT_LOGGED = frozenset(("config", "pid", "timestamp", "time_total_s", "training_iteration"))
#: Tune's clocks in a result, each written as the run's axis ``axis/<key>`` (under Tune's
#: own key, so ``aoff compare --x time_total_s`` reads as Tune's docs do)
AXES = ("training_iteration", "timesteps_total", "time_total_s")
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+-]+")
#: a run name's configuration part past this is cut and a hash of it added
_NAME_MAX = 96


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested result as one level of ``a/b`` keys (as Tune's loggers flatten it)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, name + "/"))
        else:
            out[name] = value
    return out


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def run_name(config: Mapping[str, Any], seed_keys: Sequence[str], repeat: int) -> str:
    """A trial's run folder name: its configuration without the seed (``k=v`` pairs,
    sorted, ``,``-joined), then ``-seed<seed>``, or ``-s<repeat>`` when the config has no
    seed key. Characters a folder name should not hold become ``_``; a long
    configuration is cut and ends with a hash of the whole, so two configurations never
    share a name."""
    flat = _flat(config)
    seed = next((flat[k] for k in seed_keys if k in flat), None)
    pairs = ",".join(f"{k}={_text(v)}" for k, v in sorted(flat.items()) if k not in seed_keys)
    key = _UNSAFE.sub("_", pairs) or "config"
    if len(key) > _NAME_MAX:
        digest = hashlib.sha1(pairs.encode("utf-8", "backslashreplace")).hexdigest()[:8]
        key = f"{key[:_NAME_MAX]}~{digest}"
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
        return f"{key}-seed{int(seed)}"
    return f"{key}-s{repeat}"


class _Trial:
    """One trial's run: its writer, how it ended, what was refused."""

    __slots__ = ("closing", "folder", "name", "refused", "report", "status", "trial_id", "why")

    def __init__(self, trial_id: str, name: str, folder: str) -> None:
        self.trial_id = trial_id
        self.name = name
        self.folder = folder
        self.status = "running"
        self.why: list[str] = []
        self.refused = 0
        self.closing: threading.Thread | None = None
        self.report: FinishReport | None = None

    def as_dict(self) -> dict[str, Any]:
        report = self.report
        return {
            "trial_id": self.trial_id,
            "run": self.name,
            "status": self.status,
            "why": self.why,
            "refused": self.refused,
            "dropped": report.dropped_events if report is not None else None,
            "lost": sum(report.backend_lost.values()) if report is not None else None,
        }


class _RuleStopper(Stopper):
    """Tune's ``Stopper`` over the trials' rules: True for a trial once one of its rules
    made with ``stop=True`` fired (Tune asks it before each result is logged, so the
    trial stops at the result after the one the rule fired on, or the one after that:
    rules run in the agent)."""

    def __init__(self, callback: TuneCallback) -> None:
        self._callback = callback

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return self._callback._should_stop(trial_id)

    def stop_all(self) -> bool:
        return False


class TuneCallback(LoggerCallback):
    """A Ray Tune logger callback: each trial an aoff run in ``log_dir`` (the sweep).

    ``tune.RunConfig(callbacks=[cb], stop=cb.stopper)``. ``log_dir`` defaults to
    ``aoff`` inside Tune's experiment folder. ``seed_keys``: the config keys that are
    the seed (left out of the run's name, which groups runs). Every other keyword
    argument is one of :class:`aoff.tensorboard.SummaryWriter`'s (``rules=``,
    ``backends=``, ``pump=``, ...), used for every trial.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        *,
        seed_keys: Sequence[str] = ("seed",),
        **aoff_options: Any,
    ) -> None:
        if isinstance(seed_keys, str) or not all(isinstance(k, str) for k in seed_keys):
            raise TypeError(f"TuneCallback: seed_keys must be a list of str, got {seed_keys!r}")
        if "dashboard" in aoff_options:
            raise TypeError("TuneCallback: no dashboard= (Tune prints its own progress)")
        self.log_dir = None if log_dir is None else os.fspath(log_dir)
        self.seed_keys = tuple(seed_keys)
        self._options = aoff_options
        self._runs: dict[str, _Trial] = {}
        self._writers: dict[str, SummaryWriter] = {}
        self._names: dict[str, int] = {}
        self.stopper = _RuleStopper(self)
        """A Tune ``Stopper``: pass it as ``RunConfig(stop=...)`` for ``stop=True`` rules
        to stop trials (combine with your own with ``tune.stopper.CombinedStopper``)."""

    # Tune pickles its run config (with the callbacks) before trials start: only the
    # settings travel, never a trial's writer
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_runs={}, _writers={}, _names={})
        return state

    # -- Tune's calls ---------------------------------------------------------------------
    def log_trial_start(self, trial: Trial) -> None:
        """A new run for the trial (a restarted trial continues in its run's folder)."""
        if trial.trial_id in self._writers:
            return
        known = self._runs.get(trial.trial_id)
        if known is not None:  # restarted after a failure: a new session in its folder
            folder, name = known.folder, known.name
        else:
            sweep = self.log_dir
            if sweep is None:
                trial.init_local_path()  # type: ignore[no-untyped-call]
                sweep = os.path.join(os.path.dirname(str(trial.local_path)), "aoff")
                self.log_dir = sweep
            base = run_name(trial.config, self.seed_keys, 0)
            repeat = self._names.get(base, 0)
            self._names[base] = repeat + 1
            name = base if repeat == 0 else run_name(trial.config, self.seed_keys, repeat)
            while name in (r.name for r in self._runs.values()):  # a seed given twice
                repeat += 1
                name = f"{base}-s{repeat}"
            folder = os.path.join(sweep, name)
        writer = SummaryWriter(folder, **self._options)
        if trial.config:
            writer._engine.log_config(dict(trial.config))
        self._writers[trial.trial_id] = writer
        run = self._runs[trial.trial_id] = _Trial(trial.trial_id, name, folder)
        run.status = "running"

    def log_trial_result(self, iteration: int, trial: Trial, result: dict[str, Any]) -> None:
        """The result's numbers as ``ray/tune/<key>`` scalars (lists and arrays as
        histograms) at ``timesteps_total``, else ``training_iteration``, and Tune's
        clocks (:data:`AXES`) as the run's axes ``axis/<key>`` at the same step and wall
        time, so each point reads back with them (``read_scalars(axes=True)``)."""
        writer = self._writers.get(trial.trial_id)
        if writer is None:
            self.log_trial_start(trial)
            writer = self._writers[trial.trial_id]
        step = result.get("timesteps_total") or result["training_iteration"]
        run = self._runs[trial.trial_id]
        # one wall time for the result: a point's axes are those at its step and time
        wall = time.time()
        # Tune's clocks in this result (an RLlib result has no timesteps_total), then its
        # values; each written as given, or refused and counted
        items = [("axis/" + k, result[k]) for k in AXES if result.get(k) is not None]
        flat = _flat({k: v for k, v in result.items() if k not in _NOT_LOGGED})
        items += [("ray/tune/" + k, v) for k, v in flat.items()]
        for tag, value in items:
            try:
                if isinstance(value, int | float | np.integer | np.floating):
                    writer.add_scalar(tag, value, global_step=step, walltime=wall)
                elif (isinstance(value, list) and value) or (
                    isinstance(value, np.ndarray) and value.size
                ):
                    writer.add_histogram(tag, value, global_step=step, walltime=wall)
            except (TypeError, ValueError) as exc:
                if run.refused == 0:  # once a trial; sweep.json has the count
                    print(f"aoff: trial {trial.trial_id}: {tag} not logged: {exc}", file=sys.stderr)
                run.refused += 1

    def log_trial_end(self, trial: Trial, failed: bool = False) -> None:
        """Close the trial's run on a helper thread (a failed trial's run ends as a
        failure: TensorBoard's HParams status, ``sweep.json``)."""
        writer = self._writers.pop(trial.trial_id, None)
        run = self._runs.get(trial.trial_id)
        if writer is None or run is None:
            return
        if failed:
            run.status = "failed"
            error = getattr(trial, "error_file", None)
            run.why.append(f"the trial raised (Tune's error file: {error})")
        elif run.status == "running":
            run.status = "completed"

        def close() -> None:
            if failed:  # the run ends as one ended by an exception
                writer._engine._stop(summary=False, interrupted=True)
            writer.close()
            run.report = writer.report

        run.closing = threading.Thread(target=close, name=f"aoff-tune-{run.name}", daemon=True)
        run.closing.start()

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        """Wait for every run's drain, then write ``sweep.json`` and say which trials
        were not completed."""
        for trial in trials:  # a trial Tune never ended (the sweep was interrupted)
            if trial.trial_id in self._writers:
                self.log_trial_end(trial, failed=False)
        for run in self._runs.values():
            if run.closing is not None:
                run.closing.join()
        if self.log_dir is None:
            return
        summary = self.summary()
        os.makedirs(self.log_dir, exist_ok=True)
        path = os.path.join(self.log_dir, SWEEP_NAME)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"trials": summary}, f, indent=1)
        os.replace(tmp, path)
        for entry in summary:
            if entry["status"] != "completed":
                why = "; ".join(entry["why"])
                print(f"aoff: {entry['run']} {entry['status']}: {why}", file=sys.stderr)

    # -- the sweep ------------------------------------------------------------------------
    def summary(self) -> list[dict[str, Any]]:
        """How each trial ended so far: ``trial_id``, ``run`` (its folder's name),
        ``status`` (``running``, ``completed``, ``failed``, ``stopped``), ``why`` (the
        alerts that stopped it, or the failure), and what was not written: ``refused``
        (values aoff's writer refused), ``dropped`` (events) and ``lost`` (records a
        backend could not write), from the run's :class:`~aoff.FinishReport`."""
        return [run.as_dict() for run in self._runs.values()]

    def _should_stop(self, trial_id: str) -> bool:
        writer = self._writers.get(trial_id)
        if writer is None or not writer._engine.should_stop:
            return False
        run = self._runs[trial_id]
        if run.status != "stopped":
            run.status = "stopped"
            for alert in writer._engine.alerts:
                if alert.stop:
                    value = alert.value if math.isfinite(alert.value) else repr(alert.value)
                    run.why.append(f"{alert.rule} on {alert.tag} at step {alert.step}: {value}")
        return True
