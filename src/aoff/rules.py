"""Rules a run watches itself with: ``rules=[...]`` on a logger (and the adapters).

Each is a plain value, evaluated where aoff already folds the events (the agent
process, or the pump's thread), never on the training thread::

    import aoff
    from aoff import rules

    log = aoff.OffPolicyLogger(
        log_dir="runs/sac",
        rules=[rules.nonfinite(stop=True), rules.collapse("train/alpha", floor=1e-4),
               rules.stalled(seconds=120)],
        webhook="https://hooks.example.com/aoff",  # optional: a JSON POST an alert
    )
    ...
    if log.should_stop:  # a rule made with stop=True fired
        save_checkpoint(); break

Without ``rules=``, a run watches :data:`DEFAULT_RULES` (``nonfinite()`` and
``stalled()``); ``rules=[]`` turns watching off. An alert goes to the dashboard, the
summary, ``FinishReport.alerts``, ``log.alerts``, ``alerts.jsonl`` in the run folder, and
a text record (tag ``aoff/alerts``) to every backend that takes texts or alerts
(TensorBoard's text summary, ``metrics.jsonl``, W&B's summary). Tags are names or
``fnmatch`` globs (``"train/*_loss"``).
"""

from ._core._rules import (
    ALERTS_NAME,
    DEFAULT_RULES,
    Alert,
    Rule,
    above,
    below,
    blowup,
    collapse,
    nonfinite,
    regression,
    slower,
    stalled,
)

__all__ = [
    "ALERTS_NAME",
    "DEFAULT_RULES",
    "Alert",
    "Rule",
    "above",
    "below",
    "blowup",
    "collapse",
    "nonfinite",
    "regression",
    "slower",
    "stalled",
]

for _obj in (Alert, Rule, above, below, blowup, collapse, nonfinite, regression, slower, stalled):
    _obj.__module__ = __name__
del _obj
