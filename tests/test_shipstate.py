"""The shipper's state objects: the losses a lost agent leaves are computed from the
tally alone, and the talk says when an answer is awaited. (The shipper driving them:
``tests/test_agent.py``, ``tests/test_reliability.py``.)"""

from __future__ import annotations

from aoff._core._report import FinishReport
from aoff._transport._shipstate import Talk, Tally


def test_a_lost_agents_losses_come_from_the_tally() -> None:
    tally = Tally(backends=("tensorboard", "jsonl"), shipped_steps=10, shipped_media=5)
    tally.acked_written = {"jsonl": 7}
    # a backend the agent never acked lost every step shipped; one acked, the rest
    assert tally.agent_loss() == {"tensorboard": 10, "jsonl": 3}
    tally.acked_media = (2, 1)  # written, counted lost by the agent
    assert tally.agent_media_loss(1) == 1  # 5 shipped - 2 - 1 - 1 encoded again here
    assert tally.agent_media_loss(9) == 0  # never below none


def test_the_talk_awaits_an_unanswered_flush_and_any_stop() -> None:
    talk: Talk[FinishReport] = Talk()
    assert not talk.waiting()
    talk.flush_asked = 1
    assert talk.waiting()
    talk.flushed = 1
    assert not talk.waiting()
    talk.stop_summary = False  # asked to stop (without a summary): awaits the report
    assert talk.waiting()
