"""The pure core: events, the hot path, the buffer and the fold; the run's state, records
and report (``_report``), and aoff's warning.

Nothing here knows of threads that pump, processes, displays or backends, so the same
code records in the training process and folds in the agent. Imports nothing of aoff
outside ``_core``.
"""
