"""What the dashboard draws: the run's state, mutated only on the pump's loop.

A plain dataclass with a :meth:`State.snapshot` that copies the mutable parts, so a
display (in another thread, or another process) can render it while the fold goes on.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from ._config import HParams
from ._records import RunConfig
from ._rules import Alert

REWARD_HISTORY = 200


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

    config: RunConfig = field(default_factory=RunConfig)
    started: bool = False
    start_time: float | None = None
    training_start_time: float | None = None
    last_wall_time: float | None = None
    iteration: int = 0
    total_steps: int = 0
    buffer_size: int = 0
    buffer_target: int = 0
    train_time: float = 0.0
    wait_time: float = 0.0
    h2d_time: float = 0.0
    weight_sync_time: float = 0.0
    throughput_known: bool = False
    throughput_steps: int = 0
    latest_metrics: dict[str, float] = field(default_factory=dict)
    #: metric names shown as the caller wrote them (a drop-in's tags: ``SummaryWriter``,
    #: ``aoff.sb3``), not the original logger's ``_`` -> space, title case
    labels_as_written: bool = False
    #: the drop-in writer's tag that feeds the reward history (``_fold_writer.py``'s rule)
    reward_tag: str = ""
    reward_history: deque[float] = field(default_factory=lambda: deque(maxlen=REWARD_HISTORY))
    #: the loss the dashboard charts (the first loss key of a step's metrics, sorted) and
    #: its value at each step that logged it: the same x axis as ``reward_history``
    loss_name: str | None = None
    loss_history: deque[float] = field(default_factory=lambda: deque(maxlen=REWARD_HISTORY))
    reward_components: dict[str, float] = field(default_factory=dict)
    collector_timing: dict[str, float] = field(default_factory=dict)
    timeout_rate: float = 0.0
    terminated_rate: float = 0.0
    buffer_utilization: float = 0.0
    sync_collection: bool = False
    env_steps_per_sync: int = 0
    staging_len: int = 0
    staging_max: int = 0
    ep_length: float = 0.0
    status: str = "Initializing..."
    training_started: bool = False
    last_save: str | None = None
    finished: bool = False
    finish_title: str = "Training Summary"
    extra_summary: str = ""
    interrupted: bool = False
    steps_logged: int = 0
    #: the last media logged (``log_image``/``log_video``/``log_figure``): ``(key, step)``
    last_media: tuple[str, int] | None = None
    #: media refused at the call (over ``media_budget``; see ``_media/_calls.py``)
    media_refused: int = 0
    # carried over from an earlier session by load_state_dict (see _checkpoint.py)
    elapsed_before: float = 0.0
    dropped_before: int = 0
    # filled in by the pump's parts, not by events (invalid_values: by the fold too)
    dropped_events: int = 0
    invalid_values: int = 0
    backend_problems: dict[str, str] = field(default_factory=dict)
    #: the latest system sample (``system/cpu_percent``, ...), empty until the first one
    system: dict[str, float] = field(default_factory=dict)
    #: the run's config and final metrics (``config=``, ``log_config``): shared, as is,
    #: with the backends (BackendContext.hparams), never copied into snapshots
    hparams: HParams = field(default_factory=HParams)
    #: per ``RemoteLogger`` name (``log.remote()``); empty when the run has none
    producers: dict[str, ProducerInfo] = field(default_factory=dict)
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
    logged: set[str] = field(default_factory=set)
    #: what the run's rules saw so far (``_pump/_alerts.py``), oldest first
    alerts: tuple[Alert, ...] = ()
    #: per rule, the evaluations that raised (``_core/_watch.py``): said and counted
    rule_errors: dict[str, int] = field(default_factory=dict)
    #: alerts whose webhook or command did not complete, by why (``_pump/_actions.py``)
    alerts_undelivered: dict[str, int] = field(default_factory=dict)
    #: the hot path's latest sampled cost (``_core/_hotcost.summarize``): ``aoff/hot_path_*``
    hot_path: dict[str, float] = field(default_factory=dict)
    #: the logger's own cost as last written (``_pump/_cost.py``): ``aoff/...`` tags
    cost: dict[str, float] = field(default_factory=dict)
    #: how many times an axis (``axes=``) went down: written as given, counted here
    axes_back: int = 0
    #: per producer, its records whose step was below its previous record's (late or
    #: out of order): written at their own step, counted here
    late_points: dict[str, int] = field(default_factory=dict)
    #: the run's own step records whose step was below its previous one's (an iteration
    #: logged out of order, a clock gone back): written at their own step, counted here
    late_records: int = 0
    #: the latest staleness values (``_fold_axes.py``): the learner's policy version minus
    #: a collector's, one per ``log_collector(axes={"policy_version": v})``
    staleness: deque[float] = field(default_factory=lambda: deque(maxlen=REWARD_HISTORY))

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
        """A copy safe to hand to another thread for rendering."""
        return dataclasses.replace(
            self,
            latest_metrics=dict(self.latest_metrics),
            reward_history=deque(self.reward_history, maxlen=REWARD_HISTORY),
            loss_history=deque(self.loss_history, maxlen=REWARD_HISTORY),
            reward_components=dict(self.reward_components),
            collector_timing=dict(self.collector_timing),
            backend_problems=dict(self.backend_problems),
            system=dict(self.system),
            producers=dict(self.producers),
            logged=set(self.logged),
            hot_path=dict(self.hot_path),
            cost=dict(self.cost),
            rule_errors=dict(self.rule_errors),
            staleness=deque(self.staleness, maxlen=REWARD_HISTORY),
            late_points=dict(self.late_points),
            late_records=self.late_records,
        )
