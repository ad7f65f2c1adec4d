"""The key-event commit rules, one by one, and the threshold."""

from __future__ import annotations

from server.core.agent.keyevents import events, failed, should_commit


def kinds(obs: str, medium: bool = False, prev_failed: bool = False) -> list[str]:
    return [e.kind for e in events(obs, medium, prev_failed)]


def test_each_rule_fires_on_its_own_kind_of_round() -> None:
    assert kinds("The user said: I prefer email over phone calls.") == ["preference"]
    assert kinds("用户说：我只用安卓手机") == ["preference"]
    assert kinds("我更喜欢用邮件") == ["preference"]
    assert kinds("I need this fixed before Friday.") == ["request"]
    assert not should_commit(events("I need this fixed before Friday.", False, False), 0.7)
    assert kinds("我需要周五之前修好") == ["request"]
    assert kinds("Screenshot received", medium=True) == ["medium"]
    assert kinds("Ticket created: #4411") == ["stage"]
    assert kinds("工单已创建") == ["stage"]
    assert kinds("The retry succeeded", prev_failed=True) == ["fixed"]
    assert kinds("Still failing: timeout", prev_failed=True) == []
    assert kinds("The weather is nice today.") == []
    assert kinds("Contact me the way I prefer.") == []  # a reference to a preference, not one


def test_the_threshold_decides() -> None:
    stage = events("Booking confirmed", False, False)
    assert should_commit(stage, 0.7) and not should_commit(stage, 0.8)
    assert not should_commit([], 0.0 + 1e-9)
    assert failed("Error 502 from the API") and not failed("All good")


def test_standing_preferences_in_other_words_count_and_references_and_requests_do_not() -> None:
    stated = [
        "Please only reach me by SMS from now on.",
        "Email is the best way to contact me.",
        "I'd rather you called me on my mobile.",
        "Contact me via chat, please.",
        "以后请只用短信联系我。",
        "麻烦记一下：联系我请用邮件。",
        "My preferred channel is chat.",
        "Update my contact preference to SMS, please.",
        "From today on, email only for updates, please.",
    ]
    referred = [
        "Reach me through my usual channel.",
        "Please reach me through my usual channel.",
        "Contact me the way I prefer.",
        "Please contact me the way I prefer.",
        "Use my preferred contact method.",
        "Get back to me how I asked before.",
        "Please email the invoice to accounting.",  # a request, not a standing preference
        "I'd like an update on my order.",
        "From now on it works fine.",
        "I need this fixed before Friday.",  # a need of this task, not a standing one
        "I want a refund for the second charge.",
        "我需要尽快退款。",
        "总结一下，然后用我习惯的方式通知我。",  # a reference, not a statement
        "Use my preferred channel.",
        # Not about how to be served: habits, complaints, hopes (the review's cases).
        "I always get this error when I boot.",
        "I never got the replacement.",
        "I don't like that the router keeps rebooting.",
        "I love how fast that was.",
        "In the future, I hope this doesn't happen again.",
        "今后还会出现这个问题吗？",
        "你还记得我的偏好吗？",
        "按我习惯来联系我。",
    ]
    for text in stated:
        assert any(e.kind == "preference" for e in events(text, False, False)), text
    for text in referred:
        assert not any(e.kind == "preference" for e in events(text, False, False)), text
