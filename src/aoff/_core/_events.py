"""The immutable events recorded by the hot path.

An event is a plain tuple ``(kind, wall_time, *args)``: building a tuple is the cheapest
immutable record CPython has, and the hot path must stay near a microsecond. Dict
arguments are copied by the recorder, so later mutation by training code cannot change
what was logged. Values are converted to floats by the pump, not here.
"""

from __future__ import annotations

from typing import Any, Final

# kinds (small ints: compared on every fold)
START: Final = 0  # (status,)
STATUS: Final = 1  # (status,)
BUFFER_FILL: Final = 2  # (current, target)
COLLECTOR_TIMING: Final = 3  # (timing_ms dict,)
DONE_RATES: Final = 4  # (timeout_rate, terminated_rate)
BUFFER_UTIL: Final = 5  # (utilization,)
STAGING_POOL: Final = 6  # (current_len, max_size)
COLLECTION_SYNC: Final = 7  # (enabled, env_steps_per_sync)
COLLECTOR: Final = 8  # (total_steps, buffer_size, mean_reward)
EP_LENGTH: Final = 9  # (length,)
SAVE: Final = 10  # (path,)
STEP: Final = 11  # (iteration, metrics, reward, reward_metrics, reward_components,
#                    train_time, wait_time, h2d_time, weight_sync_time,
#                    throughput_steps or None when extra_info was not given)
TRAINING_TIMER: Final = 12  # ()
FINISH: Final = 13  # (title, extra_summary, interrupted)
HISTOGRAM: Final = 14  # (key, values: a NumPy copy, a Histogram, or a device placeholder)
SYSTEM: Final = 15  # (samples dict: made by the pump's system sampler, not the recorder)
CONFIG: Final = 16  # (values: a flat dict of JSON-safe values, see _config.py)
LOAD_STATE: Final = 17  # (values: a checked dict from state_dict(), see _checkpoint.py)
REMOTE: Final = 18  # (producer name, the producer's own event): made by the run's live
#                     server for each event a ``RemoteLogger`` sends (``aoff._channel._produce``)
# aoff.tensorboard.SummaryWriter's calls (see _adapters/_writer.py): one summary at a tag, step and
# wall time of the caller's choosing, in a run folder ``run`` ("": log_dir itself)
W_SCALAR: Final = 19  # (run, tag, value, step or None, style: 0 simple, 1 float, 2 double)
W_TEXT: Final = 20  # (run, tag, text, step or None)
W_HISTOGRAM: Final = 21  # (run, tag, values: a float64 NumPy copy, step, bins, max_bins)
W_HPARAMS: Final = 22  # (run, hparams dict, metrics dict, discrete dict, step or None)

NAMES: Final = (
    "start",
    "log_status",
    "log_buffer_fill",
    "update_collector_timing",
    "update_done_rates",
    "update_buffer_utilization",
    "update_staging_pool",
    "set_collection_sync",
    "log_collector",
    "update_ep_length",
    "log_save",
    "log_step",
    "start_training_timer",
    "finish",
    "log_histogram",
    "system metrics",
    "log_config",
    "load_state_dict",
    "remote",
    "add_scalar",
    "add_text",
    "add_histogram",
    "add_hparams",
)

#: each kind's fields after ``(kind, wall_time)``, named once: the recorder builds events
#: in this order and the fold reads them by these positions (``tests/test_core.py``
#: checks every builder against this table).
FIELDS: Final[dict[int, tuple[str, ...]]] = {
    START: ("status",),
    STATUS: ("status",),
    BUFFER_FILL: ("current", "target"),
    COLLECTOR_TIMING: ("timing_ms",),
    DONE_RATES: ("timeout_rate", "terminated_rate"),
    BUFFER_UTIL: ("utilization",),
    STAGING_POOL: ("current_len", "max_size"),
    COLLECTION_SYNC: ("enabled", "env_steps_per_sync"),
    COLLECTOR: ("total_steps", "buffer_size", "mean_reward"),
    EP_LENGTH: ("length",),
    SAVE: ("path",),
    STEP: (
        "iteration",
        "metrics",
        "reward",
        "reward_metrics",
        "reward_components",
        "train_time",
        "wait_time",
        "h2d_time",
        "weight_sync_time",
        "throughput",
    ),
    TRAINING_TIMER: (),
    FINISH: ("title", "extra_summary", "interrupted"),
    HISTOGRAM: ("key", "values"),
    SYSTEM: ("samples",),
    CONFIG: ("values",),
    LOAD_STATE: ("values",),
    REMOTE: ("producer", "event"),
    W_SCALAR: ("run", "tag", "value", "step", "style"),
    W_TEXT: ("run", "tag", "text", "step"),
    W_HISTOGRAM: ("run", "tag", "values", "step", "bins", "max_bins"),
    W_HPARAMS: ("run", "hparams", "metrics", "discrete", "step"),
}

#: kinds numbered apart from the contiguous ones above (named in ``EXTRA_NAMES``), so a
#: kind added there never takes their number
EPISODES: Final = 64  # (returns: tuple, lengths: tuple): episodes that ended (log_episodes)
#: log_image/log_video/log_figure (``_media/``): the frames travel as a NumPy copy (thread
#: mode), a shared-memory block's handle (process mode) or a device placeholder; the agent
#: encodes them, never the fold
MEDIA: Final = 65  # (key, step or None, what: "image"|"video", frames, dataformats, fps, nbytes)
MEDIA_REFUSED: Final = 66  # (key, what): refused at the call (over the media budget)
#: the hot path's sampled call times (``_cost.py``): made by the recorder, not a call
COST: Final = 67  # (samples: tuple of ns, span_ns, total_ns)
EXTRA_NAMES: Final[dict[int, str]] = {
    EPISODES: "log_episodes",
    MEDIA: "log_media",
    MEDIA_REFUSED: "log_media (refused)",
    COST: "the logger's cost",
}
FIELDS[EPISODES] = ("returns", "lengths")
FIELDS[MEDIA] = ("key", "step", "what", "frames", "dataformats", "fps", "nbytes")
FIELDS[MEDIA_REFUSED] = ("key", "what")
FIELDS[COST] = ("samples", "span_ns", "total_ns")

KIND = 0
WALL = 1
#: positions of a STEP event's fields
(
    S_ITERATION,
    S_METRICS,
    S_REWARD,
    S_REWARD_METRICS,
    S_COMPONENTS,
    S_TRAIN_TIME,
    S_WAIT_TIME,
    S_H2D_TIME,
    S_WEIGHT_SYNC_TIME,
    S_THROUGHPUT,
) = range(2, 12)

#: an event: ``(kind, wall_time, *FIELDS[kind])``; values are checked by the fold
Event = tuple[Any, ...]


def finish_event(wall_time: float, title: str, extra_summary: str, interrupted: bool) -> Event:
    """The closing event (one builder for every stop path)."""
    return (FINISH, wall_time, title, extra_summary, interrupted)


def name_of(event: Event) -> str:
    """The public call that recorded ``event`` (for messages)."""
    kind = event[0]
    if isinstance(kind, int) and 0 <= kind < len(NAMES):
        return NAMES[kind]
    if kind == MEDIA and len(event) > 4 and event[4] in ("image", "video"):
        return f"log_{event[4]}"
    return EXTRA_NAMES.get(kind, repr(kind)) if isinstance(kind, int) else repr(kind)


def steps_in(events: list[Event]) -> int:
    """How many of ``events`` are steps (each becomes one record per backend)."""
    return sum(1 for e in events if e[0] == STEP)
