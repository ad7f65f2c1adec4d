"""The in-process loops of `bench agent` and the driver that runs one session through any loop.

Every loop runs the same sessions with the same stand-in (`bench.agent_model.decide`), the same
system prompt and tool text (`head`: the compact tool lines, `TOOL_TEXT`), image cost, output
cost, tokenizer and prices. They differ only in what else they put in the prompt:
- **B0, classic ReAct**: the session's whole history verbatim (every input, action and tool
  output), nothing of earlier sessions. Favours B0 on anything said earlier in the session,
  which it never loses; costs it the most tokens.
- **B2, windowed**: the last `RECENT` rounds verbatim, but each tool output cut to its first
  `CUT_TOKENS` tokens; older rounds one line each (the user's message and the action whole, and
  the tool output's first line cut to `LINE_TOKENS`). A fix past the cut is lost to it, with no
  way back (it leaves no pointer). Keeping the user's messages whole favours B2 (and B3) on
  anything the user said, such as a preference stated earlier in the session.
- **B3, windowed with a vector memory** (the named baseline): B2 with the line selection
  pocketd's summaries have, a grep for the task's ids (`ids_in`: the identifiers of the goal
  and the user's messages, such as the ticket and the order number) past each cut: the
  sentences or lines past it that name one are kept (`Shortener`); plus the `MEMORY_TOP` rounds
  of the user's earlier sessions closest by cosine to the user's current message (the server's
  encoder, `bench.encoder.bench_encoder`), shown in session order, one line each as B2 shows an
  older round (with that session's ids grepped). It stores every round of every earlier
  session, never a summary.
- **B3-full, B3 as it was before issue 28**: no grep (B2's cut), and each recalled round shown
  as a recent round (its output cut to `CUT_TOKENS`). Kept as a labelled row.
The baselines call the medium route's model (`BASELINE_MODEL`), and the vision route's for the
call that reads an image (`VISION_MODEL`); the pocketd loop (`bench.agent_pocketd`) calls the
model Step routes to. The oracle and trivial rows are in `bench.agent_bounds`.

The driver (`run_session`) gives a loop the user's rounds, calls the stand-in on what the
call's model reads of the loop's prompt (`Reads`), answers its tool calls from the session (the
scripted tool's output, a fix applied, the user's reply to a question), and grades the closing
answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
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
    TOOL_TEXT,
    TOOLS,
    VISION_MODEL,
    Mind,
    Prompt,
    decide,
    one_price,
    price,
)
from server.config import BUILTIN_TOKENIZER
from server.core.memory.ports import TextEncoder

RECENT = 3
CUT_TOKENS = 300
LINE_TOKENS = 30
MEMORY_TOP = 5
_CONTACT = re.compile(r"Contact: (\S+?)\.?(?:\s|$)")
_ID = re.compile(r"\b[A-Z]{1,5}-\d{3,}\b")  # an identifier: T-48213, ORD-20931
_SEGMENT = re.compile(r"(?<=[.!?])\s+|\n+")  # sentences and lines


def segments(text: str) -> list[str]:
    """The sentences and lines of `text`."""
    return [seg for _, seg in _spans(text)]


def _spans(text: str) -> list[tuple[int, str]]:
    """The sentences and lines of `text`, each with where it ends."""
    out, start = [], 0
    for m in [*_SEGMENT.finditer(text), None]:
        end = m.start() if m else len(text)
        if text[start:end].strip():
            out.append((end, text[start:end].strip()))
        start = m.end() if m else end
    return out


def ids_in(*texts: str) -> frozenset[str]:
    """The identifiers in `texts` (letters, a dash, three digits or more)."""
    return frozenset(i for t in texts for i in _ID.findall(t))


def head(system: str, tools: str = TOOL_TEXT) -> str:
    """The fixed part of every prompt, in every loop: the system prompt and the tool lines."""
    return f"{system}\n\nTools:\n{tools}\n\n"


@dataclass(frozen=True)
class Call:
    """A prompt to send, and the model to send it to."""

    text: str
    model: str
    head: str = ""  # the fixed part of `text`: the system prompt and the tools
    tools: str = ""  # the tool text inside `head`


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
    tool_tokens: int = 0  # of `fixed`: the tool text
    cost: int = 0
    cost_one_price: int = 0  # every call at the medium route's price
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
    """The first (or last) `n` tokens of a text, by the bench's tokenizer."""

    def __init__(self) -> None:
        self._tok = Tokenizer.from_file(str(BUILTIN_TOKENIZER))
        self._tok.no_truncation()
        self._tok.no_padding()  # the file pads to 128: a short line's cut fell in the padding

    def split(self, text: str, n: int) -> tuple[str, str]:
        """The first `n` tokens of `text`, and the rest ("" when it has no more)."""
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= n:
            return text, ""
        end = offsets[n - 1][1]
        return text[:end], text[end:]

    def tail(self, text: str, n: int) -> str:
        """The last `n` tokens of `text`."""
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        return text if len(offsets) <= n else text[offsets[-n][0] :]


class Shortener:
    """How a windowed loop shortens a tool output: its head, and with `grep` the sentences or
    lines past the cut that name one of the task's ids, joined by " … "."""

    def __init__(self, cut: Cutter, grep: bool) -> None:
        self._cut = cut
        self.grep = grep

    def output(self, text: str, ids: frozenset[str]) -> str:
        """A recent round's output: its first `CUT_TOKENS` tokens (and the grep)."""
        kept, rest = self._cut.split(text, CUT_TOKENS)
        return self._join(text, kept, bool(rest), ids)

    def line(self, text: str, ids: frozenset[str]) -> str:
        """An older round's output: its first line cut to `LINE_TOKENS` (and the grep)."""
        kept, rest = self._cut.split(text.partition("\n")[0], LINE_TOKENS)
        return self._join(text, kept, bool(rest), ids)

    def _join(self, text: str, kept: str, cut: bool, ids: frozenset[str]) -> str:
        """`kept` (the head of `text`), marked when `cut`; with the grep, each sentence or line
        that ends past it and names one of `ids`, whole."""
        out = f"{kept} …[cut]" if cut else kept
        if not self.grep:
            return out
        found = [seg for end, seg in _spans(text) if end > len(kept) and ids & ids_in(seg)]
        return " … ".join([out, *found])


class Reads:
    """What a model reads of its prompt: all of it, or for a model with a usable context of N
    tokens (`limits`), the last N tokens of a longer prompt (the goal and older facts lost)."""

    def __init__(self, cut: Cutter | None = None, limits: Mapping[str, int] | None = None) -> None:
        self._cut = cut
        self.limits = dict(limits or {})

    def __call__(self, text: str, model: str) -> str:
        n = self.limits.get(model, 0)
        return self._cut.tail(text, n) if n and self._cut is not None else text


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


@dataclass(frozen=True)
class _Driver:
    """What one session's calls share: its loop, outcome, stand-in's memory, tokenizer and
    what each model reads."""

    loop: Loop
    o: Outcome
    mind: Mind
    count: Callable[[str], int]
    reads: Reads

    def calls(self, call: Call, r: Round, fresh: bool) -> dict[str, Any]:
        """The model calls of one round: the first on `call`, one more per pointer it reads
        (the full text appended). The image of the user's message is in the message's first
        call (and its pointer reads). Returns its action."""
        o, text = self.o, call.text
        image = IMAGE_TOKENS if r.image and fresh else 0
        fixed, tools = self.count(call.head) + image, self.count(call.tools)
        while True:
            n = self.count(text) + image
            o.tokens += n
            o.fixed += fixed
            o.tool_tokens += tools
            o.by_model[call.model] = o.by_model.get(call.model, 0) + n
            o.calls += 1
            o.cost += price(call.model, n, OUTPUT_TOKENS)
            o.cost_one_price += one_price(n, OUTPUT_TOKENS)
            self.loop.usage(call.model, n)
            seen = self.reads(text, call.model)
            act = decide(
                Prompt(seen, r.text, self.loop.tools, r.closing, (r.tool, r.params)), self.mind
            )
            self.loop.check(act)
            if act.get("tool") != GET_FULL_TEXT:
                return act
            mid = str(act["params"]["id"])
            o.fetches += 1
            text += f"\nFull text of {mid}:\n{self.loop.follow(mid)}"


def run_session(
    loop: Loop, s: Session, count: Callable[[str], int], reads: Reads | None = None
) -> Outcome:
    """`s` through `loop`; the loop's own charges (`Loop.close`) are added to both costs."""
    o, mind = Outcome(), Mind()
    d = _Driver(loop, o, mind, count, reads or Reads())
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
                act = d.calls(call, r, fresh)
                if act["type"] == "finish":
                    grade(o, s, str(act["answer"]), mind.asked)
                    return o
                loop.record(r, fresh, act, observe(act, s, r))
                fresh = False
                if act["tool"] == r.tool:
                    break
        return o
    finally:
        own = loop.close()
        o.cost += own
        o.cost_one_price += own


def model_for(r: Round, fresh: bool) -> str:
    """The baselines' model: the vision route's for the call that reads an image, else the
    medium route's."""
    return VISION_MODEL if r.image and fresh else BASELINE_MODEL


class Plain:
    """What the in-process loops share: the same head (system prompt and `TOOL_TEXT`), the
    baselines' models, no action checks, no pointers, no charges of their own."""

    tools = frozenset(t["name"] for t in TOOLS)

    def __init__(self, name: str, system: str) -> None:
        self.name = name
        self._head = head(system)

    def call(self, body: list[str], r: Round, fresh: bool) -> Call:
        return Call(self._head + "\n".join(body), model_for(r, fresh), self._head, TOOL_TEXT)

    def check(self, action: dict[str, Any]) -> None:
        pass

    def follow(self, memory_id: str) -> str:
        raise AssertionError("the in-process loops leave no pointer")

    def usage(self, model: str, tokens: int) -> None:
        pass

    def close(self) -> int:
        return 0


class Window(Plain):
    """B0 and B2: the session's turns, shown whole (B0) or windowed (B2)."""

    def __init__(self, name: str, system: str, short: Shortener | None) -> None:
        """`short` None: classic ReAct (B0), everything verbatim."""
        super().__init__(name, system)
        self._short = short
        self.turns: list[Turn] = []
        self.goal = ""
        self.ids: frozenset[str] = frozenset()

    def open(self, s: Session) -> None:
        self.turns, self.goal, self.ids = [], s.goal, ids_in(s.goal)

    def show(self, t: Turn, ids: frozenset[str]) -> str:
        """A round in full (its output shortened, if this loop shortens)."""
        obs = t.observation if self._short is None else self._short.output(t.observation, ids)
        said = f"User: {t.user}\n" if t.user else ""
        return f"{said}Action: {t.action}\nObservation: {obs}"

    def line(self, k: int, t: Turn, ids: frozenset[str]) -> str:
        """A round in one line: round `k`, the user's message, the action and the output's
        line (`Shortener.line`)."""
        assert self._short is not None
        said = f"User: {t.user} | " if t.user else ""
        return f"Round {k}: {said}{t.action} → {self._short.line(t.observation, ids)}"

    def body(self, r: Round, fresh: bool) -> list[str]:
        if self._short is None:
            shown = [self.show(t, self.ids) for t in self.turns]
        else:
            k = max(len(self.turns) - RECENT, 0)
            shown = [self.line(i + 1, t, self.ids) for i, t in enumerate(self.turns[:k])]
            shown += [self.show(t, self.ids) for t in self.turns[k:]]
        return shown + ([f"User: {r.text}"] if fresh else [])

    def prompt(self, r: Round, fresh: bool) -> Call:
        return self.call([f"Goal: {self.goal}", *self.body(r, fresh)], r, fresh)

    def record(self, r: Round, fresh: bool, action: dict[str, Any], observation: str) -> None:
        if fresh:
            self.ids |= ids_in(r.text)
        self.turns.append(Turn(r.text if fresh else "", json.dumps(action), observation))


class Encodings:
    """An encoder's vectors by text, each computed once (the B3 loops embed the same rounds)."""

    def __init__(self, encoder: TextEncoder) -> None:
        self._encoder = encoder
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}

    def __call__(self, texts: list[str]) -> list[npt.NDArray[np.float32]]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if todo:
            self._vectors.update(zip(todo, self._encoder.encode(todo), strict=True))
        return [self._vectors[t] for t in texts]


@dataclass
class _Kept:
    session: int
    index: int
    turn: Turn
    ids: frozenset[str]  # its session's ids
    vector: npt.NDArray[np.float32]


@dataclass
class VectorMemory:
    """B3's memory: every round of a user's earlier sessions, with its vector (of its full
    text) and its session's ids."""

    encode: Encodings
    kept: dict[str, list[_Kept]] = field(default_factory=dict)

    def add(self, user: str, session: int, turns: list[Turn], ids: frozenset[str]) -> None:
        if not turns:
            return
        vecs = self.encode(
            [f"User: {t.user}\nAction: {t.action}\nObservation: {t.observation}" for t in turns]
        )
        rows = self.kept.setdefault(user, [])
        rows += [
            _Kept(session, i, t, ids, v) for i, (t, v) in enumerate(zip(turns, vecs, strict=True))
        ]

    def top(self, user: str, query: str, k: int) -> list[_Kept]:
        rows = self.kept.get(user, [])
        if not rows:
            return []
        q = self.encode([query])[0]
        sims = np.array([float(np.dot(q, r.vector)) for r in rows])
        best = [rows[i] for i in np.argsort(-sims)[:k]]
        return sorted(best, key=lambda r: (r.session, r.index))


class Windowed(Window):
    """B3 (`one_line`: a recalled round in one line) and B3-full (in full, as a recent round)."""

    def __init__(
        self, name: str, system: str, short: Shortener, memory: VectorMemory, one_line: bool
    ) -> None:
        super().__init__(name, system, short)
        self._memory = memory
        self._one_line = one_line
        self._user, self._session = "", 0

    def open(self, s: Session) -> None:
        super().open(s)
        self._user, self._session = s.user, s.index

    def recalled(self, m: _Kept) -> str:
        shown = (
            self.line(m.index + 1, m.turn, m.ids) if self._one_line else self.show(m.turn, m.ids)
        )
        return f"[earlier session {m.session + 1}] {shown}"

    def prompt(self, r: Round, fresh: bool) -> Call:
        mem = [self.recalled(m) for m in self._memory.top(self._user, r.text, MEMORY_TOP)]
        head = ["Memory (rounds of earlier sessions):", *mem] if mem else []
        return self.call([f"Goal: {self.goal}", *head, *self.body(r, fresh)], r, fresh)

    def close(self) -> int:
        self._memory.add(self._user, self._session, self.turns, self.ids)
        return 0
