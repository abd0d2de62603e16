"""What a person sees: the Display protocol, the Rich dashboard and its pure renderables,
and the forwarding of what the training process prints (``_streams``).

May import: ``_core`` only.
"""
