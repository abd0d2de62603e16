"""Collectors on other nodes of a Ray cluster log into the run (the ``aoff[ray]`` extra).

In the learner, after ``ray.init()``::

    link = aoff.ray.serve(log)          # a small picklable handle

and in any Ray actor or task, on any node::

    rlog = link.remote("collector-3")   # the methods of log.remote(name)
    rlog.log_step(i, {"q": q})
    report = rlog.close()               # an aoff.RemoteReport

Events cross nodes only as Ray actor calls (no port of aoff's own); on the learner's
node they enter the run through the same path as ``log.remote()``. Importing this module
imports ``ray``; ``import aoff`` does not. See docs/guides/machines.md.
"""

from ._ray import RayLink, RayLogger, serve

__all__ = ["RayLink", "RayLogger", "serve"]

RayLogger.__module__ = __name__
