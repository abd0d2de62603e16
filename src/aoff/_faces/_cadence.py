"""When the training process ships in process mode: the measured intervals and counts.

Why a module of its own: each number here was chosen by a measurement that its comment
keeps (GIL hand-offs, fixed costs of a round, peaks of the buffer), and they change
together; ``AgentSide`` (``_side.py``) only applies them.
"""

from __future__ import annotations

from .._transport._shipper import BURST_ROUND

__all__ = [
    "BACKSTOP_INTERVAL",
    "INLINE_CHECK_EVERY",
    "INLINE_EVENTS",
    "INLINE_INTERVAL",
    "STOP_RULE_INTERVAL",
]

#: the sync face's producers ship a round themselves (``AgentSide.put``) when the last
#: round is this old, or when this many events wait. Measured on the 2-core test machine
#: (Python 3.11): waking a thread that needs the GIL while the training loop holds it
#: costs that thread ~140 us of CPU (and each GIL-releasing call inside the round ~30-100
#: us more), far more than the round itself (~0.7 us an event). A round on the caller's
#: own thread hands the GIL to nobody: one iteration in ~500 of a 1 ms loop pays ~2 ms.
#: Each round also has a fixed part (~0.1-0.3 ms: the signal mask, the system calls,
#: a cold pickler), so 0.5 s rounds cost ~0.8 us an iteration less than 0.2 s ones did.
#: The agent therefore sees events up to 0.5 s late (the dashboard draws 4 times a
#: second; flush() and finish() ship at once).
INLINE_INTERVAL = 0.5
#: the "this many events" above, capped at half the buffer's ``capacity`` (``AgentSide``):
#: with ``capacity=1000`` a 1 ms loop's 0.5 s of events filled the buffer first, and
#: ``drop_newest`` refused a third of the calls, ``block`` stalled the loop ~0.4 s
INLINE_EVENTS = BURST_ROUND
#: producers look at the clock once every this many calls (the rest is one decrement).
#: Every call goes through this check, not only ``log_step``: a thread that floods other
#: calls must ship its own rounds too. Checking in ``log_step`` alone saved ~0.3 us an
#: iteration, but 4 threads x 100,000 ``log_collector`` calls (1.9 million a second
#: here) then piled up to 394,000 events (~80 MB) before the backstop's first round,
#: one over the 4 x capacity bound; with every call checking, the peak was 79,000.
INLINE_CHECK_EVERY = 16
#: the shipper thread's round when producers ship for themselves: it only covers quiet
#: spells (a loop that stopped logging, or logs less than once a round), so a call is
#: shipped at most this long after it was made (what a SIGKILL of the training process
#: can lose). It wakes at most once this often, whether or not producers shipped
#: meanwhile (each wake-up costs the loop a GIL hand-off); longer than
#: ``INLINE_INTERVAL`` so that a busy loop's own rounds come first.
BACKSTOP_INTERVAL = 0.75
#: ``INLINE_INTERVAL`` and the shipper's reading of the agent's answers when a rule may
#: stop the loop (``stop=True``): the agent folds within its 50 ms tick and sends the
#: alert at once, so a 1 ms loop hears it within ~100 iterations. Rounds 25 times as
#: often cost that loop a few microseconds an iteration more (see ``INLINE_INTERVAL``);
#: only a run that asked to be stopped pays them
STOP_RULE_INTERVAL = 0.02
