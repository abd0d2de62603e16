"""The immutable events recorded by the hot path.

An event is a plain tuple ``(kind, wall_time, *args)``: building a tuple is the cheapest
immutable record CPython has, and the hot path must stay near a microsecond. Dict
arguments are copied by the recorder, so later mutation by training code cannot change
what was logged. Values are converted to floats by the pump, not here.
"""

from __future__ import annotations

from typing import Final

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
)

Event = tuple[object, ...]


def name_of(event: Event) -> str:
    """The public call that recorded ``event`` (for messages)."""
    kind = event[0]
    return NAMES[kind] if isinstance(kind, int) and 0 <= kind < len(NAMES) else repr(kind)
