"""Ray collectors: producers on other nodes log into the run through Ray (``aoff.ray``)."""

from ._producer import RayLogger
from ._serve import RayLink, serve

__all__ = ["RayLink", "RayLogger", "serve"]
