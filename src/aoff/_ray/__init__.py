"""Ray collectors: producers on other nodes log into the run through Ray (``aoff.ray``).

Owns the hub actor on the learner's node (``_hub``: one ``log.remote(name)`` producer per
far collector, fed from Ray calls), the far side's logger (``_producer``: the hot path;
``_pusher``: its shipping thread, one Ray call a round) and ``serve()``/``RayLink``
(``_link``). Events cross nodes only through Ray; on the learner's node they enter the
run through the producers' Unix socket, like any ``remote()`` producer's.

May import: ``_faces`` (``RemoteLogger``, the report), ``_channel`` (the name rule),
``_media`` (the media calls and their budget), ``_transport`` (batches made
picklable), ``_core``. ``ray`` itself is imported
only when ``serve()`` runs or a far logger first ships. Nothing inside aoff imports it
but the public ``aoff.ray``.
"""

from ._link import RayLink, serve
from ._producer import RayLogger

__all__ = ["RayLink", "RayLogger", "serve"]
