"""What the backends receive: the records the fold builds (a tagged union, :data:`Record`,
of a step, a ``SummaryWriter`` call and texts), an image or video, and the run's config.

Kept apart from the dashboard state and the fold so that a backend (or a test) imports
a few small frozen types and nothing else. Each record is checked when it is built
(h11's rule: a bad field is a ``ValueError`` at construction), so a backend ``match``es
on the record's type and trusts its fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Generic, TypeVar

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


def _bad(record: str, name: str, value: object, want: str) -> ValueError:
    return ValueError(f"{record}.{name} must be {want}, got {value!r:.60}")


def _check_int(record: str, name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad(record, name, value, "an int")


def _check_time(record: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, float | int):
        raise _bad(record, "wall_time", value, "a float")


def _check_name(record: str, name: str, value: object) -> None:
    if type(value) is not str:
        raise _bad(record, name, value, "a str")


def _check_producer(record: str, value: object) -> None:
    if value is not None and type(value) is not str:
        raise _bad(record, "producer", value, "None or a str")


def _check_scalars(record: str, scalars: object) -> None:
    """A tuple of ``(str, float)`` pairs; the fold's own :class:`Scalars` are made from
    values it checked, so only their type is looked at (one a step, on the hot path)."""
    if type(scalars) is Scalars:
        return
    if not isinstance(scalars, tuple):
        raise _bad(record, "scalars", scalars, "a tuple of (tag, value) pairs")
    for pair in scalars:
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or type(pair[0]) is not str
            or isinstance(pair[1], bool)
            or not isinstance(pair[1], float | int)
        ):
            raise _bad(record, "scalars", pair, "(str, float) pairs")


def _check_histograms(record: str, histograms: object) -> None:
    if not isinstance(histograms, tuple) or not all(isinstance(h, Histogram) for h in histograms):
        raise _bad(record, "histograms", histograms, "a tuple of Histogram")


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step's scalars, in the order the original logger wrote them: the fold's record
    of a ``log_step`` (the run's own, or a :class:`~aoff.RemoteLogger`'s).

    ``scalars`` is a tuple of ``(tag, value)`` pairs rather than a dict so that the rare
    case of two inputs mapping to one tag is written twice, exactly like the original logger's
    ``add_scalar`` loop did (a dict view, :meth:`as_dict`, keeps the last one, like W&B).

    Checked when built: a field of the wrong type is a ``ValueError`` here, never a
    surprise in a backend.
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

    def __post_init__(self) -> None:
        _check_int("StepRecord", "step", self.step)
        _check_int("StepRecord", "iteration", self.iteration)
        _check_time("StepRecord", self.wall_time)
        _check_scalars("StepRecord", self.scalars)
        if self.histograms:
            _check_histograms("StepRecord", self.histograms)
        _check_producer("StepRecord", self.producer)

    def as_dict(self) -> dict[str, float]:
        """The record's scalars as ``{tag: value}``."""
        return dict(self.scalars)


#: ``add_scalar(new_style=...)``: how a writer record's scalars are written to TensorBoard
#: (0: ``simple_value``; 1: a float32 tensor; 2: a float64 one, ``double_precision=True``)
TENSOR_STYLES = (0, 1, 2)


@dataclass(frozen=True, slots=True)
class WriterRecord:
    """One call of ``aoff.tensorboard.SummaryWriter`` that writes numbers (``add_scalar``,
    ``add_scalars``' one run folder, ``add_histogram``, ``add_hparams``): a record of its
    own at the call's ``global_step`` (which may go back), as torch writes one ``Event`` a
    call. Checked when built (a bad field is a ``ValueError``)."""

    step: int
    wall_time: float
    scalars: tuple[tuple[str, float], ...] = ()
    histograms: tuple[Histogram, ...] = ()
    #: the run folder under ``log_dir`` (``""``: ``log_dir`` itself; ``add_scalars`` and
    #: ``add_hparams`` write into others)
    run: str = ""
    #: ``add_scalar(new_style=True)``: one of :data:`TENSOR_STYLES`
    tensor_style: int = 0
    #: ``add_hparams``' hyperparameters (its metrics are ``scalars``)
    hparams: WriterHParams | None = None
    #: the producer (a forked child's writer) that made the call; ``None``: the run's own
    producer: str | None = None

    def __post_init__(self) -> None:
        _check_int("WriterRecord", "step", self.step)
        _check_time("WriterRecord", self.wall_time)
        _check_scalars("WriterRecord", self.scalars)
        if self.histograms:
            _check_histograms("WriterRecord", self.histograms)
        _check_name("WriterRecord", "run", self.run)
        if self.tensor_style not in TENSOR_STYLES or type(self.tensor_style) is not int:
            raise _bad("WriterRecord", "tensor_style", self.tensor_style, "0, 1 or 2")
        if self.hparams is not None and type(self.hparams) is not WriterHParams:
            raise _bad("WriterRecord", "hparams", self.hparams, "None or a WriterHParams")
        _check_producer("WriterRecord", self.producer)

    @property
    def iteration(self) -> int:
        """A writer's call has one step, its ``global_step``: the line files' ``iteration``."""
        return self.step

    def as_dict(self) -> dict[str, float]:
        """The record's scalars as ``{tag: value}``."""
        return dict(self.scalars)


@dataclass(frozen=True, slots=True)
class TextRecord:
    """Texts at a step: ``SummaryWriter.add_text``'s, or one of the run's alerts (tag
    ``aoff/alerts``, ``aoff.rules``), which every backend that takes texts writes in
    order with the steps. Checked when built (a bad field is a ``ValueError``).

    It carries no numbers: ``scalars`` and ``histograms`` are empty, so that what reads
    the numbers of every record (the run summary, the rules, a test's backend) reads a
    text record as one without any."""

    scalars: ClassVar[tuple[tuple[str, float], ...]] = ()
    histograms: ClassVar[tuple[Histogram, ...]] = ()

    step: int
    wall_time: float
    #: ``(tag, text)`` pairs
    texts: tuple[tuple[str, str], ...]
    #: the run folder under ``log_dir`` (``""``: ``log_dir`` itself)
    run: str = ""
    #: the producer (a forked child's writer) that made the call; ``None``: the run's own
    producer: str | None = None

    def __post_init__(self) -> None:
        _check_int("TextRecord", "step", self.step)
        _check_time("TextRecord", self.wall_time)
        if not isinstance(self.texts, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and type(p[0]) is str and type(p[1]) is str
            for p in self.texts
        ):
            raise _bad("TextRecord", "texts", self.texts, "a tuple of (tag, text) str pairs")
        _check_name("TextRecord", "run", self.run)
        _check_producer("TextRecord", self.producer)

    @property
    def iteration(self) -> int:
        """A text has one step: the line files' ``iteration``."""
        return self.step

    def as_dict(self) -> dict[str, float]:
        """No scalars: ``{}``."""
        return {}


#: what a backend's ``write`` receives, in order: a tagged union its code ``match``es
#: on (``case StepRecord(): ...``); images and videos come apart, to ``write_media``
Record = StepRecord | WriterRecord | TextRecord


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


#: the fields :func:`step_record` sets; ``producer`` is ``None`` (the fold marks a
#: producer's record with ``dataclasses.replace``)
_GIVEN = ("step", "iteration", "wall_time", "scalars", "histograms", "producer")
if tuple(f.name for f in fields(StepRecord)) != _GIVEN:  # pragma: no cover - a field changed
    raise AssertionError("StepRecord's fields changed: update step_record() with them")
_set_step, _set_iteration, _set_wall, _set_scalars, _set_histograms, _set_producer = (
    StepRecord.__dict__[name].__set__ for name in _GIVEN
)
_new_record = object.__new__


def step_record(
    step: int,
    iteration: int,
    wall_time: float,
    scalars: tuple[tuple[str, float], ...],
    histograms: tuple[Histogram, ...] = (),
) -> StepRecord:
    """The fold's own ``StepRecord`` of a step, at half the cost of its ``__init__``
    (a frozen dataclass sets each field through ``object.__setattr__``): its slots set
    directly. What ``__post_init__`` would check is checked here too, except the
    pairs: ``scalars`` are the fold's :class:`Scalars`, made from values it checked,
    and its histograms its own reductions."""
    if type(step) is not int:
        _check_int("StepRecord", "step", step)
    if type(iteration) is not int:
        _check_int("StepRecord", "iteration", iteration)
    if type(wall_time) is not float:
        _check_time("StepRecord", wall_time)
    if type(scalars) is not Scalars:
        _check_scalars("StepRecord", scalars)
    rec: StepRecord = _new_record(StepRecord)
    _set_step(rec, step)
    _set_iteration(rec, iteration)
    _set_wall(rec, wall_time)
    _set_scalars(rec, scalars)
    _set_histograms(rec, histograms)
    _set_producer(rec, None)
    return rec
