"""The agent: the pump's work (fold, backends, dashboard) in a helper process.

The training process keeps the hot path and a shipper that sends batches of events over
an anonymous socket pair; the agent (``python -m aoff._agent``, never the user's script)
folds them with the same :class:`~aoff._pump._pump.Pump` as the in-process mode.
"""
