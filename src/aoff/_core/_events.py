"""The immutable events recorded by the hot path.

An event is a plain tuple ``(kind, wall_time, *args)``: building a tuple is the cheapest
immutable record CPython has, and the hot path must stay near a microsecond. Dict
arguments are copied by the recorder, so later mutation by training code cannot change
what was logged. Values are converted to floats by the pump, not here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, NamedTuple

# kinds (small ints: compared on every fold)
START: Final = 0
STATUS: Final = 1
BUFFER_FILL: Final = 2
COLLECTOR_TIMING: Final = 3
DONE_RATES: Final = 4
BUFFER_UTIL: Final = 5
STAGING_POOL: Final = 6
COLLECTION_SYNC: Final = 7
COLLECTOR: Final = 8
EP_LENGTH: Final = 9
SAVE: Final = 10
STEP: Final = 11
TRAINING_TIMER: Final = 12
FINISH: Final = 13
HISTOGRAM: Final = 14  # (key, values: a NumPy copy, a Histogram, or a device placeholder)
SYSTEM: Final = 15  # (samples dict: made by the pump's system sampler, not the recorder)
CONFIG: Final = 16  # (values: a flat dict of JSON-safe values, see _config.py)
LOAD_STATE: Final = 17  # (values: a checked dict from state_dict(), see _checkpoint.py)
REMOTE: Final = 18  # (producer name, the producer's own event): made by the run's live
#                     server for each event a ``RemoteLogger`` sends (``aoff._channel._produce``)
# aoff.tensorboard.SummaryWriter's calls (see _adapters/_writer.py): one summary at a tag, step and
# wall time of the caller's choosing, in a run folder ``run`` ("": log_dir itself)
W_SCALAR: Final = 19  # (run, tag, value, step or None, style: 0 simple, 1 float, 2 double)
W_TEXT: Final = 20
W_HISTOGRAM: Final = 21  # (run, tag, values: a float64 NumPy copy, step, bins, max_bins)
W_HPARAMS: Final = 22
#: kinds numbered apart from the contiguous ones above, so a kind added there never
#: takes their number
EPISODES: Final = 64  # (returns: tuple, lengths: tuple): episodes that ended (log_episodes)
#: log_image/log_video/log_figure (``_media/``): the frames travel as a NumPy copy (thread
#: mode), a shared-memory block's handle (process mode) or a device placeholder; the agent
#: encodes them, never the fold
#: (key, step or None, what: "image"|"video", frames, dataformats, fps, nbytes, encoding:
#: the call's typed encoding options, ``_media/_encoding.py``)
MEDIA: Final = 65
MEDIA_REFUSED: Final = 66  # (key, what): refused at the call (over the media budget)
#: the hot path's sampled call times (``_cost.py``): made by the recorder, not a call
COST: Final = 67  # (samples: tuple of ns, span_ns, total_ns)
#: ``K`` plain steps of one run of a group at once (``_core/_groupbatch.py``): metrics only,
#: plain floats, one key sequence; made beside the group's pump, never by a call. (walls:
#: a tuple of ``K`` floats, iterations: ``K`` int64, names: the keys, values: ``K x keys``
#: float64); folded as columns by ``Folder.apply_block``
STEP_BLOCK: Final = 68
#: a step the ``STEP_BLOCK`` before it holds (the single run's agent reads a pickle of
#: plain ``log_step`` events as one block, ``_transport/_plainsteps.py``): kept so a frame
#: still holds as many events as its sender counted; folded as nothing, no call of its own
FOLDED: Final = 69
#: pickles of regular iterations (the four kinds of ``RunFold``) read as columns by the
#: single run's agent (``_transport/_plainsteps.py``): (block: a ``_core/_runblock``
#: ``RunBlock``, its events' skeleton and payloads), followed by a ``FOLDED`` marker for
#: each event after its first; folded as columns by ``Folder.apply_runblock``
RUN_BLOCK: Final = 70


class Kind(NamedTuple):
    """One kind of event: the public call that records it (for messages) and its fields
    after ``(kind, wall_time)``, in the order the recorder builds them and the fold reads
    them (``tests/test_core.py`` checks every builder against this table). ``optional``:
    fields after those, present only when the call was given them (``axes=``), so an
    event of a call without them is the same tuple as before they existed."""

    name: str
    fields: tuple[str, ...]
    optional: tuple[str, ...] = ()


#: every kind, stated once: its number, its call and its fields
KINDS: Final[dict[int, Kind]] = {
    START: Kind("start", ("status",)),
    STATUS: Kind("log_status", ("status",)),
    BUFFER_FILL: Kind("log_buffer_fill", ("current", "target")),
    COLLECTOR_TIMING: Kind("update_collector_timing", ("timing_ms",)),
    DONE_RATES: Kind("update_done_rates", ("timeout_rate", "terminated_rate")),
    BUFFER_UTIL: Kind("update_buffer_utilization", ("utilization",)),
    STAGING_POOL: Kind("update_staging_pool", ("current_len", "max_size")),
    COLLECTION_SYNC: Kind("set_collection_sync", ("enabled", "env_steps_per_sync")),
    COLLECTOR: Kind("log_collector", ("total_steps", "buffer_size", "mean_reward"), ("axes",)),
    EP_LENGTH: Kind("update_ep_length", ("length",)),
    SAVE: Kind("log_save", ("path",)),
    STEP: Kind(
        "log_step",
        (
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
        ("axes",),
    ),
    TRAINING_TIMER: Kind("start_training_timer", ()),
    FINISH: Kind("finish", ("title", "extra_summary", "interrupted")),
    HISTOGRAM: Kind("log_histogram", ("key", "values")),
    SYSTEM: Kind("system metrics", ("samples",)),
    CONFIG: Kind("log_config", ("values",)),
    LOAD_STATE: Kind("load_state_dict", ("values",)),
    REMOTE: Kind("remote", ("producer", "event")),
    W_SCALAR: Kind("add_scalar", ("run", "tag", "value", "step", "style"), ("axes",)),
    W_TEXT: Kind("add_text", ("run", "tag", "text", "step")),
    W_HISTOGRAM: Kind("add_histogram", ("run", "tag", "values", "step", "bins", "max_bins")),
    W_HPARAMS: Kind("add_hparams", ("run", "hparams", "metrics", "discrete", "step")),
    EPISODES: Kind("log_episodes", ("returns", "lengths")),
    MEDIA: Kind(
        "log_media", ("key", "step", "what", "frames", "dataformats", "fps", "nbytes", "encoding")
    ),
    MEDIA_REFUSED: Kind("log_media (refused)", ("key", "what")),
    COST: Kind("the logger's cost", ("samples", "span_ns", "total_ns")),
    STEP_BLOCK: Kind("log_step (a group's block)", ("walls", "iterations", "names", "values")),
    FOLDED: Kind("log_step (read with its block)", ()),
    RUN_BLOCK: Kind("regular iterations (read as columns)", ("block",)),
}
#: each kind's fields (``KINDS``' second column), for the readers that want only those
FIELDS: Final[dict[int, tuple[str, ...]]] = {k: kind.fields for k, kind in KINDS.items()}

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
#: a STEP event's ``axes`` (``log_step(axes=...)``): there only when given
S_AXES = 12
#: a COLLECTOR event's ``axes`` (``log_collector(axes=...)``): there only when given
C_AXES = 5

#: an event: ``(kind, wall_time, *FIELDS[kind])``; values are checked by the fold
Event = tuple[Any, ...]


def finish_event(wall_time: float, title: str, extra_summary: str, interrupted: bool) -> Event:
    """The closing event (one builder for every stop path)."""
    return (FINISH, wall_time, title, extra_summary, interrupted)


def name_of(event: Event) -> str:
    """The public call that recorded ``event`` (for messages)."""
    kind = event[0]
    if kind == MEDIA and len(event) > 4 and event[4] in ("image", "video"):
        return f"log_{event[4]}"
    known = KINDS.get(kind) if isinstance(kind, int) else None
    return repr(kind) if known is None else known.name


def steps_in(events: Iterable[Event]) -> int:
    """How many of ``events`` are steps (each becomes one record per backend)."""
    return sum(
        1 if e[0] == STEP else len(e[2]) if e[0] == STEP_BLOCK else e[2].steps
        for e in events
        if e[0] in _STEPS
    )


_STEPS = frozenset((STEP, STEP_BLOCK, RUN_BLOCK))


def calls_in(events: Iterable[Event]) -> int:
    """How many calls ``events`` stand for (a block: one a step, or a run block one an
    event it holds; their markers, ``FOLDED``: none, the block counted them)."""
    return sum(
        len(e[2]) if e[0] == STEP_BLOCK else e[2].calls if e[0] == RUN_BLOCK else e[0] != FOLDED
        for e in events
    )
