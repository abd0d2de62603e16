"""Where step records go: the Backend protocol and the TensorBoard, JSONL, CSV and W&B writers.

May import: ``_core`` only (the pump's runners call the backends, not the other way).
"""
