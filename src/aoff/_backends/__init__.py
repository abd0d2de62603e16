"""Where step records go: the Backend protocol and the TensorBoard, JSONL, CSV, W&B, MLflow
and trackio writers.

May import: ``_core`` only (the pump's runners call the backends, not the other way).
"""
