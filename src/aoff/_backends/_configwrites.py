"""Which version of the run's config a backend has written, and the config every
backend stores.

Why the backends': TensorBoard writes the config as HParams and a text table
(``aoff._runfolder.tensorboard._hparams``), W&B and trackio send it their own way, MLflow as
params; each keeps here which version it has written, so that a changed config is
written once, before the batch it came with, and tried again after a failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from .._core._config import ConfigValue
from .._core._records import RunConfig

if TYPE_CHECKING:
    from ._base import BackendContext

__all__ = ["ConfigWrites", "run_config"]


class ConfigWrites:
    """Which version of the run's config a backend has written, and writing the next.

    A changed config is written before the batch it came with: a failure raises before
    any record is written, so the runner's retry of the batch duplicates nothing, and
    the version goes back so the config is tried again. Only runs given ``config=`` or
    ``log_config()`` have one."""

    def __init__(self) -> None:
        self.version = -1

    def due(self, ctx: BackendContext | None) -> dict[str, ConfigValue] | None:
        """The config's values if they changed since the last ``due`` (or write), and
        the version moves on: a caller whose send of them fails sets :attr:`version`
        back. For a backend that sends them its own way (W&B, trackio)."""
        if ctx is None or ctx.hparams.version == self.version:
            return None
        self.version, values = ctx.hparams.snapshot()
        return values

    async def write_if_changed(
        self,
        ctx: BackendContext | None,
        write: Callable[[dict[str, ConfigValue]], Awaitable[object]],
    ) -> None:
        if ctx is None or ctx.hparams.version == self.version or not ctx.hparams.values:
            return
        before = self.version
        self.version, values = ctx.hparams.snapshot()
        try:
            await write(run_config(ctx.config, values))
        except BaseException:
            self.version = before
            raise


def run_config(cfg: RunConfig, values: Mapping[str, ConfigValue]) -> dict[str, ConfigValue]:
    """The config every backend stores: the seed's run description (the W&B config the
    seed logger wrote), then the user's keys, which win."""
    out: dict[str, ConfigValue] = {
        "algo": cfg.algo_name,
        "env": cfg.env_name,
        "num_envs": cfg.num_envs,
        "obs_dim": cfg.obs_dim,
        "action_dim": cfg.action_dim,
        "max_iterations": cfg.max_iterations,
    }
    out.update(values)
    return out
