"""The run folder's channel: its Unix socket and key, serving ``aoff attach`` viewers and
taking events from ``log.remote()`` producers.

``_paths`` owns where the socket, its key and the long-path pointer live; ``_server``
runs beside the pump (in the agent, or in the training process in thread mode) and
answers viewers; ``_produce`` takes producers' events; ``_sender`` is a producer's half.
"""
