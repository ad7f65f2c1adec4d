"""The context builder with the real tokenizer: what goes in, long observations stored and
summarised, the order things are cut in, and never over the budget."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

from server.adapters.token_counter import TokenCounter
from server.core.agent.context import ContextBuilder, Recalled, Turn, summarize
from tests.conftest import TOKENIZER

COUNT = TokenCounter(TOKENIZER).count
LONG = (
    "The customer uploaded a screenshot of the checkout page. "
    + "The page shows the usual layout with the basket and the address form. " * 30
    + "At the bottom an error banner reads E4012 payment declined for order 88123."
)


def turns(n: int, obs: str = "The tool answered with a short line.") -> list[Turn]:
    return [Turn(i, f"call tool_{i}", f"Round {i} said: {obs}") for i in range(1, n + 1)]


def builder() -> tuple[ContextBuilder, list[Turn]]:
    stored: list[Turn] = []

    def store(t: Turn) -> str:
        stored.append(t)
        return f"m-{t.round}"

    return ContextBuilder(COUNT, store), stored


MEMS = [
    Recalled("a", "The user prefers email over phone.", 0.6, "user_statement", 0.9),
    Recalled("b", "Order 88123 shipped on Monday.", 0.9, "tool_result", 0.8),
]


def test_with_room_the_last_three_rounds_are_shown_and_older_ones_summarised() -> None:
    b, _ = builder()
    out = b.build("Fix the customer's payment", turns(6), MEMS, budget=2000)
    kinds = [(s.kind, s.round or s.memory_id) for s in out.sections]
    assert kinds == [
        ("goal", ""), ("memory", "b"), ("memory", "a"),
        ("summary", 1), ("summary", 2), ("summary", 3),
        ("round", 4), ("round", 5), ("round", 6),
    ]  # fmt: skip
    assert "[tool_result, trust 0.8]" in out.sections[1].text
    assert out.tokens == sum(COUNT(s.text) for s in out.sections) <= 2000
    assert not out.dropped


def test_a_long_observation_complete_on_the_focus_is_summarised_without_a_pointer() -> None:
    """Its summary kept every sentence that names the round's identifiers: the full text holds
    nothing more about them, so nothing is stored and no pointer invites a read."""
    b, stored = builder()
    t = [Turn(1, "look at the screenshot", LONG)]
    out = b.build("Fix the payment error E4012", t, [], budget=2000)
    text = out.sections[-1].text
    assert not stored and out.stored == {} and "[full text" not in text
    assert "E4012" in text and COUNT(text) < 120 < COUNT(LONG)


CHECKS = " ".join(f"Ticket T-4411 check {i} passed with value {i * 7}." for i in range(40))


def test_a_summary_that_leaves_out_a_line_about_the_focus_points_to_the_stored_text() -> None:
    b, stored = builder()
    out = b.build("Close ticket T-4411", [Turn(1, "run the checks", CHECKS)], [], budget=2000)
    assert [x.round for x in stored] == [1] and out.stored == {1: "m-1"}
    text = out.sections[-1].text
    assert "Observation (summary):" in text and "[full text: m-1]" in text
    assert COUNT(text) < 120 < COUNT(CHECKS)


def test_the_last_round_short_output_is_whole_and_earlier_ones_are_summaries() -> None:
    b, _ = builder()
    mid = "Ticket T-4411 is open. " + "The queue was quiet all morning. " * 12
    ts = [Turn(1, "a", mid), Turn(2, "b", mid)]
    out = b.build("Close ticket T-4411", ts, [], budget=2000)
    first, last = (s.text for s in out.sections if s.kind == "round")
    assert last.endswith(mid) and COUNT(first) < COUNT(last)
    assert "Ticket T-4411 is open." in first


def test_an_action_reads_as_a_call_and_the_users_message_comes_last() -> None:
    b, _ = builder()
    act = '{"type": "tool", "tool": "apply_fix", "params": {"ticket": "T-1", "fix": "FIX-2"}}'
    ts = [Turn(1, act, "Applied."), Turn(2, '{"type": "finish", "answer": "done"}', "ok")]
    out = b.build("Help", ts, [], 2000, current="Thanks!")
    text = out.text()
    assert "apply_fix(ticket=T-1, fix=FIX-2)" in text and "finish: done" in text
    assert '"type"' not in text and text.endswith("User now: Thanks!")
    assert out.sections[0].kind == "goal"
    assert Turn(1, "not json {", "x").head() == "Round 1: not json {"


def test_a_short_budget_cuts_older_rounds_then_memories_then_recent_detail() -> None:
    b, _ = builder()
    full = b.build("Fix it", turns(6), MEMS, budget=10_000)
    no_older = full.tokens - sum(s.tokens for s in full.sections if s.kind == "summary")
    out = b.build("Fix it", turns(6), MEMS, budget=no_older)
    assert [d for d in out.dropped if "summary" in d] == [f"round {i} (summary)" for i in (1, 2, 3)]
    assert out.tokens <= no_older
    tight = b.build("Fix it", turns(6), MEMS, budget=no_older - 5)
    assert "memory a" in tight.dropped  # the weaker memory before the stronger one
    assert "memory b" not in tight.dropped


LONG_ZH = (
    "用户上传了结算页面的截图。"
    + "页面显示了购物车和地址表单。" * 40
    + "底部的错误提示为E4012支付被拒绝，订单88123。"
)


@settings(max_examples=80)
@given(st.integers(1, 600), st.integers(0, 8), st.sampled_from(["ok.", LONG, LONG_ZH]))
def test_never_over_the_budget(budget: int, n: int, obs: str) -> None:
    b, _ = builder()
    out = b.build("Fix the customer's payment problem", turns(n, obs), MEMS, budget)
    assert out.tokens == COUNT(out.text()) <= budget, (out.tokens, budget, out.dropped)


def test_a_long_chinese_observation_is_summarised_by_its_sentences() -> None:
    b, _ = builder()
    out = b.build("修复支付问题", [Turn(1, "查看截图", LONG_ZH)], [], budget=2000)
    text = out.sections[-1].text
    assert "用户上传了结算页面的截图。" in text and "E4012" in text
    assert COUNT(text) < 150


def test_an_observation_stored_by_an_earlier_build_is_not_stored_again() -> None:
    b, stored = builder()
    t = [Turn(1, "look", CHECKS)]
    first = b.build("Close T-4411", t, [], 2000)
    again = b.build("Close T-4411", t, [], 2000, known=first.stored)
    assert len(stored) == 1 and again.stored == {1: "m-1"}


def test_a_summary_keeps_the_first_sentence_and_those_with_identifiers() -> None:
    text = "It failed. The weather was nice. Code E77 came back. Nothing else happened."
    assert summarize(text, 50, COUNT) == "It failed. Code E77 came back."


def test_a_recalled_memory_already_in_the_prompt_is_left_out() -> None:
    b, _ = builder()
    ts = [Turn(1, "call a", "ok", user="My order is 88123."), Turn(2, "call b", LONG)]
    mems = [
        Recalled("m-in", "Where is my parcel?", 0.9, "unspecified", 0.7),  # the current input
        Recalled("m-user", "My order is 88123.", 0.8, "unspecified", 0.7),  # a recent input
        Recalled("m-2", LONG, 0.7, "tool_result", 0.8),  # round 2's stored observation
        Recalled("m-a", "Alice prefers SMS.", 0.6, "unspecified", 0.7),
        Recalled("m-b", "Alice prefers SMS.", 0.5, "unspecified", 0.7),  # the same again
    ]
    out = b.build("Help", ts, mems, 2000, known={2: "m-2"}, current="Where is my parcel?")
    kept = [s for s in out.sections if s.kind == "memory"]
    assert [s.memory_id for s in kept] == ["m-a"]
    assert kept[0].text == "- [trust 0.7] Alice prefers SMS."  # no "unspecified" label


LOG = "\n".join(
    [
        f"2026-11-0{d} 10:0{d}:11 worker-{d} queue depth {d * 7} latency {d * 40} ms"
        for d in range(1, 6)
    ]
    + ["2026-11-06 10:06:11 worker-6 ticket T-4411 fixed by FIX-872: reseat the toner drum"]
    + [
        f"2026-11-0{d} 10:0{d}:11 worker-{d} queue depth {d * 3} latency {d * 9} ms"
        for d in range(7, 10)
    ]
)


def test_a_summary_keeps_the_lines_about_the_focus_wherever_they_are() -> None:
    """A log with numbers on every line: by position and signal alone, the first lines; with
    the round's focus, the line that names the ticket the user asks about."""
    blind = summarize(LOG, 40, COUNT)
    assert "FIX-872" not in blind and blind.startswith("2026-11-01")
    focused = summarize(LOG, 40, COUNT, frozenset({"t-4411"}))
    assert "FIX-872" in focused and COUNT(focused) <= 40
    b, _ = builder()
    out = b.build("Close ticket T-4411", [Turn(1, "read the log", LOG * 4)], [], budget=2000)
    assert "FIX-872" in out.sections[-1].text  # every line naming T-4411 kept: no pointer


def test_a_recalled_memory_says_when_and_points_to_its_full_text_when_shortened() -> None:
    """Shortened past a sentence that names the round's identifiers: a pointer; shortened
    with every such sentence kept: none (the full text holds nothing more about them)."""
    b, _ = builder()
    day = 1_764_000_000.0  # 2025-11-24
    mems = [
        Recalled("short", "Alice prefers SMS.", 0.9, "user_statement", 0.9, day),
        Recalled("long", LONG, 0.8, "tool_result", 0.8, day),
        Recalled("checks", CHECKS, 0.7, "tool_result", 0.8, day),
    ]
    out = b.build("Help with T-4411", [], mems, 2000)
    lines = {s.memory_id: s.text for s in out.sections if s.kind == "memory"}
    assert lines["short"] == "- [user_statement, trust 0.9, 2025-11-24] Alice prefers SMS."
    assert "2025-11-24" in lines["long"] and "[full text" not in lines["long"]
    assert lines["checks"].endswith("[full text: checks]")


def test_an_older_input_shown_whole_is_not_shown_again_as_a_memory() -> None:
    b, _ = builder()
    said = "My order is 88123."
    long_said = "I restarted it twice. " * 8 + "Reach me by SMS, code PREF-SMS-101."
    ts = [Turn(1, "a", "ok", user=said), Turn(2, "b", "ok", user=long_said)]
    ts += [Turn(n, "c", "ok") for n in range(3, 7)]
    mems = [
        Recalled("m-said", said, 0.9, "unspecified", 0.7),
        Recalled("m-long", long_said, 0.8, "unspecified", 0.7),  # its line is cut: kept
    ]
    out = b.build("Help", ts, mems, 2000)
    assert [s.memory_id for s in out.sections if s.kind == "memory"] == ["m-long"]


def test_the_memories_that_fit_are_shown_oldest_first() -> None:
    b, _ = builder()
    mems = [
        Recalled("new", "Reach me by SMS from now on.", 0.9, "user_statement", 0.9, 2e9),
        Recalled("old", "I prefer email.", 0.95, "user_statement", 0.9, 1e9),
        Recalled("weak", "The printer was fixed.", 0.1, "tool_result", 0.8, 1.5e9),
    ]
    room = b.build("Help", [], mems[:2], 2000)
    assert [s.memory_id for s in room.sections if s.kind == "memory"] == ["old", "new"]
    tight = b.build("Help", [], mems, COUNT("Goal: Help") + 2 * 22)
    kept = [s.memory_id for s in tight.sections if s.kind == "memory"]
    assert "weak" not in kept and kept == sorted(kept, key=lambda m: {"old": 0, "new": 1}[m])


def test_a_kept_observation_is_shown_again_as_a_memory_only_when_its_line_cuts_it() -> None:
    """An older round's observation kept as a memory: short enough for its one line, the
    memory is left out; cut by its line (a fix on a log's sixth line), the memory is shown."""
    b, _ = builder()
    applied = "Applied FIX-1 to ticket T-1."
    ts = [Turn(1, "a", LOG), Turn(2, "b", applied)] + [Turn(n, "c", "ok") for n in range(3, 7)]
    mems = [
        Recalled("m-log", LOG, 0.9, "tool_result", 0.8),
        Recalled("m-applied", applied, 0.8, "tool_result", 0.8),
    ]
    out = b.build("Close ticket T-4411", ts, mems, 2000, known={1: "m-log", 2: "m-applied"})
    shown = [s.memory_id for s in out.sections if s.kind == "memory"]
    assert shown == ["m-log"] and "FIX-872" in out.text()


def test_without_identifiers_in_the_focus_a_shortened_output_points_to_its_full_text() -> None:
    """Nothing tells what in it matters: a summary that is not the whole text is incomplete."""
    b, stored = builder()
    out = b.build("Fix the printer", [Turn(1, "read the log", LONG)], [], budget=2000)
    assert [x.round for x in stored] == [1] and "[full text: m-1]" in out.sections[-1].text


def test_a_memory_held_by_an_older_line_is_shown_when_the_budget_cuts_that_line() -> None:
    """A sentence of an older input (a preference kept apart) is in the prompt through that
    input's line while the line fits the budget; when the line is cut, the memory is shown."""
    b, _ = builder()
    said = "Hello there, thanks for the help so far. Always use SMS, code PREF-SMS-7."
    ts = [Turn(1, "a", "ok", user=said), *[Turn(n, "c", "x " * 40) for n in range(2, 6)]]
    mems = [Recalled("m-pref", "Always use SMS, code PREF-SMS-7.", 1.0, "", 0.7)]
    roomy = b.build("Help", ts, mems, 5000)
    assert "PREF-SMS-7" in roomy.text() and not any(s.kind == "memory" for s in roomy.sections)
    tight = b.build("Help", ts, mems, roomy.tokens - 1)  # the oldest line no longer fits
    assert "Round 1:" not in tight.text()  # the older line was cut ...
    assert "PREF-SMS-7" in tight.text() and tight.tokens < roomy.tokens  # ... and it is shown


def test_a_sentence_of_a_memory_shown_is_not_shown_again() -> None:
    b, _ = builder()
    whole = "The fan grinds. Always use SMS please."
    mems = [
        Recalled("m-whole", whole, 0.9, "", 0.7),
        Recalled("m-part", "Always use SMS please.", 0.5, "", 0.7),
    ]
    out = b.build("Help", [], mems, 2000)
    assert [s.memory_id for s in out.sections if s.kind == "memory"] == ["m-whole"]
