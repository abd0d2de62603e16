"""Where step records go: the Backend protocol and the TensorBoard, JSONL, CSV, W&B, MLflow
and trackio writers.

Each file backend is an adapter over its format in ``_runfolder`` (what a line, a row
or an event record is, the file's name): it keeps the open file, the worker threads,
batching, the lifecycle and the errors. The encoders take their pacing from the pump
(``BackendContext.pieces``, a no-op by default): they never import the pump's GIL turns.

May import: ``_runfolder`` (the formats), ``_core``. Nothing above it (the pump's
runners call the backends, not the other way).
"""
