"""The transport: how events leave a process. Shared by the agent link and producers.

Owns the messages, one named type each (``_messages``), a frame's payload (events
packed and unpacked, batches made picklable, a sent frame kept as its pickle:
``_batches``), the framed non-blocking socket
(``_wire``: ``Link``; also the signals the agent ignores, part of the link's contract)
and the shipper that drains an event buffer onto it and reads the peer's answers
(``_shipper``).

May import: ``_media`` (which events' frames are in shared memory), ``_core``. It knows
neither who sends (a face, a producer) nor who answers (the agent, a run's channel).
"""
