"""``aoff.jax.log`` inside ``jit``/``scan``/``fori_loop``/``vmap``, on real JAX.

The toy programs are small (compiled in about a second); the real clients are the
PureJaxRL-shaped PPO of ``examples/jax_ppo.py`` (run as users run it, then checked
against the same program compiled without logging) and rejax's PPO and DQN
(``test_rejax.py``). What is checked is what the readers see: TensorBoard's own
``EventAccumulator`` on each run's folder, and ``aoff compare``'s output.
"""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

jax = pytest.importorskip("jax")
# gymnax is for the PureJaxRL program's child; found, not imported: every xdist worker
# collects every module
if importlib.util.find_spec("gymnax") is None:
    pytest.skip("needs gymnax (aoff[jax])", allow_module_level=True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import aoff  # noqa: E402
import aoff.jax  # noqa: E402
from aoff.__main__ import main as aoff_main  # noqa: E402

from .conftest import read_tensorboard  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _toy(key: Any) -> Any:
    def body(c: Any, i: Any) -> Any:
        x = jax.random.normal(jax.random.fold_in(key, i))
        aoff.jax.log(i, {"x": x, "c": c})
        return c + x, x

    return jax.lax.scan(body, jnp.float32(0.0), jnp.arange(6))[1]


#: one compiled program for the module: the group it logs to is looked up per call
TOY = jax.jit(jax.vmap(_toy))
KEYS = jax.random.split(jax.random.PRNGKey(0), 4)


def _group(tmp_path: Path, runs: int) -> aoff.RunGroup:
    """In thread mode: these check the JAX door; the group's agent (the default) is
    proven by the real clients here and in test_rejax.py, and in test_group.py."""
    return aoff.RunGroup(runs, tmp_path, name="toy", system_interval=0, pump="thread")


def _values(run: str, tag: str) -> tuple[list[int], np.ndarray]:
    pts = read_tensorboard(run)[tag]
    return [s for s, _ in pts], np.array([v for _, v in pts], dtype=np.float32)


def test_vmapped_scan_makes_one_callback_per_call_and_one_run_per_seed(tmp_path: Path) -> None:
    before = aoff.jax.counts()["delivered"]
    with _group(tmp_path, 4) as g, aoff.jax.use(g):
        xs = np.asarray(TOY(KEYS))
    reports = g.finish()
    assert aoff.jax.counts()["delivered"] - before == 6  # one per scan step, not 6 x 4
    assert [r.steps for r in reports] == [6] * 4
    for k, run in enumerate(g.run_dirs):
        steps, got = _values(run, "train/x")
        assert steps == list(range(6))  # each run's steps in order
        assert got.tobytes() == xs[k].tobytes()


def test_the_same_compiled_program_logs_into_each_new_group(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with _group(tmp_path / name, 4) as g, aoff.jax.use(g):
            TOY(KEYS)
        assert [r.steps for r in g.finish()] == [6] * 4


def test_nested_vmap_flattens_outer_axis_first(tmp_path: Path) -> None:
    def train(key: Any, scale: Any) -> Any:
        x = jax.random.normal(key) * scale
        aoff.jax.log(0, {"x": x})
        return x

    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    scales = jnp.array([1.0, 10.0], dtype=jnp.float32)
    prog = jax.jit(jax.vmap(jax.vmap(train, (0, None)), (None, 0)))  # (2 scales, 3 keys)
    with _group(tmp_path, 6) as g, aoff.jax.use(g):
        out = np.asarray(prog(keys, scales))
    g.finish()
    for k, run in enumerate(g.run_dirs):
        assert _values(run, "train/x")[1][0] == out.reshape(-1)[k]


def test_a_block_of_updates_in_one_callback_with_axes_and_per_env_values(
    tmp_path: Path,
) -> None:
    """``log_many``: a scan of 4 updates returns them stacked, logged in ONE callback per
    block for every seed; each run gets every step in order, its values bit for bit, its
    ``axes=`` and its per-env values reduced (mean, spread) as a single run's."""

    def train(key: Any) -> Any:
        def update(c: Any, i: Any) -> Any:
            x = jax.random.normal(jax.random.fold_in(key, i))
            return c + x, (x, jax.random.normal(jax.random.fold_in(key, -i - 1), (5,)))

        def block(c: Any, b: Any) -> Any:
            steps = b * 4 + jnp.arange(4)
            c, (xs, per_env) = jax.lax.scan(update, c, steps)
            aoff.jax.log_many(steps, {"x": xs, "ret": per_env}, axes={"grad_steps": steps * 10})
            return c, (xs, per_env)

        return jax.lax.scan(block, jnp.float32(0.0), jnp.arange(3))[1]

    before = aoff.jax.counts()["delivered"]
    with _group(tmp_path, 3) as g, aoff.jax.use(g):
        xs, per_env = jax.jit(jax.vmap(train))(KEYS[:3])
    assert [r.steps for r in g.finish()] == [12] * 3
    assert aoff.jax.counts()["delivered"] - before == 3  # one per block of 4, all seeds
    xs, per_env = np.asarray(xs).reshape(3, 12), np.asarray(per_env).reshape(3, 12, 5)
    for k, run in enumerate(g.run_dirs):
        steps, got = _values(run, "train/x")
        assert steps == list(range(12)) and got.tobytes() == xs[k].tobytes()
        means = per_env[k].astype(np.float64).mean(axis=1).astype(np.float32)
        assert _values(run, "train/ret")[1].tobytes() == means.tobytes()
        assert _values(run, "train/ret/envs/max")[1].tobytes() == per_env[k].max(1).tobytes()
        df = aoff.read_scalars(run, ["train/x"], axes=True)
        assert list(df["grad_steps"]) == [10 * s for s in range(12)]


def test_a_block_of_scalars_under_nested_vmap_is_handed_over_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``log_many`` of scalars into a group: the block goes over in one piece, each value
    converted once as a ``(K, runs)`` table (runs flattened outer axis first, as ``log``
    does), and each run still gets every step in order, bit for bit."""
    blocks: list[tuple[int, ...]] = []
    whole = aoff.RunGroup._log_block

    def spy(self: aoff.RunGroup, steps: Any, metrics: Any) -> None:
        blocks.append(np.shape(steps))
        whole(self, steps, metrics)

    monkeypatch.setattr(aoff.RunGroup, "_log_block", spy)

    def train(key: Any, scale: Any) -> Any:
        def update(c: Any, i: Any) -> Any:
            x = jax.random.normal(jax.random.fold_in(key, i)) * scale
            return c, x

        def block(c: Any, b: Any) -> Any:
            steps = b * 4 + jnp.arange(4)
            xs = jax.lax.scan(update, c, steps)[1]
            aoff.jax.log_many(steps, {"x": xs})
            return c, xs

        return jax.lax.scan(block, 0, jnp.arange(2))[1]

    keys = jax.random.split(jax.random.PRNGKey(2), 3)
    scales = jnp.array([1.0, 10.0], dtype=jnp.float32)
    prog = jax.jit(jax.vmap(jax.vmap(train, (0, None)), (None, 0)))  # (2 scales, 3 keys)
    with _group(tmp_path, 6) as g, aoff.jax.use(g):
        out = np.asarray(prog(keys, scales)).reshape(6, 8)
    assert [r.steps for r in g.finish()] == [8] * 6
    assert blocks == [(4, 6), (4, 6)]
    for k, run in enumerate(g.run_dirs):
        steps, got = _values(run, "train/x")
        assert steps == list(range(8)) and got.tobytes() == out[k].tobytes()


def test_the_program_does_not_wait_for_the_group_and_finish_waits_for_it(
    tmp_path: Path,
) -> None:
    """Into a group, the callback only queues what JAX handed it: a group whose calls
    are held at a gate does not hold the program up (every callback ran, none
    delivered); ``finish()`` waits for the "aoff-jax" thread, which delivers every call
    in the program's order, values bit for bit."""
    import threading

    from aoff._adapters._jax import _courier

    gate, threads = threading.Event(), set()

    class Gated(aoff.RunGroup):
        def log_step(self, *args: Any, **kw: Any) -> None:
            threads.add(threading.current_thread().name)
            gate.wait(30)  # bounded: the old in-callback delivery fails, not hangs
            super().log_step(*args, **kw)

    g = Gated(4, tmp_path, name="toy", system_interval=0, pump="thread")
    done = _courier.done
    with aoff.jax.use(g):
        xs = np.asarray(TOY(KEYS))
        jax.effects_barrier()  # every callback has run
        assert not gate.is_set() and _courier.done == done  # and none was delivered
        gate.set()
    assert [r.steps for r in g.finish()] == [6] * 4
    assert threads == {"aoff-jax"}
    for k, run in enumerate(g.run_dirs):
        steps, got = _values(run, "train/x")
        assert steps == list(range(6)) and got.tobytes() == xs[k].tobytes()


def test_fori_loop_and_explicit_logger(tmp_path: Path) -> None:
    g = _group(tmp_path, 2)

    def train(seed: Any) -> Any:
        def body(i: Any, acc: Any) -> Any:
            aoff.jax.log(i, {"acc": acc}, reward=acc * 2, logger=g)
            return acc + seed

        return jax.lax.fori_loop(0, 3, body, jnp.float32(0.0))

    jax.jit(jax.vmap(train))(jnp.array([1.0, 2.0], dtype=jnp.float32))
    g.finish()  # waits for callbacks still in flight (jax.effects_barrier)
    assert _values(g.run_dirs[1], "train/acc")[1].tolist() == [0.0, 2.0, 4.0]
    assert _values(g.run_dirs[1], "reward/mean")[1].tolist() == [0.0, 4.0, 8.0]


def test_a_single_run_logger_under_jit_without_vmap(tmp_path: Path) -> None:
    log = aoff.OffPolicyLogger(log_dir=tmp_path, display="none", pump="thread")

    def one(i: Any) -> Any:
        aoff.jax.log(i, {"y": i * 0.5}, logger=log)
        return i

    step = jax.jit(one)

    for i in range(3):
        step(jnp.int32(i))
    jax.effects_barrier()
    assert log.finish().steps == 3
    assert _values(str(tmp_path), "train/y")[1].tolist() == [0.0, 0.5, 1.0]


def test_no_target_is_counted_and_said(tmp_path: Path) -> None:
    before = aoff.jax.counts()["failed"]
    with pytest.warns(aoff.AoffWarning, match="no logger"):
        np.asarray(TOY(KEYS))
        jax.effects_barrier()
    assert aoff.jax.counts()["failed"] - before == 6


def test_metrics_must_be_a_dict() -> None:
    with pytest.raises(TypeError, match="dict"):
        aoff.jax.log(0, [1.0])  # type: ignore[arg-type]


# -- a PureJaxRL-shaped PPO, as users run it ------------------------------------------------------
def _example() -> Any:
    path = ROOT / "examples/jax_ppo.py"
    spec = importlib.util.spec_from_file_location("jax_ppo", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its NamedTuple and dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # two PPO compilations (the example's, and without logging to compare)
def test_purejaxrl_ppo_eight_seeds_bit_equal_and_compared(tmp_path: Path) -> None:
    updates, seeds = 4, 8
    out = tmp_path / "jax_ppo"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLUMNS="100")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples/jax_ppo.py"), "--updates", str(updates),
         "--log-dir", str(out)],
        env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    mod = _example()
    plain = jax.jit(jax.vmap(mod.make_train({**mod.config_for(updates), "LOG": False})))
    metrics = jax.tree.map(np.asarray, plain(mod.seed_keys(seeds))["metrics"])
    runs = sorted(p for p in out.iterdir())
    assert [p.name for p in runs] == [f"ppo_seed{k}" for k in range(seeds)]
    for k, run in enumerate(runs):
        for name in ("total_loss", "entropy", "episode_return"):
            steps, got = _values(str(run), f"train/{name}")
            assert steps == list(range(updates))
            assert got.tobytes() == metrics[name][k].astype(np.float32).tobytes(), (k, name)
    text = io.StringIO()
    with redirect_stdout(text):
        aoff_main(["compare", str(out), "--metric", "train/episode_return"])
    printed = text.getvalue()
    assert "group ppo: 8 runs" in printed and "IQM" in printed


def test_logging_every_few_updates_under_cond(tmp_path: Path) -> None:
    """What the guide advises for short updates: the call under ``lax.cond`` on the
    step, under ``vmap``, logs only those steps (the predicate is not batched)."""

    def train(key: Any) -> Any:
        def body(c: Any, i: Any) -> Any:
            x = jax.random.normal(jax.random.fold_in(key, i))
            jax.lax.cond(i % 3 == 0, lambda: aoff.jax.log(i, {"x": x}), lambda: None)
            return c + x, x

        return jax.lax.scan(body, jnp.float32(0.0), jnp.arange(7))[1]

    before = aoff.jax.counts()["delivered"]
    with _group(tmp_path, 2) as g, aoff.jax.use(g):
        xs = np.asarray(jax.jit(jax.vmap(train))(KEYS[:2]))
    g.finish()
    assert aoff.jax.counts()["delivered"] - before == 3
    steps, got = _values(g.run_dirs[1], "train/x")
    assert steps == [0, 3, 6] and got.tobytes() == xs[1, [0, 3, 6]].tobytes()


def test_a_program_outliving_its_logger_counts_its_calls(tmp_path: Path) -> None:
    """``logger=`` is held weakly: a finished group is freed, and a later run of the
    program says why its calls were not delivered."""
    import gc
    import weakref

    from aoff.testing import wait_until

    g: aoff.RunGroup | None = _group(tmp_path, 2)

    def train(x: Any) -> Any:
        aoff.jax.log(0, {"x": x}, logger=g)
        return x

    prog = jax.jit(jax.vmap(train))
    prog(jnp.ones(2))
    assert g is not None and [r.steps for r in g.finish()] == [1, 1]
    freed = weakref.ref(g)
    g = None
    # collected, not at once: a cycle through the runs' pumps can outlive the first
    # collection while something of the closed runs still lets go (seen once in 40)
    wait_until(lambda: gc.collect() >= 0 and freed() is None, what="the group freed")
    before = aoff.jax.counts()["failed"]
    with pytest.warns(aoff.AoffWarning, match="no longer exists"):
        prog(jnp.ones(2))
        jax.effects_barrier()
    assert aoff.jax.counts()["failed"] - before == 1
