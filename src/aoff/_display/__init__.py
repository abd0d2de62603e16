"""What a person sees: the Display protocol, the Rich dashboard and its pure renderables
(the alert banner and the cost line around the panel: ``_banner``), a run group's table
(``_grouptable``: a line per run, or the IQM and spread across many), and the forwarding
of what the training process prints (``_streams``).

The renderers pause between pieces of a frame only through the ``pause`` they are given
(the dashboard's ``pacing``, passed in by the pump; a no-op by default): they never
import the pump's GIL turns.

May import: ``_core`` only.
"""
