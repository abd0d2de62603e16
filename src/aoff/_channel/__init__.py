"""The run folder's channel: its Unix socket and key, for ``aoff attach`` viewers and
``log.remote()`` producers.

Owns where the socket, its key and the long-path pointer live (``_paths``), how long a
connection may wait (``_timeouts``), what each role says (``_roles``: the typed hello and
answers), the server that runs beside the pump, holds the table of roles and answers
viewers (``_server``), the producers' hub (``_producers``) and role (``_produce``: their
events go into the pump's buffer), and a producer's half: its buffer, thread and
connection (``_sender``), one implementation of the ``Sender`` a producer logger is
written over (``_sending``, with the ``RemoteReport`` it ends with). The ``aoff attach``
client is the command line's (``aoff._cli._attach``).

May import: ``_transport``, ``_media`` (a producer's media bytes), ``_core``. Never ``_pump``
(it hands the server its buffer and its ``say``), nor anything above it.
"""
