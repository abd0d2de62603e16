"""Where step records go: the Backend protocol and the TensorBoard, JSONL, CSV, W&B, MLflow
and trackio writers.

The encoders take their pacing from the pump (``BackendContext.pieces``, a no-op by
default): they never import the pump's GIL turns.

May import: ``_runfolder`` (the files' names and formats), ``_core``. Never ``_pump``
(the pump's runners call the backends, not the other way).
"""
