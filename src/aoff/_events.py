"""The immutable events recorded by the hot path.

An event is a plain tuple ``(kind, seq, wall_time, *args)``: building a tuple is the
cheapest immutable record CPython has, and the hot path must stay near a microsecond.
``seq`` comes from one shared :func:`itertools.count` (atomic under the GIL) so the pump
can tell exactly how many events were accepted versus drained, which is how dropped
events are counted without a lock. Dict arguments are copied by the caller-side
recorder, so later mutation by training code cannot change what was logged.
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
#                    train_time, wait_time, h2d_time, weight_sync_time, extra_info)
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
