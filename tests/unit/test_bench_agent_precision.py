"""`bench agent`'s count of stored preferences: what a stored sentence of a statement counts as,
and which stored preferences state an older value."""

from __future__ import annotations

from bench.agent import _holds, _label, _stale, _within

STATEMENT = "The fan grinds. Please use phone from now on. My code is PREF-PHONE-101."


def test_a_sentence_of_a_statement_counts_when_it_names_its_code_or_channel() -> None:
    assert _holds(STATEMENT, STATEMENT)
    assert _holds("Please use phone from now on.", STATEMENT)
    assert _holds("My code is PREF-PHONE-101.", STATEMENT, code=True)
    assert not _holds("Please use phone from now on.", STATEMENT, code=True)  # no code: not stored
    assert not _holds("The fan grinds.", STATEMENT)
    # A part kept with the sentence after it (the round's own text) holds what it names.
    assert _holds("My code is PREF-PHONE-101. Here is a screenshot.", STATEMENT, code=True)
    zh = "好的。以后请用phone联系我。代码是PREF-PHONE-1。"
    assert _holds("以后请用phone联系我。代码是PREF-PHONE-1。 Thanks.", zh, code=True)
    assert not _holds("The fan grinds. Here is a screenshot.", STATEMENT)
    # The strict count (reported beside it): a part with more than the statement is wrong.
    assert not _within("My code is PREF-PHONE-101. Here is a screenshot.", STATEMENT)
    assert _within("My code is PREF-PHONE-101.", STATEMENT) and _within(
        f"{STATEMENT} Hi.", STATEMENT
    )
    assert not _holds(
        "My smartphone fan grinds.", "My smartphone fan grinds. Use chat, PREF-CHAT-1."
    )


def test_what_is_not_a_statement_is_labelled_by_where_it_comes_from() -> None:
    assert (
        _label("I need it by Friday.", {STATEMENT}, {"I need it by Friday."}, set()) == "distractor"
    )
    assert _label("Close it.", {STATEMENT}, set(), {"Close it. Thanks."}) == "reference"
    assert _label("Hello.", {STATEMENT}, set(), set()) == "other"


def test_an_older_value_is_a_stale_code_or_another_channel_without_the_current_one() -> None:
    assert _stale("Use email, PREF-EMAIL-7.", "PREF-SMS-9")
    assert not _stale("Use sms, PREF-SMS-9.", "PREF-SMS-9")
    assert _stale("Please make email my default channel.", "PREF-SMS-9")
    assert not _stale("Please make sms my default channel.", "PREF-SMS-9")
    assert not _stale("I like matte paper.", "PREF-SMS-9")  # names no contact value
