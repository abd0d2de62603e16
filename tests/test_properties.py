"""Property: for any call sequence, bad input included, the pump survives and writes
exactly what a plain synchronous fold of the same calls writes.

The reference below is written from ``seed-behaviour.md`` (the seed's record layout) and
``docs/reference/input-handling.md`` (what aoff does with inputs the seed would have crashed on),
deliberately without importing anything from ``aoff._core._state`` or ``aoff._core._keys``: it is a
second, straightforward implementation, so a bug in the fold cannot hide in both.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from aoff._display._dashboard import Dashboard
from aoff.testing import MemoryBackend, probe

from .conftest import make_logger, pump_thread
from .faulty import number_path  # noqa: F401 - a fixture

I64 = (-(2**63), 2**63 - 1)
ALIASES = {
    "surrogate_loss": "loss/policy_loss",
    "value_loss": "loss/value_loss",
    "entropy": "policy/entropy",
    "kl": "ppo/approx_kl",
}


class Bad:
    """Marker for a value the reference cannot use (counted as one invalid value)."""


BAD = Bad()


def ref_float(v: object) -> float | Bad:
    """docs/reference/input-handling.md: float as is; bool, int, NumPy numbers converted;
    else bad."""
    if isinstance(v, bool | int | float | np.number):
        try:
            return float(v)
        except OverflowError:  # an int beyond the float range
            return BAD
    return BAD


def ref_int(v: object) -> int | Bad:
    """Iterations, step totals, sizes: a finite number that fits a 64-bit int."""
    if type(v) is int:
        return v if I64[0] <= v <= I64[1] else BAD
    f = ref_float(v)
    if isinstance(f, Bad) or not math.isfinite(f):
        return BAD
    i = int(f)
    return i if I64[0] <= i <= I64[1] else BAD


def valid_key(k: object) -> bool:
    if type(k) is not str:
        return False
    try:
        k.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class Reference:
    """The synchronous fold: one method per public call, records as (step, it, scalars)."""

    total_steps: int = 0
    timeout_rate: float = 0.0
    terminated_rate: float = 0.0
    ep_length: float = 0.0
    collector_timing: dict[str, float] = field(default_factory=dict)
    records: list[tuple[int, int, list[tuple[str, float]]]] = field(default_factory=list)
    invalid: int = 0
    problems: set[tuple[str, object]] = field(default_factory=set)  # (argument, key)

    def bad(self, argument: str, key: object) -> None:
        self.invalid += 1
        self.problems.add((argument, key))

    def num(self, argument: str, v: object, default: float = 0.0) -> float:
        f = ref_float(v)
        if isinstance(f, Bad):
            self.bad(argument, None)
            return default
        return f

    def int_(self, argument: str, v: object) -> int:
        i = ref_int(v)
        if isinstance(i, Bad):
            self.bad(argument, None)
            return 0
        return i

    def dict_(self, argument: str, d: dict[Any, Any] | None) -> dict[str, float]:
        out: dict[str, float] = {}
        for k, v in (d or {}).items():
            if not valid_key(k):
                self.bad(argument, k)
                continue
            f = ref_float(v)
            if isinstance(f, Bad):
                self.bad(argument, k)
                continue
            out[k] = f
        return out

    # -- the calls ----------------------------------------------------------------------
    def update_collector_timing(self, d: dict[Any, Any]) -> None:
        self.collector_timing.update(self.dict_("timing", d))

    def update_done_rates(self, a: object, b: object) -> None:
        self.timeout_rate = self.num("timeout_rate", a)
        self.terminated_rate = self.num("terminated_rate", b)

    def log_collector(self, total: object, size: object, mean_reward: object = 0.0) -> None:
        self.total_steps = self.int_("total_steps", total)
        self.int_("buffer_size", size)
        self.num("mean_reward", mean_reward)

    def update_ep_length(self, v: object) -> None:
        self.ep_length = self.num("ep_length", v)

    def log_buffer_fill(self, cur: object, tgt: object) -> None:
        self.int_("fill_current", cur)
        self.int_("fill_target", tgt)

    def update_buffer_utilization(self, u: object) -> None:
        self.num("utilization", u)

    def update_staging_pool(self, n: object, m: object) -> None:
        self.int_("staging_len", n)
        self.int_("staging_max", m)

    def set_collection_sync(self, enabled: object, n: object = 0) -> None:
        self.int_("env_steps_per_sync", n)

    def log_status(self, s: str) -> None:
        pass

    def log_save(self, s: str) -> None:
        pass

    def log_step(
        self,
        iteration: object,
        metrics: dict[Any, Any] | None = None,
        reward: object = None,
        reward_metrics: dict[Any, Any] | None = None,
        reward_components: dict[Any, Any] | None = None,
        train_time: object = 0.0,
        wait_time: object = 0.0,
        learner_incremental_h2d_time: object = 0.0,
        weight_sync_time: object = 0.0,
        extra_info: dict[str, Any] | None = None,
    ) -> None:
        it = self.int_("iteration", iteration)
        m = self.dict_("metrics", metrics)
        for legacy, canonical in ALIASES.items():
            if legacy in m and canonical in m:
                del m[legacy]
        r: float | None = None
        if reward is not None:
            f = ref_float(reward)
            if isinstance(f, Bad):
                self.bad("reward", None)  # skipped: no reward/mean
            else:
                r = f
        rm = self.dict_("reward_metrics", reward_metrics)
        rc = self.dict_("reward_components", reward_components)
        train = self.num("train_time", train_time)
        wait = self.num("wait_time", wait_time)
        h2d = self.num("h2d_time", learner_incremental_h2d_time)
        sync = self.num("weight_sync_time", weight_sync_time)
        throughput = 0
        if extra_info is not None:
            tp = extra_info.get("throughput_steps", 0)
            if tp:  # absent, 0 or None: no throughput
                throughput = self.int_("throughput_steps", tp)

        step = self.total_steps if self.total_steps > 0 else it
        out: list[tuple[str, float]] = [
            ("axis/iteration", float(it)),
            ("axis/env_steps_total", float(step)),
        ]
        out += [(k if "/" in k else "train/" + k, v) for k, v in m.items()]
        if r is not None:
            out.append(("reward/mean", r))
        for d in (rm, rc):
            out += [(k if k.startswith("reward/") else "reward/" + k, v) for k, v in d.items()]
        if self.ep_length > 0:
            out.append(("episode/length", self.ep_length))
        out += [
            ("episode/timeout_rate", self.timeout_rate),
            ("episode/terminated_rate", self.terminated_rate),
            ("timing/learner_wait_ms", wait * 1000),
            ("timing/learner_incremental_h2d_ms", h2d * 1000),
            ("timing/learner_train_ms", train * 1000),
            ("timing/learner_weight_sync_ms", sync * 1000),
        ]
        out += [("timing/collector_" + k, v) for k, v in self.collector_timing.items()]
        pipeline = h2d + train + sync
        if extra_info is not None and throughput > 0 and pipeline > 0:
            out.append(("perf/steps_per_sec", throughput / pipeline))
        out.append(("perf/iter_ms", pipeline * 1000))
        self.records.append((step, it, out))


# -- strategies ---------------------------------------------------------------------------
good_keys = st.sampled_from(
    [
        "q_loss",
        "alpha",
        "loss/actor",
        "entropy",
        "policy/entropy",
        "kl",
        "ppo/approx_kl",
        "value_loss",
        "loss/value_loss",
        "reward/success",
        "dist",
        "损失",
        "é/ü",
        "🚀",
        "",
    ]
)
bad_keys = st.sampled_from([1, 2.5, None, ("t",), b"k", "lone\ud800surrogate"])
keys = st.one_of(good_keys, good_keys, good_keys, bad_keys)

special_floats = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e308, -1e-300])
good_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    special_floats,
    st.floats(0.0001, 10.0),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.floats(width=32).map(np.float32),
    st.integers(-(2**53), 2**53).map(np.int64),
)
bad_values = st.one_of(
    st.sampled_from([None, "1.5", "nan", b"x", [1.0], {"a": 1}, 10**400]),
    st.builds(object),
)
values = st.one_of(good_values, good_values, good_values, bad_values)
times = st.one_of(special_floats, st.floats(0.0, 1.0), values)
dicts = st.dictionaries(keys, values, max_size=6)
ints = st.one_of(st.integers(-5, 10**6), st.integers(-(2**70), 2**70), good_values, bad_values)


@st.composite
def log_step_calls(draw: st.DrawFn) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    kw: dict[str, Any] = {}
    for name, strat in (
        ("metrics", dicts),
        ("reward", values),
        ("reward_metrics", dicts),
        ("reward_components", dicts),
        ("train_time", times),
        ("wait_time", times),
        ("learner_incremental_h2d_time", times),
        ("weight_sync_time", times),
        (
            "extra_info",
            st.one_of(
                st.fixed_dictionaries({"throughput_steps": st.integers(1, 10**6)}),
                st.dictionaries(st.just("throughput_steps"), ints, max_size=1),
            ),
        ),
    ):
        if draw(st.booleans()):
            kw[name] = draw(strat)
    return ("log_step", (draw(ints),), kw)


def call(name: str, *arg_strats: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.tuples(st.just(name), st.tuples(*arg_strats), st.just({}))


misuse = st.one_of(  # cheap to detect on the hot path: TypeError, nothing recorded
    st.tuples(
        st.just("log_step"),
        st.tuples(st.integers(0, 9)),
        st.sampled_from(["metrics", "reward_metrics", "reward_components", "extra_info"]).flatmap(
            lambda arg: st.fixed_dictionaries({arg: st.sampled_from([[1.0], "abc", (1, 2), 3.0])})
        ),
    ),
    call("update_collector_timing", st.sampled_from([[("a", 1.0)], "abc", None, 3])),
)

calls = st.lists(
    st.one_of(
        log_step_calls(),
        log_step_calls(),
        log_step_calls(),
        log_step_calls(),
        call("update_collector_timing", dicts),
        call("update_done_rates", values, values),
        call("log_collector", ints, ints, values),
        call("update_ep_length", values),
        call("log_buffer_fill", ints, ints),
        call("update_buffer_utilization", values),
        call("update_staging_pool", ints, ints),
        call("set_collection_sync", st.booleans(), ints),
        call("log_status", st.text(max_size=20)),
        call("log_save", st.text(max_size=20)),
        misuse,
    ),
    min_size=5,
    max_size=40,
)


def is_misuse(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    if name == "update_collector_timing":
        return not isinstance(args[0], dict)
    if name == "log_step":
        return any(
            k in ("metrics", "reward_metrics", "reward_components", "extra_info")
            and v is not None
            and not isinstance(v, dict)
            for k, v in kwargs.items()
        )
    return False


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.usefixtures("number_path")
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=calls)
@example(  # a NaN pipeline time: the seed writes no steps/sec (NaN is not > 0)
    sequence=[("log_step", (1,), {"train_time": math.nan, "extra_info": {"throughput_steps": 5}})]
)
@example(  # a key that TensorBoard's protobuf cannot encode must not reach a backend
    sequence=[("log_step", (1,), {"metrics": {"ok": 1.0, "bad\ud800": 2.0}})]
)
def test_pump_survives_any_calls_and_matches_the_reference_fold(
    sequence: list[tuple[str, tuple[Any, ...], dict[str, Any]]],
) -> None:
    mem = MemoryBackend()
    out = io.StringIO()
    display = Dashboard(Console(file=out, width=100), plain_interval=0)
    log = make_logger(mem, display=display)
    ref = Reference()
    log.start()
    for name, args, kwargs in sequence:
        method: Callable[..., Any] = getattr(log, name)
        if is_misuse(name, args, kwargs):
            with pytest.raises(TypeError, match=rf"^{name}\("):
                method(*args, **kwargs)
            continue
        method(*args, **kwargs)
        getattr(ref, name)(*args, **kwargs)
    log.flush()
    assert pump_thread(log).is_alive()  # the pump never dies
    log.log_step(7, {"alive": 1.0})  # and still works
    ref.log_step(7, {"alive": 1.0})
    report = log.finish()

    assert len(mem.records) == len(ref.records)
    for got, (step, it, scalars) in zip(mem.records, ref.records, strict=True):
        assert (got.step, got.iteration) == (step, it)
        assert [t for t, _ in got.scalars] == [t for t, _ in scalars]
        for (tag, a), (_, b) in zip(got.scalars, scalars, strict=True):
            assert type(a) is float and same(a, b), (tag, a, b)
    assert report.invalid_values == ref.invalid
    assert report.complete and report.steps == len(ref.records)
    # each (argument, key) with a problem is reported once (at most 50 lines, then one more)
    seen = probe(log).problems
    assert not any("could not process" in m or "dashboard disabled" in m for m in seen)
    assert len(seen) == min(len(ref.problems), 51)
    assert re.search(r"Training (complete|stopped at)", out.getvalue())
