"""The run's model: what is recorded, what it means, what the run concluded.

Owns the events (one table of kinds: ``_events``), the hot path (``_recorder``, its
arguments, captured device values: ``_capture``, ``_pending``, ``_tensors``, per-env
vectors ``_vectors``; its sampled cost: ``_hotcost``; a run group's batched values,
checked and copied once and split per run: ``_groupbatch``), the buffer the hot path
appends to (``_buffer``), the fold (a ``Folder`` in ``_fold`` that owns its parts: the
value checks ``_fold_checks``, what waits for a step ``_fold_pending``, the step's fold
``_fold_step``, ``SummaryWriter``'s ``_fold_writer``); the run's state, records and
report (``_state``, ``_records``, ``_report``), how a part says a line (``_say``),
config and checkpoints, histograms, the rules a run watches itself with and their
evaluation (``_rules``, ``_watch``), and aoff's warning.

Nothing here knows which process it is in or whether a pump shares it: the same code
records in the training process and folds in the agent. What a process that pumps needs
(GIL turns, the agent's buffer of frames, waiting on progress) is the pump's; the fold
is handed what only the pump counts (the dropped total). Two things here know threads,
because every process has them: the buffer (any thread puts, one drains; its ``block``
policy waits for room), and aoff's stderr line (``_say.say_to_stderr``: written on a
daemon thread, so a stuck terminal never holds its caller).

May import: nothing of aoff outside ``_core``.
"""
