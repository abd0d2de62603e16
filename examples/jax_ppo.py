"""PPO on gymnax's CartPole in the PureJaxRL shape, 8 seeds in one compiled program.

``make_train(config)`` returns ``train(rng)``; ``jax.jit(jax.vmap(train))(rngs)`` trains
every seed at once. Where PureJaxRL calls ``jax.debug.callback`` to print its metrics,
this script calls ``aoff.jax.log`` once per update: the vmapped seeds become the runs of
one :class:`aoff.RunGroup`, ``runs/jax_ppo/ppo_seed<k>``, which ``aoff compare`` reads as
the seeds of one configuration::

    python examples/jax_ppo.py                   # 8 seeds, a few seconds of training
    python examples/jax_ppo.py --block 4         # the same, one host callback per 4 updates
    python -m aoff compare runs/jax_ppo --metric train/episode_return

Needs the ``jax`` extra: ``pip install 'aoff[jax]'`` (JAX, gymnax, flax, optax).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training.train_state import TrainState

import aoff
import aoff.jax

NAME = "ppo"


class Categorical(NamedTuple):
    """A categorical policy over logits (what PureJaxRL takes from distrax)."""

    logits: jax.Array

    def sample(self, seed: jax.Array) -> jax.Array:
        return jax.random.categorical(seed, self.logits)

    def log_prob(self, action: jax.Array) -> jax.Array:
        logp = jax.nn.log_softmax(self.logits)
        return jnp.take_along_axis(logp, action[..., None], axis=-1)[..., 0]

    def entropy(self) -> jax.Array:
        logp = jax.nn.log_softmax(self.logits)
        return -(jnp.exp(logp) * logp).sum(-1)


class ActorCritic(nn.Module):
    actions: int
    hidden: int = 32

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[Categorical, jax.Array]:
        a = nn.tanh(nn.Dense(self.hidden)(x))
        logits = nn.Dense(self.actions)(nn.tanh(nn.Dense(self.hidden)(a)))
        v = nn.tanh(nn.Dense(self.hidden)(x))
        value = nn.Dense(1)(nn.tanh(nn.Dense(self.hidden)(v)))
        return Categorical(logits), jnp.squeeze(value, -1)


class Transition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array
    ep_return: jax.Array  # the return of an episode that ended at this step (else 0)


#: what logs an update's metrics: ``log(update, metrics)``, called where PureJaxRL calls
#: ``jax.debug.callback``
LogFn = Callable[[jax.Array, dict[str, jax.Array]], None]


def make_train(
    config: dict[str, Any], log: LogFn | None = aoff.jax.log, log_many: LogFn | None = None
) -> Any:
    """PureJaxRL's ``make_train``: the config in, a pure ``train(rng)`` out.

    ``log(update, metrics)`` is called in every update (``aoff.jax.log``; None, or
    ``config["LOG"] = False``: no logging). With ``config["LOG_BLOCK"] = K`` the updates
    run as a scan of blocks of ``K`` and ``log_many(updates, metrics)`` gets each block's
    ``K`` updates stacked, once (``aoff.jax.log_many``; docs/guides/jax.md)."""
    env, env_params = gymnax.make(config["ENV_NAME"])
    n_envs, n_steps = config["NUM_ENVS"], config["NUM_STEPS"]
    n_updates = config["TOTAL_TIMESTEPS"] // n_envs // n_steps
    minibatch = n_envs * n_steps // config["NUM_MINIBATCHES"]
    network = ActorCritic(env.action_space(env_params).n, config.get("HIDDEN", 32))
    block = config.get("LOG_BLOCK", 0)
    if not config.get("LOG", True):
        log = log_many = None
    if block and n_updates % block:
        raise ValueError(f"LOG_BLOCK ({block}) must divide the {n_updates} updates")
    tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(config["LR"], eps=1e-5))

    def train(rng: jax.Array) -> dict[str, Any]:
        rng, init_rng, reset_rng = jax.random.split(rng, 3)
        obs_shape = env.observation_space(env_params).shape
        params = network.init(init_rng, jnp.zeros(obs_shape))
        state = TrainState.create(apply_fn=network.apply, params=params, tx=tx)
        obs, env_state = jax.vmap(env.reset, (0, None))(
            jax.random.split(reset_rng, n_envs), env_params
        )
        running = jnp.zeros(n_envs)

        def env_step(carry: Any, _: Any) -> Any:
            state, env_state, obs, running, rng = carry
            rng, act_rng, step_rng = jax.random.split(rng, 3)
            pi, value = network.apply(state.params, obs)
            action = pi.sample(seed=act_rng)
            obs2, env_state, reward, terminated, truncated, _ = jax.vmap(env.step, (0, 0, 0, None))(
                jax.random.split(step_rng, n_envs), env_state, action, env_params
            )
            done = jnp.logical_or(terminated, truncated).astype(jnp.float32)
            running = running + reward
            t = Transition(done, action, value, reward, pi.log_prob(action), obs, running * done)
            running = running * (1.0 - done)
            return (state, env_state, obs2, running, rng), t

        def update(carry: Any, update_i: jax.Array) -> Any:
            (state, env_state, obs, running, rng), batch = jax.lax.scan(
                env_step, carry, None, n_steps
            )
            _, last_value = network.apply(state.params, obs)

            def gae(next_: Any, t: Transition) -> Any:
                adv, next_value = next_
                delta = t.reward + config["GAMMA"] * next_value * (1 - t.done) - t.value
                adv = delta + config["GAMMA"] * config["GAE_LAMBDA"] * (1 - t.done) * adv
                return (adv, t.value), adv

            _, advantages = jax.lax.scan(
                gae, (jnp.zeros_like(last_value), last_value), batch, reverse=True
            )
            targets = advantages + batch.value

            def loss_fn(params: Any, b: Transition, adv: jax.Array, target: jax.Array) -> Any:
                pi, value = network.apply(params, b.obs)
                ratio = jnp.exp(pi.log_prob(b.action) - b.log_prob)
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                clip = config["CLIP_EPS"]
                actor = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip, 1 + clip) * adv)
                critic = 0.5 * jnp.square(value - target).mean()
                entropy = pi.entropy().mean()
                total = actor.mean() + config["VF_COEF"] * critic - config["ENT_COEF"] * entropy
                return total, (critic, actor.mean(), entropy)

            def epoch(carry: Any, _: Any) -> Any:
                state, rng = carry
                rng, perm_rng = jax.random.split(rng)
                perm = jax.random.permutation(perm_rng, n_envs * n_steps)
                flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:]))[perm], batch)
                adv = advantages.reshape(-1)[perm]
                tgt = targets.reshape(-1)[perm]
                split = lambda x: x.reshape((-1, minibatch, *x.shape[1:]))  # noqa: E731

                def one(state: TrainState, mb: Any) -> Any:
                    grads_of = jax.value_and_grad(loss_fn, has_aux=True)
                    (total, aux), grads = grads_of(state.params, *mb)
                    return state.apply_gradients(grads=grads), (total, *aux)

                state, losses = jax.lax.scan(
                    one, state, (jax.tree.map(split, flat), split(adv), split(tgt))
                )
                return (state, rng), losses

            (state, rng), losses = jax.lax.scan(epoch, (state, rng), None, config["EPOCHS"])
            ended = batch.done.sum()
            metrics = {
                "total_loss": losses[0].mean(),
                "value_loss": losses[1].mean(),
                "actor_loss": losses[2].mean(),
                "entropy": losses[3].mean(),
                "episode_return": batch.ep_return.sum() / jnp.maximum(ended, 1.0),
            }
            if log is not None and not block:  # PureJaxRL: jax.debug.callback(print_fn, metrics)
                log(update_i, metrics)
            return (state, env_state, obs, running, rng), metrics

        def run_block(carry: Any, b: jax.Array) -> Any:
            updates = b * block + jnp.arange(block)
            carry, metrics = jax.lax.scan(update, carry, updates)  # stacked: K each
            if log_many is not None:
                log_many(updates, metrics)
            return carry, metrics

        carry = (state, env_state, obs, running, rng)
        if not block:
            _, metrics = jax.lax.scan(update, carry, jnp.arange(n_updates))
            return {"metrics": metrics}
        _, metrics = jax.lax.scan(run_block, carry, jnp.arange(n_updates // block))
        return {"metrics": jax.tree.map(lambda m: m.reshape(-1), metrics)}

    return train


CONFIG = {
    "ENV_NAME": "CartPole-v1",
    "NUM_ENVS": 4,
    "NUM_STEPS": 32,
    "TOTAL_TIMESTEPS": 4 * 32 * 16,
    "EPOCHS": 2,
    "NUM_MINIBATCHES": 2,
    "LR": 2.5e-3,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "VF_COEF": 0.5,
    "ENT_COEF": 0.01,
}


def config_for(updates: int) -> dict[str, Any]:
    """``CONFIG`` with ``updates`` PPO updates."""
    return {**CONFIG, "TOTAL_TIMESTEPS": CONFIG["NUM_ENVS"] * CONFIG["NUM_STEPS"] * updates}


def seed_keys(seeds: int) -> jax.Array:
    """One PRNG key per seed, as PureJaxRL makes them."""
    return jax.random.split(jax.random.PRNGKey(0), seeds)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--updates", type=int, default=16)
    p.add_argument("--log-dir", default="runs/jax_ppo")
    p.add_argument(
        "--block", type=int, default=0, help="log K updates per host callback (log_many)"
    )
    args = p.parse_args(argv)
    config = {**config_for(args.updates), "LOG_BLOCK": args.block}
    train = jax.jit(jax.vmap(make_train(config, log_many=aoff.jax.log_many)))
    rngs = seed_keys(args.seeds)
    with (
        aoff.RunGroup(
            args.seeds,
            args.log_dir,
            name=NAME,
            env_name=config["ENV_NAME"],
            max_iterations=args.updates,
            config=config,
            display="plain",
        ) as group,
        aoff.jax.use(group),
    ):
        out = train(rngs)
    returns = np.asarray(out["metrics"]["episode_return"])
    print(f"final episode return over {args.seeds} seeds: {returns[:, -1].mean():.1f}")


if __name__ == "__main__":
    main()
