"""What the dashboard draws: the run's state, mutated only on the pump's loop.

A plain dataclass with a :meth:`State.snapshot` that copies the mutable parts, so a
display (in another thread, or another process) can render it while the fold goes on.

Why the fields say whether they are shown: this class is the one table of the run's
state. A field made with :func:`shown` (or :func:`shown_new`) carries the sentence a
display's author reads; :class:`~aoff.RunView` (``_view.py``), the read-only type a
display is handed, is generated from those fields and :data:`SHOWN_METHODS`
(``python -m tests.test_view`` writes it; ``tests/test_view.py`` fails while it is out of
date). A field without it is the fold's bookkeeping, which no display may read.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from ._config import HParams
from ._records import RunConfig
from ._rules import Alert

REWARD_HISTORY = 200
#: the methods of :class:`State` that :class:`~aoff.RunView` offers too
SHOWN_METHODS = ("pipeline_time", "steps_per_sec")

T = TypeVar("T")


def shown(default: T, doc: str) -> T:
    """A field a display may read (it is on :class:`~aoff.RunView`), with its sentence."""
    return field(default=default, metadata={"shown": doc})


def shown_new(factory: Callable[[], T], doc: str) -> T:
    """:func:`shown` for a field whose default is made new for each state."""
    return field(default_factory=factory, metadata={"shown": doc})


def _deque_copy(d: deque[Any]) -> deque[Any]:
    return deque(d, maxlen=d.maxlen)


class ProducerInfo(NamedTuple):
    """What the dashboard shows of one ``RemoteLogger`` (``log.remote()``)."""

    steps: int = 0  # its log_step calls folded
    iteration: int = 0  # its latest log_step iteration
    total_steps: int = 0  # its latest log_collector(total_steps=...)


@dataclass(slots=True)
class State:
    """Everything the dashboard shows, mutated only on the pump's loop: by
    :class:`Folder` from the events (and its skipped values, ``invalid_values``), and,
    for what no event carries, by the pump's parts: the intake (``media_refused``,
    ``last_media``, ``invalid_values`` for an event the fold raised on), the screen
    (``backend_problems``) and the pump (``dropped_events``, ``alerts``). A display, in another
    thread or process, gets a :meth:`snapshot`, typed as the read-only
    :class:`~aoff.RunView` (what a display may read); make one to feed a display in a
    test (``State(iteration=3, started=True)``)."""

    config: RunConfig = shown_new(
        RunConfig,
        "The run's description (algorithm, environment, envs, iterations, ...).",
    )
    started: bool = shown(False, "The run has seen its first event.")
    start_time: float | None = shown(
        None,
        "Wall time of the first event (the elapsed time counts from it).",
    )
    training_start_time: float | None = shown(
        None,
        "Wall time of the first training step (the ETA counts from it).",
    )
    last_wall_time: float | None = shown(None, "Wall time of the latest event.")
    iteration: int = shown(0, "The latest ``log_step`` iteration.")
    total_steps: int = shown(
        0,
        "Environment steps so far: the run's own and every producer's latest.",
    )
    buffer_size: int = shown(0, "The replay buffer's size, as the collector last told.")
    buffer_target: int = shown(0, "The replay buffer's capacity, as the collector last told.")
    train_time: float = shown(0.0, "The last step's train time (seconds).")
    wait_time: float = shown(0.0, "The last step's wait time (seconds).")
    h2d_time: float = shown(0.0, "The last step's host-to-device time (seconds).")
    weight_sync_time: float = shown(0.0, "The last step's weight sync time (seconds).")
    throughput_known: bool = False
    throughput_steps: int = 0
    latest_metrics: dict[str, float] = shown_new(dict, "The latest value of each training metric.")
    #: metric names shown as the caller wrote them (a drop-in's tags: ``SummaryWriter``,
    #: ``aoff.sb3``), not the original logger's ``_`` -> space, title case
    labels_as_written: bool = shown(
        False,
        "Metric names are shown as the caller wrote them (a drop-in's tags).",
    )
    #: the drop-in writer's tag that feeds the reward history (``_fold_writer.py``'s rule)
    reward_tag: str = shown(
        "",
        'The logged tag the reward history comes from (``""``: ``log_step``\'s reward).',
    )
    reward_history: deque[float] = shown_new(
        lambda: deque(maxlen=REWARD_HISTORY),
        "The mean reward at each of the last steps that logged one, oldest first.",
    )
    #: the loss the dashboard charts (the first loss key of a step's metrics, sorted) and
    #: its value at each step that logged it: the same x axis as ``reward_history``
    loss_name: str | None = shown(
        None,
        "The loss the dashboard charts (the first loss key, sorted).",
    )
    loss_history: deque[float] = shown_new(
        lambda: deque(maxlen=REWARD_HISTORY),
        "That loss at each of the last steps that logged it, oldest first.",
    )
    reward_components: dict[str, float] = shown_new(
        dict,
        "The latest value of each reward component.",
    )
    collector_timing: dict[str, float] = shown_new(
        dict,
        "The collector's latest timings (seconds, by name).",
    )
    timeout_rate: float = shown(0.0, "The share of episodes that ended by a time limit.")
    terminated_rate: float = shown(0.0, "The share of episodes that ended by termination.")
    buffer_utilization: float = shown(0.0, "How full the replay buffer is, 0 to 1.")
    sync_collection: bool = shown(False, "Collection is synchronous with training.")
    env_steps_per_sync: int = shown(0, "Environment steps between two weight syncs.")
    staging_len: int = shown(0, "Transitions in the staging pool.")
    staging_max: int = shown(0, "The staging pool's capacity.")
    ep_length: float = shown(0.0, "The mean episode length.")
    status: str = shown("Initializing...", "The status line (``start(status=)``, ``log_status``).")
    training_started: bool = shown(False, "The first training step came.")
    last_save: str | None = shown(None, "What the last checkpoint save said.")
    finished: bool = shown(False, "The run finished.")
    finish_title: str = shown("Training Summary", "The summary panel's title (``finish(title=)``).")
    extra_summary: str = shown("", "Text for the summary panel (``finish(extra_summary=)``).")
    interrupted: bool = shown(False, "The run was interrupted (a signal, an exception).")
    steps_logged: int = shown(0, "``log_step`` calls folded.")
    #: the last media logged (``log_image``/``log_video``/``log_figure``): ``(key, step)``
    last_media: tuple[str, int] | None = shown(None, "The last media logged: ``(key, step)``.")
    #: media refused at the call (over ``media_budget``; see ``_media/_calls.py``)
    media_refused: int = shown(0, "Media refused at the call (over ``media_budget``).")
    # carried over from an earlier session by load_state_dict (see _checkpoint.py)
    elapsed_before: float = shown(
        0.0,
        "Seconds earlier sessions of a resumed run ran (the elapsed time adds them).",
    )
    dropped_before: int = 0
    # filled in by the pump's parts, not by events (invalid_values: by the fold too)
    dropped_events: int = shown(0, "Events dropped by the buffer's overflow policy.")
    invalid_values: int = shown(0, "Values skipped as not loggable.")
    backend_problems: dict[str, str] = shown_new(dict, "Per backend, the problem it has now.")
    #: the latest system sample (``system/cpu_percent``, ...), empty until the first one
    system: dict[str, float] = shown_new(
        dict,
        "The latest system sample (``system/cpu_percent``, ...).",
    )
    #: the run's config and final metrics (``config=``, ``log_config``): shared, as is,
    #: with the backends (BackendContext.hparams), never copied into snapshots
    hparams: HParams = field(default_factory=HParams)
    #: per ``RemoteLogger`` name (``log.remote()``); empty when the run has none
    producers: dict[str, ProducerInfo] = shown_new(
        dict,
        "Per ``RemoteLogger`` name, its steps, iteration and total steps.",
    )
    #: the run's own dashboard's column widths as it drew its last frame (set on the
    #: snapshots sent to ``aoff attach`` viewers only), so a viewer of the same size
    #: lays the panel out as the training terminal does; ``None`` elsewhere
    panel_widths: dict[tuple[object, ...], list[int]] | None = None
    #: the run's own latest ``log_collector(total_steps=...)``: ``total_steps`` adds each
    #: producer's latest to it
    own_total_steps: int = 0
    #: which kinds of call the run has made, where a value alone cannot tell (a rate or
    #: a time of 0 is also what a call never made leaves): ``"learner"`` (a step with a
    #: learner time), ``"done_rates"``, ``"collection_sync"``, ``"collector"``
    #: (``log_collector``); the panel and summary show a row once its call came
    logged: set[str] = shown_new(
        set,
        'Which kinds of call the run has made (``"learner"``, ``"done_rates"``, '
        '``"collection_sync"``, ``"collector"``): a row shows once its call came.',
    )
    #: what the run's rules saw so far (``_pump/_alerts.py``), oldest first
    alerts: tuple[Alert, ...] = shown((), "What the run's rules saw so far, oldest first.")
    #: per rule, the evaluations that raised (``_core/_watch.py``): said and counted
    rule_errors: dict[str, int] = field(default_factory=dict)
    #: alerts whose webhook or command did not complete, by why (``_pump/_actions.py``)
    alerts_undelivered: dict[str, int] = field(default_factory=dict)
    #: the hot path's latest sampled cost (``_core/_hotcost.summarize``): ``aoff/hot_path_*``
    hot_path: dict[str, float] = shown_new(dict, "The hot path's latest sampled cost.")
    #: the logger's own cost as last written (``_pump/_cost.py``): ``aoff/...`` tags
    cost: dict[str, float] = shown_new(dict, "The logger's own cost as last written.")
    #: how many times an axis (``axes=``) went down: written as given, counted here
    axes_back: int = 0
    #: per producer, its records whose step was below its previous record's (late or
    #: out of order): written at their own step, counted here
    late_points: dict[str, int] = shown_new(
        dict,
        "Per producer, its records whose step was below its previous record's (written at their"
        " own step, counted).",
    )
    late_records: int = shown(
        0,
        "The run's own step records whose step was below its previous one's (an iteration"
        " logged out of order, a clock gone back): written at their own step, counted.",
    )
    #: the latest staleness values (``_fold_axes.py``): the learner's policy version minus
    #: a collector's, one per ``log_collector(axes={"policy_version": v})``
    staleness: deque[float] = shown_new(
        lambda: deque(maxlen=REWARD_HISTORY),
        "The latest staleness values, oldest first: the learner's ``policy_version`` axis minus"
        " a collector's, one per ``log_collector(axes={'policy_version': v})``.",
    )

    def pipeline_time(self) -> float:
        """Seconds of the learner pipeline: H2D + train + weight sync (as the original logger)."""
        return self.h2d_time + self.train_time + self.weight_sync_time

    def steps_per_sec(self) -> float | None:
        """Throughput of the last iteration, or ``None`` when it is not known."""
        if not self.throughput_known or self.throughput_steps <= 0:
            return None
        t = self.pipeline_time()
        if not t > 0:  # NaN too: the seed writes steps/sec only for a pipeline time > 0
            return None
        return self.throughput_steps / t

    def snapshot(self) -> State:
        """A copy safe to hand to another thread for rendering (its dicts, sets and
        deques copied; ``hparams`` is shared as is, never copied into snapshots)."""
        return dataclasses.replace(
            self, **{name: copy(getattr(self, name)) for name, copy in _CONTAINERS}
        )


#: the fields whose values are containers a snapshot copies, each with its copy (a
#: deque keeps its bound); the others are immutable, or shared on purpose (``hparams``,
#: and ``panel_widths``, set on a snapshot only)
_COPIES: dict[str, Callable[[Any], Any]] = {"dict": dict, "set": set, "deque": _deque_copy}
_CONTAINERS = tuple(
    (f.name, _COPIES[kind])
    for f in dataclasses.fields(State)
    if (kind := str(f.type).split("[")[0]) in _COPIES and not str(f.type).endswith("| None")
)
