"""The transport: how events leave a process. Shared by the agent link and producers.

Owns the messages, one named type each (``_messages``), the framed non-blocking socket
(``_wire``: ``Link``; also the signals the agent ignores, part of the link's contract)
and the shipper that drains an event buffer onto it and reads the peer's answers
(``_shipper``).

May import: ``_core`` only. It knows neither who sends (a face, a producer) nor who
answers (the agent, a run's channel).
"""
