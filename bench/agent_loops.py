"""The loops of `bench agent` and the driver that runs one session through any of them.

Every loop runs the same sessions with the same stand-in (`bench.agent_model.decide`), the same
system prompt, image cost, output cost, tokenizer and prices. They differ only in what they
put in the prompt:
- **B0, classic ReAct**: the session's whole history verbatim (every input, action and tool
  output), nothing of earlier sessions. Favours B0 on anything said earlier in the session,
  which it never loses; costs it the most tokens.
- **B2, windowed**: the last `RECENT` rounds verbatim, but each tool output cut to its first
  `CUT_TOKENS` tokens; older rounds one line each (the user's message and the action whole, and
  the tool output's first line cut to `LINE_TOKENS`). A fix past the cut is lost to it, with no
  way back (it leaves no pointer). Keeping the user's messages whole favours B2 (and B3) on
  anything the user said, such as a preference stated earlier in the session.
- **B3, windowed with a vector memory**: B2, plus the `MEMORY_TOP` rounds of the user's earlier
  sessions closest by cosine to the user's current message (the server's encoder,
  `bench.encoder.bench_encoder`), shown in session order, each as B2 shows a recent round (tool
  output cut to `CUT_TOKENS`). It stores every round of every earlier session, never a summary.
The baselines call the medium route's model (`BASELINE_MODEL`), and the vision route's for the
call that reads an image (`VISION_MODEL`); the pocketd loop (`bench.agent_pocketd`) calls the
model Step routes to.

The driver (`run_session`) gives a loop the user's rounds, calls the stand-in on the loop's
prompt, answers its tool calls from the session (the scripted tool's output, a fix applied, the
user's reply to a question), and grades the closing answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from tokenizers import Tokenizer

from bench.agent_data import Round, Session
from bench.agent_model import (
    APPLY_FIX,
    ASK_USER,
    BASELINE_MODEL,
    GET_FULL_TEXT,
    IMAGE_TOKENS,
    MAX_CALLS_PER_ROUND,
    OUTPUT_TOKENS,
    TOOLS,
    VISION_MODEL,
    Mind,
    Prompt,
    decide,
    price,
    tools_json,
)
from server.config import BUILTIN_TOKENIZER
from server.core.memory.ports import TextEncoder

RECENT = 3
CUT_TOKENS = 300
LINE_TOKENS = 30
MEMORY_TOP = 5
_CONTACT = re.compile(r"Contact: (\S+?)\.?(?:\s|$)")


@dataclass(frozen=True)
class Call:
    """A prompt to send, and the model to send it to."""

    text: str
    model: str
    head: str = ""  # the fixed part of `text`: the system prompt and the tools


@dataclass(frozen=True)
class Turn:
    user: str
    action: str
    observation: str


@dataclass
class Outcome:
    """One session in one loop."""

    tokens: int = 0
    fixed: int = 0  # of `tokens`: the system prompt, the tools and the images
    cost: int = 0
    calls: int = 0
    fetches: int = 0
    asked: bool = False
    completion: bool = False
    preference_hit: bool = False  # answered with the current preference, without asking
    preference_in_prompt: bool = False  # the current code was in the closing round's prompt
    stale_preference: bool = False  # answered with a superseded code
    current_fix: bool = False
    earlier_fix: bool | None = None  # None: the session asks about no earlier ticket
    earlier_seen: tuple[bool, bool] = (False, False)  # its id, its fix in the closing prompt
    answer: str = ""
    by_model: dict[str, int] = field(default_factory=dict)  # prompt tokens by model


class Loop(Protocol):
    name: str
    tools: frozenset[str]

    def open(self, s: Session) -> None: ...
    def prompt(self, r: Round, fresh: bool) -> Call: ...
    def check(self, action: dict[str, Any]) -> None: ...
    def follow(self, memory_id: str) -> str: ...
    def record(self, r: Round, fresh: bool, action: dict[str, Any], observation: str) -> None: ...
    def usage(self, model: str, tokens: int) -> None: ...
    def close(self) -> int: ...


class Cutter:
    """The first `n` tokens of a text, by the bench's tokenizer."""

    def __init__(self) -> None:
        self._tok = Tokenizer.from_file(str(BUILTIN_TOKENIZER))
        self._tok.no_truncation()

    def __call__(self, text: str, n: int) -> str:
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= n:
            return text
        return text[: offsets[n - 1][1]] + " …[cut]"


def observe(action: dict[str, Any], s: Session, r: Round) -> str:
    """What the tool the stand-in called returns."""
    name, params = action.get("tool", ""), action.get("params", {})
    if name == r.tool:
        return r.output.text
    if name == APPLY_FIX:
        t, f = params.get("ticket", ""), params.get("fix", "")
        if (t, f) == (s.ticket, s.fix):
            return (
                f"Applied {f} to ticket {t}. The customer confirms the {s.product} works "
                f"again; the ticket is marked resolved."
            )
        return f"Applied {f} to ticket {t}. No change: the fault persists."
    if name == ASK_USER:
        return ask_reply(s)
    return "No result: that tool is not part of this round."


def ask_reply(s: Session) -> str:
    return f"The customer replies: {s.channel}, please. My preference code is {s.preference}."


def grade(o: Outcome, s: Session, answer: str, asked: bool) -> None:
    o.answer = answer
    o.asked = asked
    o.current_fix = f"Ticket {s.ticket}: {s.fix}." in answer
    if s.earlier_ticket:
        o.earlier_fix = f"Earlier ticket {s.earlier_ticket}: {s.earlier_fix}." in answer
    m = _CONTACT.search(answer)
    chosen = m.group(1) if m else ""
    o.preference_hit = chosen == s.preference and not asked
    o.stale_preference = chosen in s.stale
    o.completion = o.current_fix and o.earlier_fix is not False and chosen == s.preference


def _calls(
    loop: Loop, call: Call, r: Round, o: Outcome, mind: Mind, count: Callable[[str], int],
    fresh: bool,
) -> dict[str, Any]:  # fmt: skip
    """The model calls of one round: the first on `call`, one more per pointer it reads (the
    full text appended). The image of the user's message is in the message's first call (and
    its pointer reads). Returns its action."""
    text = call.text
    image = IMAGE_TOKENS if r.image and fresh else 0
    head = count(call.head) + image
    while True:
        n = count(text) + image
        o.tokens += n
        o.fixed += head
        o.by_model[call.model] = o.by_model.get(call.model, 0) + n
        o.calls += 1
        o.cost += price(call.model, n, OUTPUT_TOKENS)
        loop.usage(call.model, n)
        prompt = Prompt(text, r.text, loop.tools, r.closing, (r.tool, r.params))
        act = decide(prompt, mind)
        loop.check(act)
        if act.get("tool") != GET_FULL_TEXT:
            return act
        mid = str(act["params"]["id"])
        o.fetches += 1
        text += f"\nFull text of {mid}:\n{loop.follow(mid)}"


def run_session(loop: Loop, s: Session, count: Callable[[str], int]) -> Outcome:
    """`s` through `loop`; pocketd's own charges (`Loop.close`) are added to the cost."""
    o, mind = Outcome(), Mind()
    loop.open(s)
    try:
        for r in s.rounds:
            fresh = True
            for _ in range(MAX_CALLS_PER_ROUND):
                call = loop.prompt(r, fresh)
                if r.closing and fresh:
                    o.preference_in_prompt = s.preference in call.text
                    seen = (s.earlier_ticket in call.text, s.earlier_fix in call.text)
                    o.earlier_seen = seen if s.earlier_ticket else (False, False)
                act = _calls(loop, call, r, o, mind, count, fresh)
                if act["type"] == "finish":
                    grade(o, s, str(act["answer"]), mind.asked)
                    return o
                loop.record(r, fresh, act, observe(act, s, r))
                fresh = False
                if act["tool"] == r.tool:
                    break
        return o
    finally:
        o.cost += loop.close()


def model_for(r: Round, fresh: bool) -> str:
    """The baselines' model: the vision route's for the call that reads an image, else the
    medium route's."""
    return VISION_MODEL if r.image and fresh else BASELINE_MODEL


class Window:
    """B0 and B2: the session's turns, shown whole (B0) or windowed (B2)."""

    tools = frozenset(t["name"] for t in TOOLS)

    def __init__(self, name: str, system: str, cut: Cutter | None) -> None:
        """`cut` None: classic ReAct (B0), everything verbatim."""
        self.name = name
        self._head = f"{system}\n\nTools:\n{tools_json(TOOLS)}\n\n"
        self._cut = cut
        self.turns: list[Turn] = []
        self.goal = ""

    def open(self, s: Session) -> None:
        self.turns, self.goal = [], s.goal

    def _show(self, t: Turn) -> str:
        obs = t.observation if self._cut is None else self._cut(t.observation, CUT_TOKENS)
        said = f"User: {t.user}\n" if t.user else ""
        return f"{said}Action: {t.action}\nObservation: {obs}"

    def _line(self, k: int, t: Turn) -> str:
        assert self._cut is not None
        first = t.observation.split("\n", 1)[0]
        said = f"User: {t.user} | " if t.user else ""
        return f"Round {k}: {said}{t.action} → {self._cut(first, LINE_TOKENS)}"

    def body(self, r: Round, fresh: bool) -> list[str]:
        if self._cut is None:
            shown = [self._show(t) for t in self.turns]
        else:
            k = len(self.turns) - RECENT
            shown = [self._line(i + 1, t) for i, t in enumerate(self.turns[: max(k, 0)])]
            shown += [self._show(t) for t in self.turns[max(k, 0) :]]
        return shown + ([f"User: {r.text}"] if fresh else [])

    def prompt(self, r: Round, fresh: bool) -> Call:
        text = self._head + "\n".join([f"Goal: {self.goal}", *self.body(r, fresh)])
        return Call(text, model_for(r, fresh), self._head)

    def check(self, action: dict[str, Any]) -> None:
        pass

    def follow(self, memory_id: str) -> str:
        raise AssertionError("the baselines leave no pointer")

    def record(self, r: Round, fresh: bool, action: dict[str, Any], observation: str) -> None:
        self.turns.append(Turn(r.text if fresh else "", json.dumps(action), observation))

    def usage(self, model: str, tokens: int) -> None:
        pass

    def close(self) -> int:
        return 0


@dataclass
class _Kept:
    session: int
    index: int
    text: str  # as shown (tool output cut)
    vector: Any


@dataclass
class VectorMemory:
    """B3's memory: every round of a user's earlier sessions, with its vector."""

    encoder: TextEncoder
    kept: dict[str, list[_Kept]] = field(default_factory=dict)
    queries: dict[str, Any] = field(default_factory=dict)

    def add(self, user: str, session: int, shown: list[str], full: list[str]) -> None:
        if not full:
            return
        vecs = self.encoder.encode(full)
        rows = self.kept.setdefault(user, [])
        rows += [_Kept(session, i, t, v) for i, (t, v) in enumerate(zip(shown, vecs, strict=True))]

    def top(self, user: str, query: str, k: int) -> list[_Kept]:
        rows = self.kept.get(user, [])
        if not rows:
            return []
        if query not in self.queries:
            self.queries[query] = self.encoder.encode([query])[0]
        q = self.queries[query]
        sims = np.array([float(np.dot(q, r.vector)) for r in rows])
        best = [rows[i] for i in np.argsort(-sims)[:k]]
        return sorted(best, key=lambda r: (r.session, r.index))


class Windowed(Window):
    """B3: B2 and the vector memory over the user's earlier sessions."""

    def __init__(self, name: str, system: str, cut: Cutter, memory: VectorMemory) -> None:
        super().__init__(name, system, cut)
        self._memory = memory
        self._user, self._session = "", 0

    def open(self, s: Session) -> None:
        super().open(s)
        self._user, self._session = s.user, s.index

    def prompt(self, r: Round, fresh: bool) -> Call:
        found = self._memory.top(self._user, r.text, MEMORY_TOP)
        mem = [f"[earlier session {m.session + 1}] {m.text}" for m in found]
        head = ["Memory (rounds of earlier sessions):", *mem] if mem else []
        text = self._head + "\n".join([f"Goal: {self.goal}", *head, *self.body(r, fresh)])
        return Call(text, model_for(r, fresh), self._head)

    def close(self) -> int:
        shown = [self._show(t) for t in self.turns]
        full = [
            f"User: {t.user}\nAction: {t.action}\nObservation: {t.observation}" for t in self.turns
        ]
        self._memory.add(self._user, self._session, shown, full)
        return 0
