"""``RunView``: what a display may read of the run, and nothing it may change.

Why: the fold's ``State`` (``_state.py``) is a mutable dataclass with its own
bookkeeping (throughput counters, what an earlier session carried over, the total a
producer's count is added to). A display, ours or one a user writes, is handed a
snapshot of it on every frame; typed as this read-only Protocol it can read what the
dashboard shows and a type checker refuses a write or a read of the fold's bookkeeping.
The snapshot itself is unchanged (the same copy, no wrapper), so a frame costs what it
did.

Generated from ``State``'s fields made with ``shown`` and its ``SHOWN_METHODS`` by
``python -m tests.test_view``: do not edit by hand (``tests/test_view.py`` fails while
this file is out of date).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._records import RunConfig
    from ._rules import Alert
    from ._state import ProducerInfo

__all__ = ["RunView"]


class RunView(Protocol):
    """What a display is handed by :meth:`~aoff.Display.open`, ``update`` and ``close``:
    a snapshot of the run, read-only (it is safe to keep; it never changes after)."""

    @property
    def config(self) -> RunConfig:
        """The run's description (algorithm, environment, envs, iterations, ...)."""

    @property
    def started(self) -> bool:
        """The run has seen its first event."""

    @property
    def start_time(self) -> float | None:
        """Wall time of the first event (the elapsed time counts from it)."""

    @property
    def training_start_time(self) -> float | None:
        """Wall time of the first training step (the ETA counts from it)."""

    @property
    def last_wall_time(self) -> float | None:
        """Wall time of the latest event."""

    @property
    def iteration(self) -> int:
        """The latest ``log_step`` iteration."""

    @property
    def total_steps(self) -> int:
        """Environment steps so far: the run's own and every producer's latest."""

    @property
    def buffer_size(self) -> int:
        """The replay buffer's size, as the collector last told."""

    @property
    def buffer_target(self) -> int:
        """The replay buffer's capacity, as the collector last told."""

    @property
    def train_time(self) -> float:
        """The last step's train time (seconds)."""

    @property
    def wait_time(self) -> float:
        """The last step's wait time (seconds)."""

    @property
    def h2d_time(self) -> float:
        """The last step's host-to-device time (seconds)."""

    @property
    def weight_sync_time(self) -> float:
        """The last step's weight sync time (seconds)."""

    @property
    def latest_metrics(self) -> Mapping[str, float]:
        """The latest value of each training metric."""

    @property
    def labels_as_written(self) -> bool:
        """Metric names are shown as the caller wrote them (a drop-in's tags)."""

    @property
    def reward_tag(self) -> str:
        """The logged tag the reward history comes from (``""``: ``log_step``'s reward)."""

    @property
    def reward_history(self) -> Sequence[float]:
        """The mean reward at each of the last steps that logged one, oldest first."""

    @property
    def loss_name(self) -> str | None:
        """The loss the dashboard charts (the first loss key, sorted)."""

    @property
    def loss_history(self) -> Sequence[float]:
        """That loss at each of the last steps that logged it, oldest first."""

    @property
    def reward_components(self) -> Mapping[str, float]:
        """The latest value of each reward component."""

    @property
    def collector_timing(self) -> Mapping[str, float]:
        """The collector's latest timings (seconds, by name)."""

    @property
    def timeout_rate(self) -> float:
        """The share of episodes that ended by a time limit."""

    @property
    def terminated_rate(self) -> float:
        """The share of episodes that ended by termination."""

    @property
    def buffer_utilization(self) -> float:
        """How full the replay buffer is, 0 to 1."""

    @property
    def sync_collection(self) -> bool:
        """Collection is synchronous with training."""

    @property
    def env_steps_per_sync(self) -> int:
        """Environment steps between two weight syncs."""

    @property
    def staging_len(self) -> int:
        """Transitions in the staging pool."""

    @property
    def staging_max(self) -> int:
        """The staging pool's capacity."""

    @property
    def ep_length(self) -> float:
        """The mean episode length."""

    @property
    def status(self) -> str:
        """The status line (``start(status=)``, ``log_status``)."""

    @property
    def training_started(self) -> bool:
        """The first training step came."""

    @property
    def last_save(self) -> str | None:
        """What the last checkpoint save said."""

    @property
    def finished(self) -> bool:
        """The run finished."""

    @property
    def finish_title(self) -> str:
        """The summary panel's title (``finish(title=)``)."""

    @property
    def extra_summary(self) -> str:
        """Text for the summary panel (``finish(extra_summary=)``)."""

    @property
    def interrupted(self) -> bool:
        """The run was interrupted (a signal, an exception)."""

    @property
    def steps_logged(self) -> int:
        """``log_step`` calls folded."""

    @property
    def last_media(self) -> tuple[str, int] | None:
        """The last media logged: ``(key, step)``."""

    @property
    def media_refused(self) -> int:
        """Media refused at the call (over ``media_budget``)."""

    @property
    def elapsed_before(self) -> float:
        """Seconds earlier sessions of a resumed run ran (the elapsed time adds them)."""

    @property
    def dropped_events(self) -> int:
        """Events dropped by the buffer's overflow policy."""

    @property
    def invalid_values(self) -> int:
        """Values skipped as not loggable."""

    @property
    def backend_problems(self) -> Mapping[str, str]:
        """Per backend, the problem it has now."""

    @property
    def system(self) -> Mapping[str, float]:
        """The latest system sample (``system/cpu_percent``, ...)."""

    @property
    def producers(self) -> Mapping[str, ProducerInfo]:
        """Per ``RemoteLogger`` name, its steps, iteration and total steps."""

    @property
    def logged(self) -> AbstractSet[str]:
        """Which kinds of call the run has made (``"learner"``, ``"done_rates"``,
        ``"collection_sync"``, ``"collector"``): a row shows once its call came."""

    @property
    def alerts(self) -> Sequence[Alert]:
        """What the run's rules saw so far, oldest first."""

    @property
    def hot_path(self) -> Mapping[str, float]:
        """The hot path's latest sampled cost."""

    @property
    def cost(self) -> Mapping[str, float]:
        """The logger's own cost as last written."""

    @property
    def late_points(self) -> Mapping[str, int]:
        """Per producer, its records whose step was below its previous record's (written at
        their own step, counted)."""

    @property
    def late_records(self) -> int:
        """The run's own step records whose step was below its previous one's (an iteration
        logged out of order, a clock gone back): written at their own step, counted."""

    @property
    def staleness(self) -> Sequence[float]:
        """The latest staleness values, oldest first: the learner's ``policy_version`` axis
        minus a collector's, one per ``log_collector(axes={'policy_version': v})``."""

    def pipeline_time(self) -> float:
        """Seconds of the learner pipeline: H2D + train + weight sync (as the original logger)."""

    def steps_per_sec(self) -> float | None:
        """Throughput of the last iteration, or ``None`` when it is not known."""
