"""`bench agent` gives every loop the same inputs (issue 28): the same tool text in every loop,
pocketd's included (each prompt starts with the one head, system prompt and tool lines, and
holds no JSON schema); B3's recalled rounds one line each, with the same grep for the task's ids
past a cut; an oracle handed exactly the needed facts and a trivial row handed none; and a
preference precision that is undefined, not 0, when nothing was stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from bench.agent import goals, loops, precision
from bench.agent_data import BLIND_WORDINGS, Round, Session, Wordings, generate
from bench.agent_loops import (
    CUT_TOKENS,
    Call,
    Cutter,
    Encodings,
    Loop,
    Outcome,
    Reads,
    Shortener,
    Windowed,
    head,
    run_session,
)
from bench.agent_model import GET_TOOL, SYSTEM_PROMPT, TOOL_TEXT, TOOLS, tools_json
from bench.agent_pocketd import Latency, Pocketd
from pocketd import Client
from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.token_counter import TokenCounter
from tests.conftest import TOKENIZER, RunningServer

COUNT: Callable[[str], int] = TokenCounter(TOKENIZER).count


def sessions(n: int = 2, rounds: int = 5) -> list[Session]:
    """One user's first `n` sessions, with long outputs (so the windowed loops cut them)."""
    return generate(1, n, rounds, 7, COUNT, Wordings.load(BLIND_WORDINGS), "long")


class Recorder:
    """A loop, with every call it made and every full text it handed back (which the driver
    appends to the call's text, for another model call)."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        self.name, self.tools = loop.name, loop.tools
        self.calls: list[Call] = []
        self.fetched: list[str] = []
        self.open, self.check = loop.open, loop.check
        self.record, self.usage, self.close = loop.record, loop.usage, loop.close

    def prompt(self, r: Round, fresh: bool) -> Call:
        call = self.loop.prompt(r, fresh)
        self.calls.append(call)
        return call

    def follow(self, memory_id: str) -> str:
        text = self.loop.follow(memory_id)
        self.fetched.append(text)
        return text


def run_all(
    every: dict[str, Loop], data: list[Session]
) -> dict[str, tuple[Recorder, list[Outcome]]]:
    out = {}
    for name, loop in every.items():
        rec = Recorder(loop)
        out[name] = (rec, [run_session(rec, s, COUNT) for s in data])
    return out


def pocketd_loop(server: RunningServer, data: list[Session]) -> tuple[Recorder, list[Outcome]]:
    with Client(server.target, timeout=30) as c:
        rec = Recorder(Pocketd(c, SYSTEM_PROMPT, Latency(), 0.0))
        return rec, [run_session(rec, s, COUNT) for s in data]


async def test_every_loop_sends_the_same_tool_text(
    server: RunningServer, encoder: OnnxTextEncoder
) -> None:
    data = sessions()
    ran = run_all(loops(SYSTEM_PROMPT, Encodings(encoder)), data)
    ran["pocketd"] = await asyncio.to_thread(pocketd_loop, server, data)
    assert set(ran) == {"oracle", "trivial", "B0", "B2", "B3-full", "B3", "pocketd"}
    shared = head(SYSTEM_PROMPT, TOOL_TEXT)  # built here, not read from any loop's `Call`
    schemas = [tools_json(TOOLS), *(tools_json([t]) for t in [*TOOLS, GET_TOOL])]
    for name, (rec, outcomes) in ran.items():
        assert rec.calls, name
        assert {c.tools for c in rec.calls} == {TOOL_TEXT}, name  # the same string, every call
        for c in rec.calls:  # what the call really sends: its text, from its first token
            assert c.text.startswith(shared) and c.head == shared, name
            assert c.text.count(TOOL_TEXT) == 1, name  # the tool lines once, in the head
        for sent in [*(c.text for c in rec.calls), *rec.fetched]:
            for schema in schemas:  # no JSON schemas anywhere, all tools or one (pre-issue 28)
                assert schema[1:-1] not in sent, name
            assert '"properties"' not in sent, name  # nor in any other layout
        for o in outcomes:
            assert o.calls and o.tool_tokens == o.calls * COUNT(TOOL_TEXT), name
            assert o.cost_one_price > 0 and o.cost > 0, name


def test_b3_recalls_one_line_per_round_with_the_earlier_tasks_ids_grepped(
    encoder: OnnxTextEncoder,
) -> None:
    data = sessions(n=3)
    every = loops(SYSTEM_PROMPT, Encodings(encoder))
    for s in data:
        run_session(every["B3"], s, COUNT)
        run_session(every["B3-full"], s, COUNT)
    fair, full = every["B3"], every["B3-full"]
    assert isinstance(fair, Windowed) and isinstance(full, Windowed)
    user = data[0].user
    kept = fair._memory.kept[user]
    assert {m.session for m in kept} == {s.index for s in data}  # every earlier session
    assert all("\n" not in fair.recalled(m) for m in kept)  # one line per recalled round
    assert any("\n" in full.recalled(m) for m in full._memory.kept[user])  # B3-full: whole
    for s in data:  # the round that found a session's fix recalls its fix line, past any cut
        fix_output = s.rounds[s.fix_round - 1].output.text
        found = next(m for m in kept if m.session == s.index and m.turn.observation == fix_output)
        line = fair.recalled(found)
        assert s.ticket in line and s.fix in line
        assert COUNT(line) < COUNT(fix_output) / 4


def test_the_grep_keeps_past_the_cut_the_lines_that_name_the_tasks_ids() -> None:
    cut = Cutter()
    filler = "\n".join(f"line {i}: fan speed nominal, nothing to report" for i in range(80))
    text = f"{filler}\ncase T-12345 matched: apply FIX-0001\ncase T-99999 matched: apply FIX-0002"
    ids = frozenset({"T-12345"})
    grep, head_only = Shortener(cut, grep=True), Shortener(cut, grep=False)
    assert COUNT(head_only.output(text, ids)) <= CUT_TOKENS + 5
    assert "FIX-0001" not in head_only.output(text, ids)
    for shown in (grep.output(text, ids), grep.line(text, ids)):
        assert "FIX-0001" in shown and "FIX-0002" not in shown  # another ticket's fix is not
    assert "\n" not in grep.line(text, ids)
    assert grep.output("short text", ids) == "short text"
    # A short first line is kept whole (the tokenizer's file pads to 128 tokens: not counted).
    first = "Opened ticket T-12345 for your printer."
    assert head_only.line(f"{first}\nPriority normal.", ids) == first


def test_the_oracle_gets_the_needed_facts_and_the_trivial_row_nothing_else(
    encoder: OnnxTextEncoder,
) -> None:
    data = sessions(n=3)
    ran = run_all(loops(SYSTEM_PROMPT, Encodings(encoder)), data)
    oracle, outcomes = ran["oracle"]
    assert all(o.completion and o.preference_hit for o in outcomes)
    closing = [c.text for c in oracle.calls if "Contact preference:" in c.text]
    assert len(closing) == len(data)
    for s, text in zip(data, closing, strict=True):
        assert s.fix in text and s.preference in text and (s.earlier_fix or "") in text
        assert all(code not in text for code in s.stale)  # only the current preference
        fix_output = s.rounds[s.fix_round - 1].output.text
        head = oracle.calls[0].head
        assert COUNT(text[len(head) :]) < COUNT(fix_output) / 4  # the fix's line, not its output
    trivial, outcomes = ran["trivial"]
    assert not any(o.completion or o.current_fix for o in outcomes)
    for c in trivial.calls:
        body = c.text[len(c.head) :].split("\n")
        assert len(body) == 2 and body[0].startswith("Goal: ") and body[1].startswith("User: ")
    b0 = ran["B0"][1]
    assert sum(o.tokens for o in outcomes) < sum(o.tokens for o in b0)


def test_a_small_tier_given_a_usable_context_reads_only_the_end_of_a_prompt() -> None:
    reads = Reads(Cutter(), {"small": 5})
    text = "Goal: Resolve ticket T-12345. " + "filler words " * 20 + "the end"
    assert reads(text, "large") == text
    seen = reads(text, "small")
    assert text.endswith(seen) and "T-12345" not in seen and COUNT(seen) <= 6


def test_preference_precision_with_nothing_stored_is_undefined() -> None:
    data = sessions(n=1)
    p = precision({}, data)
    assert p["precision"] is None and p["stored"] == 0
    zero = {
        "tokens": 0.0, "cost": 0.0, "cost_one_price": 0.0, "completion": 0.0,
        "preference_hit": 0.0,
    }  # fmt: skip
    r = {
        "reductions": {"B0": zero, "B3": zero},
        "pocketd": zero,
        "preference_precision": p["precision"],
        "step_p50_ms": 11.0,
        "step_p99_ms": 1.0,
    }
    g = goals(r)["preference_precision"]
    assert g["value"] is None and not g["met"]
    assert goals(r)["step_p99"]["met"] and not goals(r)["step_p50"]["met"]  # ceilings
    assert goals(r)["b3_completion"]["met"] and not goals(r)["b3_cost_one_price"]["met"]
