"""The pure core: events, the hot path (and its sampled cost: ``_cost``), the buffer and
the fold; the run's state, records and report (``_report``), how a part says a line
(``_say``), the rules a run watches itself with and their evaluation (``_rules``,
``_watch``), and aoff's warning.

Nothing here knows of threads that pump, processes, displays or backends, so the same
code records in the training process and folds in the agent. Imports nothing of aoff
outside ``_core``.
"""
