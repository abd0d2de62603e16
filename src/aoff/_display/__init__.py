"""What a person sees: the Display protocol, the Rich dashboard and its pure renderables
(the alert banner and the cost line around the panel: ``_banner``), and the forwarding
of what the training process prints (``_streams``).

May import: ``_core`` only.
"""
