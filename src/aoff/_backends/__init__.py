"""Where step records go: the Backend protocol and the TensorBoard, JSONL and W&B writers."""
