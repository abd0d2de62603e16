"""rejax's PPO and DQN on gymnax's CartPole, 8 seeds vmapped, logged through rejax's own
hook (``eval_callback``, which its ``train`` calls inside ``jit``/``scan`` after each block
of updates) with ``aoff.jax.log``: 8 run folders whose values are bit for bit what the
program returns, and ``aoff compare``'s IQM over the 8 seeds.

rejax 0.1.3 unpacks gymnax's pre-1.0 ``step`` (5 values); gymnax 1.0 returns
``terminated`` and ``truncated`` apart, so the environment is handed to rejax through
:class:`FiveTuple`, which joins them as gymnax 0.0.x did (``done = terminated or
truncated``).
"""

from __future__ import annotations

import importlib.util
import io
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from aoff.__main__ import main as aoff_main

from .conftest import read_tensorboard

# JAX, rejax and gymnax are imported by the tests that use them: every xdist worker
# collects every module, and only the one that runs these needs them
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("jax", "rejax", "gymnax")),
    reason="needs jax, rejax and gymnax (aoff[jax] and the dev extra)",
)

SEEDS = 8


class FiveTuple:
    """A gymnax 1.0 environment with the 0.0.x ``step`` that rejax 0.1.3 unpacks."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_env":
            raise AttributeError(name)
        return getattr(self._env, name)

    def step(self, key: Any, state: Any, action: Any, params: Any = None) -> Any:
        import jax.numpy as jnp

        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return obs, state, reward, jnp.logical_or(terminated, truncated), info


def _algo(cls: Any, **kw: Any) -> Any:
    import gymnax
    import jax.numpy as jnp
    from rejax.evaluate import evaluate

    import aoff.jax

    env, params = gymnax.make("CartPole-v1")
    algo = cls.create(env=FiveTuple(env), env_params=params, **kw)

    def eval_callback(algo: Any, ts: Any, rng: Any) -> dict[str, Any]:
        lengths, returns = evaluate(algo.make_act(ts), rng, algo.env, algo.env_params, 4, 50)
        m = {"eval/return": returns.mean(), "eval/length": lengths.mean().astype(jnp.float32)}
        aoff.jax.log(ts.global_step, m)  # rejax's hook: inside jit, scan and vmap
        return m

    return algo.replace(eval_callback=eval_callback)


CASES = {
    "ppo": (
        "PPO",
        dict(total_timesteps=1024, eval_freq=256, num_envs=4, num_steps=32, num_epochs=1,
             num_minibatches=2),
    ),
    "dqn": (
        "DQN",
        dict(total_timesteps=512, eval_freq=128, num_envs=1, fill_buffer=64, batch_size=16,
             buffer_size=512),
    ),
}  # fmt: skip


@pytest.mark.slow  # one rejax compilation each (tens of seconds on a busy 2-core machine)
@pytest.mark.parametrize("name", list(CASES))
def test_rejax_seeds_become_runs_bit_equal(tmp_path: Path, name: str) -> None:
    import jax
    import numpy as np
    import rejax

    import aoff.jax

    cls_name, kw = CASES[name]
    algo = _algo(getattr(rejax, cls_name), **kw)
    keys = jax.random.split(jax.random.PRNGKey(0), SEEDS)
    with aoff.RunGroup(SEEDS, tmp_path, name=name, system_interval=0) as g, aoff.jax.use(g):
        _, evaluation = jax.jit(jax.vmap(algo.train))(keys)
    reports = g.finish()
    returned = jax.tree.map(np.asarray, evaluation)
    n = returned["eval/return"].shape[1]  # the initial evaluation and one per block
    assert n >= 3 and [r.steps for r in reports] == [n] * SEEDS
    assert all(r.complete for r in reports)
    for k, run in enumerate(g.run_dirs):
        tb = read_tensorboard(run)
        for tag in ("eval/return", "eval/length"):
            got = np.array([v for _, v in tb[tag]], dtype=np.float32)
            assert got.tobytes() == returned[tag][k].astype(np.float32).tobytes(), (k, tag)
        steps = [s for s, _ in tb["eval/return"]]
        assert steps == sorted(steps) and steps[0] == 0
    text = io.StringIO()
    with redirect_stdout(text):
        aoff_main(["compare", str(tmp_path), "--metric", "eval/return"])
    assert f"group {name}: {SEEDS} runs" in text.getvalue() and "IQM" in text.getvalue()
