"""Serving a run's live state to ``aoff attach``: the run folder's Unix socket and its key.

``_paths`` owns where the socket, its key and the long-path pointer live; ``_server``
runs beside the pump (in the agent, or in the training process in thread mode) and
answers viewers; ``_client`` is the ``aoff attach`` command.
"""
