"""The agent: the pump's work (fold, backends, dashboard) in a helper process.

Agent-process code only. The training process keeps the hot path and a shipper that
sends batches of events over an anonymous socket pair (``aoff._faces._side``); the agent
(``python -m aoff._agent FD``, never the user's script) takes the messages of
``aoff._transport._messages`` and folds the events with the same
:class:`~aoff._pump._pump.Pump` as the in-process mode (``_serve``).

May import: ``_pump``, ``_transport`` and what they stand on. Never ``_faces`` (the
training process's side) nor ``_cli``.
"""
