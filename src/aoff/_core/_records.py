"""What the backends receive: one step's scalar record, and the run's fixed config.

Kept apart from the dashboard state and the fold so that a backend (or a test) imports
two small frozen types and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from ._histogram_data import Histogram


class Scalars(tuple[tuple[str, float], ...]):
    """A record's ``(tag, value)`` pairs as the fold makes them: a plain tuple of pairs
    to every reader, that also keeps the two columns it was zipped from, ``tags`` and
    ``values``, so the hot readers (TensorBoard's encoder, the run summary) take them as
    they are instead of splitting 30 pairs again for every record. The fold hands out one
    ``tags`` tuple per tag sequence (the same object while the tags stay the same), so a
    reader may cache its work per sequence and find it by identity.

    Any other tuple of pairs is still a valid :attr:`StepRecord.scalars`: readers fall
    back to splitting it (:func:`columns`).
    """

    tags: tuple[str, ...]
    values: tuple[float, ...]


def scalars_of(tags: tuple[str, ...], values: tuple[float, ...]) -> Scalars:
    """The pairs of two columns of the same length (the fold's; not checked here)."""
    # the fold builds both columns together; strict=True cost ~0.3 us more for 32 pairs
    pairs = _new_tuple(Scalars, zip(tags, values, strict=False))
    pairs.tags = tags
    pairs.values = values
    return pairs


_new_tuple = tuple.__new__


def columns(
    scalars: tuple[tuple[str, float], ...],
) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """``(tags, values)`` of a non-empty tuple of pairs: kept by the fold's
    :class:`Scalars`, else split here."""
    if type(scalars) is Scalars:
        return scalars.tags, scalars.values
    tags, values = zip(*scalars, strict=True)
    return tags, values


V = TypeVar("V")


class PerTags(Generic[V]):
    """What a reader makes once per tag sequence (``make(tags)``), kept for the next
    records with the same tags: the last sequence is found by identity (the fold shares
    one ``tags`` tuple while they repeat, see :class:`Scalars`), others by equality. At
    most ``limit`` sequences are kept (tags that change every record: it starts over).
    The last hit is one assignment, so threads may share an instance."""

    __slots__ = ("_kept", "_last", "_limit", "_make")

    def __init__(self, make: Callable[[tuple[str, ...]], V], limit: int = 256) -> None:
        self._make = make
        self._limit = limit
        self._kept: dict[tuple[str, ...], V] = {}
        self._last: tuple[tuple[str, ...], V] | None = None

    def __len__(self) -> int:
        return len(self._kept)

    def values(self) -> list[V]:
        return list(self._kept.values())

    def get(self, tags: tuple[str, ...]) -> V:
        last = self._last
        if last is not None and last[0] is tags:
            return last[1]
        kept = self._kept
        try:
            got = kept[tags]
        except KeyError:
            if len(kept) >= self._limit:
                kept.clear()
            got = kept[tags] = self._make(tags)
        self._last = (tags, got)
        return got


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step's scalars, in the order the original logger wrote them.

    ``scalars`` is a tuple of ``(tag, value)`` pairs rather than a dict so that the rare
    case of two inputs mapping to one tag is written twice, exactly like the original logger's
    ``add_scalar`` loop did (a dict view, :meth:`as_dict`, keeps the last one, like W&B).
    """

    step: int
    iteration: int
    wall_time: float
    scalars: tuple[tuple[str, float], ...]
    #: the distributions logged since the previous step (``log_histogram``); their
    #: min/max/mean/percentiles are in ``scalars`` too, for backends without histograms
    histograms: tuple[Histogram, ...] = ()
    #: the :class:`~aoff.RemoteLogger` that logged this step (``None``: the run's own
    #: logger); its ``step`` and ``iteration`` are that producer's own
    producer: str | None = None
    #: ``aoff.tensorboard.SummaryWriter``'s records (one a call, ``_core/_fold_writer``):
    #: True, and its ``step`` is the call's ``global_step`` (it may go back) ...
    writer: bool = False
    #: ... the run folder under ``log_dir`` (``""``: ``log_dir`` itself; ``add_scalars`` and
    #: ``add_hparams`` write into others), ...
    run: str = ""
    #: ... ``add_text``'s ``(tag, text)`` pairs, ...
    texts: tuple[tuple[str, str], ...] = ()
    #: ... ``add_scalar(new_style=True)``: the scalars are written as tensors (1: float32,
    #: 2: float64 with ``double_precision=True``) rather than ``simple_value``s, ...
    tensor_style: int = 0
    #: ... and ``add_hparams``' hyperparameters (its metrics are ``scalars``)
    hparams: WriterHParams | None = None

    def as_dict(self) -> dict[str, float]:
        """The record's scalars as ``{tag: value}``."""
        return dict(self.scalars)


@dataclass(frozen=True, slots=True)
class MediaRecord:
    """One image or video, decoded from the call's frames by the agent's media encoder
        (``_media/_encoder.py``), with the encodings the backends asked for.

        ``shape`` is the frames' ``(T, H, W, C)`` (``T == 1`` for an image; ``C`` 1, 3 or 4);
        ``encoded`` maps a format (``"png"``, ``"gif"``, ``"mp4"``) to its bytes. The frames
        themselves are freed once every backend that took the record wrote it (or lost it,
    counted there); the media budget counts them until then.
    """

    key: str
    step: int
    wall_time: float
    what: str  # "image" | "video"
    shape: tuple[int, int, int, int]
    fps: float
    encoded: dict[str, bytes]


class SeedDefault(int):
    """A run-description default the user did not give: the original logger's
    ``max_iterations=1500`` and ``num_envs=4096``. It is kept where that logger kept it
    (the face's attributes, the W&B and TensorBoard config), and never shown as a fact
    (no ``iter 880/1500``, ETA, ``Envs 4,096`` or ``Iterations: 1536/1500``)."""

    __slots__ = ()


#: the original logger's defaults, as given by no one
SEED_MAX_ITERATIONS = SeedDefault(1500)
SEED_NUM_ENVS = SeedDefault(4096)


@dataclass(slots=True)
class RunConfig:
    """The constructor arguments the dashboard and backends need (never changes)."""

    algo_name: str = "RL"
    max_iterations: int = 1500
    num_envs: int = 4096
    env_name: str = ""
    obs_dim: int = 0
    action_dim: int = 0


@dataclass(frozen=True, slots=True)
class WriterHParams:
    """``SummaryWriter.add_hparams``: what TensorBoard's HParams plugin needs besides the
    metric values (which are the record's scalars)."""

    #: the hyperparameters, checked by the call (bool, int, float or str; None skipped)
    values: dict[str, Any]
    #: the metric names, in the call's order (a metric whose value was skipped is still
    #: named in the experiment, as torch does)
    metrics: tuple[str, ...]
    #: ``hparam_domain_discrete``: the values each named hyperparameter can take
    discrete: dict[str, list[Any]]


#: the fields :func:`step_record` is given; the others get their declared defaults
_GIVEN = ("step", "iteration", "wall_time", "scalars", "histograms")
_fields = fields(StepRecord)
if tuple(f.name for f in _fields[: len(_GIVEN)]) != _GIVEN or any(
    f.default is MISSING for f in _fields[len(_GIVEN) :]
):  # pragma: no cover - a field moved, or one without a plain default was added
    raise AssertionError("StepRecord's fields changed: update step_record() with them")
_set_step, _set_iteration, _set_wall, _set_scalars, _set_histograms = (
    StepRecord.__dict__[name].__set__ for name in _GIVEN
)
_set_defaults = tuple(
    (StepRecord.__dict__[f.name].__set__, f.default) for f in _fields[len(_GIVEN) :]
)
_new_record = object.__new__


def step_record(
    step: int,
    iteration: int,
    wall_time: float,
    scalars: tuple[tuple[str, float], ...],
    histograms: tuple[Histogram, ...] = (),
) -> StepRecord:
    """``StepRecord(step, iteration, wall_time, scalars, histograms)`` at half the cost:
    the fold makes one a step, and a frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` for each of its 11 fields (~1.7 µs); this sets its slots
    directly, the others to their declared defaults."""
    rec: StepRecord = _new_record(StepRecord)
    _set_step(rec, step)
    _set_iteration(rec, iteration)
    _set_wall(rec, wall_time)
    _set_scalars(rec, scalars)
    _set_histograms(rec, histograms)
    for set_field, default in _set_defaults:
        set_field(rec, default)
    return rec
