"""Log from inside JAX programs: ``aoff.jax.log(step, metrics, logger=group)`` in ``jit``,
``lax.scan``/``fori_loop`` bodies and under ``vmap`` (one run per seed of a
:class:`~aoff.RunGroup`).

Needs ``pip install 'aoff[jax]'``; importing this module imports JAX (``import aoff``
does not). See ``docs/guides/jax.md`` and ``aoff._adapters._jax`` for the seed axis and
what happens at ``finish()``.
"""

from ._adapters._jax import Target, counts, log, log_many, use, wait

__all__ = ["Target", "counts", "log", "log_many", "use", "wait"]

for _obj in (counts, log, log_many, use, wait):
    _obj.__module__ = __name__
del _obj
