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
    "INLINE_SEND_BYTES",
    "INLINE_SLICE",
    "INLINE_SLOW_GAP",
    "INLINE_SLOW_SLICE",
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
#: a round on the caller's thread pickles at most this many events, as soon as that many
#: wait, so that no call pays more than a slice. A round of 4,096 events
#: held the caller 0.7-2.2 ms once every ~1,024 iterations: the sync face's p99.9.
#: A slice defers no signal (``Slices.pickle_from`` is safe at any bytecode): the
#: ``sigaction`` swaps cost ~1.5 us hot, 3.5 us in the loop. Measured in a flat-out loop
#: of the standard mix (``chrt -f 1``, load 10-18, medians): a slice is ~9 us pickling
#: (0.28 us an event: pickle's own floor here, which neither marshal, a reused Pickler
#: nor another protocol beat by more than 4 %), ~1.9 moving the events out of the
#: buffer, ~3 the checks; counting its steps and media and freeing its events (3.5-7
#: us) wait for the next look at the buffer, 16 calls later, which ships nothing
#: (``Slices.settle``). The iteration that pays a slice then took 13 us against 20 with
#: both in it; the one that settles 5.9 against 2.4; the others 1.8. The p99 of a
#: flat-out loop is a slice: one iteration in 8 pays one, one in ~160 a send
#: (``INLINE_SEND_BYTES``), so the p99 is the dearest ~3 % of slices. Smaller slices (16,
#: 24) come in more iterations: the p99 was no better (a higher percentile of cheaper
#: slices), the CPU and the median worse. The median is that of the iterations that
#: neither slice nor settle, a quarter fewer: their 67th percentile, ~0.1 us above
#: their median. Pickled alone, 32 events are ~103 bytes an event (the dict keys
#: memoised within a slice), 4,096 are 97
INLINE_SLICE = 32
#: a loop that took longer than this to log ``INLINE_SLICE`` events is slow (a training
#: loop doing real work between its calls): there a round waits for ``INLINE_SLOW_SLICE``
#: events and takes them in one slice. Each round runs on cold caches after the loop's
#: own work (its fixed part and pickling cost ~2x what a flat-out loop pays), and slices
#: of 24 raised aoff's CPU in the training process of ``benchmarks/slowdown.py`` (1 ms of
#: work an iteration) from 13 to 17-18 us an iteration
INLINE_SLOW_GAP = 0.002
#: ~35-60 us of a slow loop's thread, one iteration in 24 of a 1 ms loop
INLINE_SLOW_SLICE = 96
#: the slices' frames wait on the link until this many bytes do (or ``INLINE_INTERVAL``
#: passed since the last send, or a flush or stop waits), then go in one ``sendmsg``
#: (``Link.send_some``): one ``send`` a frame was ~6 us each. ~650 events of the standard
#: mix, so one iteration in ~160 of a flat-out loop pays a send (under the 1 % a p99
#: sees). The send's cost grows with its bytes (the kernel copies them and wakes the
#: agent): 256 KiB sends cost 190 us of CPU at a load of 10, so they are kept small.
#: A send takes no slice, so the look after it takes one and settles the one before at
#: once (~18 us against ~13, one iteration in ~160: right at the p99). Only new slices'
#: bytes count, not what a send left on the link: a loop faster than the agent's reader
#: fills the socket, sends then leave bytes behind (4 in 10 in a flat-out burst), and
#: counting those made one iteration in ~100 send, the whole p99 (31-33 us against 17-18
#: with new bytes only, ``bench_burst.py``, quiet); what waits on the link goes with the
#: next send all the same
INLINE_SEND_BYTES = 64 << 10
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
