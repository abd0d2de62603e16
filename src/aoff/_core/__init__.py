"""The pure core: events, the hot path, the buffer and the fold.

Nothing here knows of threads that pump, processes, displays or backends, so the same
code records in the training process and folds in the agent.
"""
