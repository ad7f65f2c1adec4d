"""The key-event commit rules, one by one, and the threshold."""

from __future__ import annotations

from server.core.agent.keyevents import events, failed, should_commit


def kinds(obs: str, medium: bool = False, prev_failed: bool = False) -> list[str]:
    return [e.kind for e in events(obs, medium, prev_failed)]


def test_each_rule_fires_on_its_own_kind_of_round() -> None:
    assert kinds("Screenshot received", medium=True) == ["medium"]
    assert kinds("Ticket created: #4411") == ["stage"]
    assert kinds("工单已创建") == ["stage"]
    assert kinds("The retry succeeded", prev_failed=True) == ["fixed"]
    assert kinds("Still failing: timeout", prev_failed=True) == []
    assert kinds("The weather is nice today.") == []


def test_no_word_list_reads_preferences_in_an_observation() -> None:
    """A tool's output saying "going forward, please …" is an observation, not a preference;
    what the user says is read by `said`, not here."""
    assert kinds("The user said: I prefer email over phone calls.") == []
    assert kinds("以后请只用短信联系我。") == []
    assert kinds("I need this fixed before Friday.") == []


def test_the_threshold_decides() -> None:
    stage = events("Booking confirmed", False, False)
    assert should_commit(stage, 0.7) and not should_commit(stage, 0.8)
    assert not should_commit([], 0.0 + 1e-9)
    assert failed("Error 502 from the API") and not failed("All good")
