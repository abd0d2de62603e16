"""aoff on Ray: collectors on other nodes log into the run (``aoff[ray]``), and every Ray
Tune trial is an aoff run (``aoff[tune]``).

In the learner, after ``ray.init()``::

    link = aoff.ray.serve(log)          # a small picklable handle

and in any Ray actor or task, on any node::

    rlog = link.remote("collector-3")   # the methods of log.remote(name)
    rlog.log_step(i, {"q": q})
    report = rlog.close()               # an aoff.RemoteReport

Events cross nodes only as Ray actor calls (no port of aoff's own); on the learner's
node they enter the run through the same path as ``log.remote()``. Importing this module
imports ``ray``; ``import aoff`` does not. See docs/guides/machines.md.

For a sweep, :class:`TuneCallback` (Tune's ``LoggerCallback``; importing it imports
``ray.tune``)::

    cb = aoff.ray.TuneCallback("runs/sweep", rules=[aoff.rules.nonfinite(stop=True)])
    tune.Tuner(trainable, run_config=tune.RunConfig(callbacks=[cb], stop=cb.stopper))

For RLlib, :class:`RLlibEpisodeStats` (``config.callbacks(aoff.ray.RLlibEpisodeStats)``)
keeps each episode value's min, max and mean. See docs/migrate/tune.md. Its earlier name,
``EpisodeStats``, is a deprecated alias: it read as :class:`aoff.torch.EpisodeStats`, the
device-side episode statistics of a vectorized environment, a different thing.
"""

import warnings
from typing import TYPE_CHECKING, Any

from ._ray import RayLink, RayLogger, serve

if TYPE_CHECKING:
    from ._adapters._rllib import RLlibEpisodeStats
    from ._adapters._tune import TuneCallback

__all__ = ["RLlibEpisodeStats", "RayLink", "RayLogger", "TuneCallback", "serve"]

RayLogger.__module__ = __name__


def __getattr__(name: str) -> Any:
    if name == "TuneCallback":  # ray.tune is a heavy import: only when asked for
        from ._adapters._tune import TuneCallback

        TuneCallback.__module__ = __name__
        return TuneCallback
    if name in ("RLlibEpisodeStats", "EpisodeStats"):  # ray.rllib: only when asked for
        from ._adapters._rllib import RLlibEpisodeStats

        RLlibEpisodeStats.__module__ = __name__
        if name == "EpisodeStats":
            warnings.warn(
                "aoff.ray.EpisodeStats is now aoff.ray.RLlibEpisodeStats (the old name read "
                "as aoff.torch.EpisodeStats); the old name will go",
                DeprecationWarning,
                stacklevel=2,
            )
        return RLlibEpisodeStats
    raise AttributeError(f"module 'aoff.ray' has no attribute {name!r}")
