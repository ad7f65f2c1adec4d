"""What every loop of `bench agent` shares: the system prompt, the tool schemas, the image and
output costs, the prices, and the stand-in model.

**The same fixed cost on every side.** Every model call, in every loop, carries the system prompt
(`system_prompt`, about 300 tokens, or padded to `--system-tokens`) and the tool schemas. An
image costs `IMAGE_TOKENS` in the call that first reads the user's message that carries it (and
in the pointer reads that extend that call), in every loop; the baselines make that call at the
vision route's model (`VISION_MODEL`, as the configuration routes images), pocketd at the model
Step routes it to (the vision route, for an input with an image). Every loop sends the same tool
text, `TOOL_TEXT`: the compact one-line descriptions of `TOOLS` and `GET_TOOL` (the server's own
`compact`, the lines Step lists as `plan.tools`), not the JSON schemas, which any loop could send
as lines as well (the pocketd loop sends what Step lists, and the bench counts each call's tool
tokens, so a difference would show). Every call is charged `OUTPUT_TOKENS` of output.

**Cost** is reported twice: routed (each call at its model's price, `price`) and at one price
(every call at the medium route's price, `one_price`): the stand-in answers as well on every
tier, so the routed cost alone cannot punish a cheap tier. `agent_loops.Reads` can punish one: a
model given a usable context of N tokens reads only the last N tokens of a longer prompt (what
a client that truncates from the left would send it), so a round whose facts lie further back
fails on that tier (`bench agent --small-context N`, for the simple route's model).

**The stand-in model** (`decide`) does not know which loop it is in, nor what the round needs:
it reads its prompt. It knows the tool the user's request calls for (`Prompt.planned`: the
round's scripted investigation tool, the same in every loop), the user's latest message, and
its own tool calls this task (`Mind`: the pointers it followed, whether it asked the user),
as a real model sees its own calls in its history. From the prompt it reads:
- the current ticket: the first ticket id of the prompt's `Goal:` line;
- fixes: a line or sentence that names exactly one ticket id and one fix code pairs them (so
  a distractor fix for another ticket is told apart by its id);
- its own tickets: ids in "Opened ticket T-…" and "Applied FIX-… to ticket T-…" sentences;
- preference codes: the last one in the prompt is taken as the current one (prompts are read as
  chronological; a superseded code placed after the current one misleads it, as it would mislead
  a model that cannot tell their dates apart);
- pointers: `[full text: <id>]`, which pocketd's context builder leaves when it shortens a long
  observation (server/core/agent/context.py).

Each round it does the first of these that applies:
1. at the closing round, when the current fix is not in the prompt and a pointer it has not
   followed is, it reads the pointer (`get_full_text`, a Get; the full text is appended to the
   prompt for one more call). Pointers shorten this session's outputs, so it does not read them
   for an earlier ticket's fix;
2. at the closing round, with no preference code in the prompt and not asked yet, it asks the
   user (`ask_user`, a round; the user answers with the preference in the observation);
3. at the closing round, it answers ("Ticket T: FIX. Earlier ticket T': FIX'. Contact: PREF."),
   with "unknown" for what it could not find. The earlier ticket is the one the user names by
   id, or for "the ticket from last time" its highest own ticket id below the current one;
4. before the closing round, when the current ticket's fix is in the prompt and not applied, it
   applies it (`apply_fix`, a round);
5. before the closing round, when the current fix is not in the prompt and the newest pointer is
   one it has not followed, it reads it (at most `MAX_FETCHES` a task);
6. otherwise it calls the planned tool.

What favours whom: unless `--small-context` is given, the stand-in answers as well on every tier,
so the cheaper tiers Step routes to cost pocketd nothing in quality (a real small model might do
worse; the one-price cost shows the saving without them). It reads a pointer
only where pocketd leaves one (the baselines cut without one), and each read costs a call with
the full text in it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from server.core.agent.tools import compact
from server.core.settings import AgentSettings

OUTPUT_TOKENS = 40  # charged on every model call, in every loop
IMAGE_TOKENS = 765  # an image in a prompt (a 512×512 tile at high detail), in every loop
MAX_FETCHES = 8  # pointers read per task
MAX_CALLS_PER_ROUND = 12  # a guard: a round's model calls
ASK_USER, APPLY_FIX, GET_FULL_TEXT = "ask_user", "apply_fix", "get_full_text"
BASELINE_MODEL = AgentSettings().routes["medium"].model  # also the one price of every call
SMALL_MODEL = AgentSettings().routes["simple"].model
VISION_MODEL = AgentSettings().routes["vision"].model  # the baselines' call that sees an image

SYSTEM_PROMPT = (
    "You are the support agent of Northwind Devices, helping customers with printers, routers, "
    "laptops, cameras, tablets and scanners. Work one step at a time: read the ticket and what "
    "the customer says, call one tool, read its result, and decide the next step. Answer with "
    "exactly one JSON object and nothing else: either "
    '{"type": "tool", "tool": NAME, "params": {...}} to call a tool, or '
    '{"type": "finish", "answer": TEXT} when the ticket can be closed.\n'
    "Rules:\n"
    "1. Never guess a fix. Apply a fix only when a log, a diagnostic report or a knowledge-base "
    "article names it for this customer's ticket; fixes listed for other customers' cases do "
    "not apply.\n"
    "2. Before closing, apply the fix and make sure the customer confirms it worked.\n"
    "3. When the customer asks about an earlier ticket, answer from the records you have; say "
    "so when you have none.\n"
    "4. Contact the customer only through the channel they chose most recently, and quote "
    "their preference code in the closing summary. If you do not know it, ask them.\n"
    "5. Do not promise refunds, replacements or dates; hand such requests to billing or the "
    "second line, and say that you did.\n"
    "6. Keep the customer's personal data out of tool parameters, except the ticket id.\n"
    "The closing answer lists, in one line each, the ticket and its fix, any earlier ticket "
    "asked about and its fix, and the contact preference code."
)
POLICY_FILLER = (
    "\nPolicy note: escalations go to the second line with the ticket id, the product, the "
    "firmware version and the steps already taken. Warranty questions are answered from the "
    "order date; goods bought more than 24 months ago are out of warranty unless the customer "
    "holds an extended plan. Be brief, friendly and precise; never blame the customer."
)


def _tool(
    name: str, description: str, params: dict[str, str], required: list[str]
) -> dict[str, Any]:
    props = {k: {"type": "string", "description": v} for k, v in params.items()}
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props, "required": required},
    }


TOOLS: list[dict[str, Any]] = [
    _tool("open_ticket", "Open a support ticket for the customer's device. Returns the ticket id. "
          "Use when a new problem is reported.",
          {"product": "The device", "order": "The order number"}, ["product"]),
    _tool("fetch_logs", "Fetch the device's recent logs for a ticket. Returns the log lines, "
          "newest last. Use when the device misbehaves and the cause is not known.",
          {"ticket": "The ticket id", "since": "How far back, e.g. -6h"}, ["ticket"]),
    _tool("search_kb", "Search the knowledge base of known issues. Returns the best matching "
          "article. Use when the symptom may be a known issue.",
          {"query": "What to look for"}, ["query"]),
    _tool("run_diagnostics", "Run the remote diagnostic suite on the customer's device. Returns "
          "the report, one check per line. Use when hardware may be at fault.",
          {"ticket": "The ticket id", "suite": "quick or full"}, ["ticket"]),
    _tool("read_screenshot", "Read the screenshot the customer sent. Returns what it shows. Use "
          "when the customer sends an image.",
          {"ticket": "The ticket id"}, ["ticket"]),
    _tool(APPLY_FIX, "Apply a fix to the customer's device remotely. Returns whether it worked. "
          "Use when a record names the fix for this ticket.",
          {"ticket": "The ticket id", "fix": "The fix code"}, ["ticket", "fix"]),
    _tool(ASK_USER, "Ask the customer a question. Returns their reply. Use when you need "
          "information only the customer has.",
          {"question": "The question"}, ["question"]),
]  # fmt: skip
GET_TOOL = _tool(
    GET_FULL_TEXT,
    "Read the full text of a shortened observation, by the id in its full-text pointer. "
    "Returns the whole text. Use when a shortened observation hides what you need.",
    {"id": "The id in the pointer"},
    ["id"],
)

TOOL_TEXT = "\n".join(compact(t, i) for i, t in enumerate([*TOOLS, GET_TOOL]))

# A code is read wherever it stands: "偏好PREF-EMAIL-504" has no word boundary before it (a
# Chinese character is a word character), and a model reads it all the same.
_TICKET = re.compile(r"(?<![A-Za-z0-9-])T-\d{5}(?![A-Za-z0-9])")
_FIX = re.compile(r"(?<![A-Za-z0-9-])FIX-\d{4}(?![A-Za-z0-9])")
_PREF = re.compile(r"(?<![A-Za-z0-9-])PREF-[A-Z]+-\d{3}(?![A-Za-z0-9])")
_POINTER = re.compile(r"\[full text: ([\w-]+)\]")
_SEGMENT = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_OWN = re.compile(r"Opened ticket (T-\d{5})|Applied FIX-\d{4} to ticket (T-\d{5})")
_APPLIED = re.compile(r"Applied (FIX-\d{4}) to ticket (T-\d{5})|\"apply_fix\"")


def price(model: str, tokens_in: int, tokens_out: int) -> int:
    """Micros of one call at `model`'s price (agent.prices), as Step charges it."""
    s = AgentSettings()
    p = s.prices.get(model, s.default_price)
    return -(-tokens_in * p.input_per_1k_micros // 1000) - (
        -tokens_out * p.output_per_1k_micros // 1000
    )


def one_price(tokens_in: int, tokens_out: int) -> int:
    """Micros of one call with every token at the medium route's price."""
    return price(BASELINE_MODEL, tokens_in, tokens_out)


def system_prompt(tokens: int, count: Any) -> str:
    """The system prompt; `tokens` > its size pads it with policy notes, cut to `tokens`."""
    text = SYSTEM_PROMPT
    if tokens <= count(text):
        return text
    while count(text) < tokens:
        text += POLICY_FILLER
    words = text.split(" ")
    while count(" ".join(words)) > tokens:
        words.pop()
    return " ".join(words)


def tools_json(tools: list[dict[str, Any]]) -> str:
    """The schemas as a model API receives them."""
    return json.dumps(tools, ensure_ascii=False)


@dataclass(frozen=True)
class Prompt:
    """One model call: what it reads, the user's latest message, the tools it may call, and the
    tool the user's request calls for (with its parameters)."""

    text: str
    current: str
    tools: frozenset[str]
    closing: bool
    planned: tuple[str, dict[str, str]]


@dataclass
class Mind:
    """What the model knows of its own calls in this task."""

    followed: list[str] = field(default_factory=list)
    asked: bool = False


@dataclass(frozen=True)
class Facts:
    """What the stand-in reads in a prompt."""

    ticket: str
    fixes: dict[str, str]
    own: frozenset[str]
    prefs: tuple[str, ...]
    pointers: tuple[str, ...]
    applied: frozenset[str]


def read(text: str) -> Facts:
    """The facts of a prompt (see the module docstring)."""
    goal = next((ln for ln in text.splitlines() if ln.startswith("Goal:")), "")
    m = _TICKET.search(goal)
    fixes: dict[str, str] = {}
    applied: set[str] = set()
    for seg in _SEGMENT.split(text):
        tickets, found = set(_TICKET.findall(seg)), set(_FIX.findall(seg))
        if len(tickets) == 1 and len(found) == 1:
            t, f = tickets.pop(), found.pop()
            fixes[t] = f
            if _APPLIED.search(seg):
                applied.add(t)
    own = {a or b for a, b in _OWN.findall(text)} | applied
    return Facts(
        m.group(0) if m else "",
        fixes,
        frozenset(own),
        tuple(_PREF.findall(text)),
        tuple(_POINTER.findall(text)),
        frozenset(applied),
    )


def earlier_ticket(current: str, f: Facts) -> str | None:
    """The earlier ticket the user's message asks about: named, or "the ticket from last time"
    (the highest own ticket id below the current one; None when none is in the prompt); "" when
    the message asks about none."""
    named: list[str] = [t for t in _TICKET.findall(current) if t != f.ticket]
    if named:
        return named[0]
    if "the ticket from last time" not in current:
        return ""
    below = sorted(t for t in f.own if t < f.ticket)
    return below[-1] if below else None


def tool(name: str, **params: str) -> dict[str, Any]:
    return {"type": "tool", "tool": name, "params": params}


def answer(f: Facts, earlier: str | None, asked_about: bool) -> dict[str, Any]:
    lines = [f"Ticket {f.ticket}: {f.fixes.get(f.ticket, 'unknown')}."]
    if asked_about:
        t = earlier or "unknown"
        lines.append(f"Earlier ticket {t}: {f.fixes.get(t, 'unknown')}.")
    lines.append(f"Contact: {f.prefs[-1] if f.prefs else 'unknown'}.")
    return {"type": "finish", "answer": " ".join(lines)}


def _unfollowed(f: Facts, mind: Mind, tools: frozenset[str]) -> list[str]:
    if GET_FULL_TEXT not in tools or len(mind.followed) >= MAX_FETCHES:
        return []
    return [p for p in reversed(f.pointers) if p not in mind.followed]


def decide(p: Prompt, mind: Mind) -> dict[str, Any]:
    """The stand-in's action for one call (rules 1-6 of the module docstring)."""
    f = read(p.text)
    if p.closing:
        earlier = earlier_ticket(p.current, f)
        todo = _unfollowed(f, mind, p.tools) if f.ticket not in f.fixes else []
        if todo:
            mind.followed.append(todo[0])
            return tool(GET_FULL_TEXT, id=todo[0])
        if not f.prefs and not mind.asked and ASK_USER in p.tools:
            mind.asked = True
            return tool(ASK_USER, question="How would you like us to contact you?")
        return answer(f, earlier, earlier != "")
    if f.ticket in f.fixes and f.ticket not in f.applied:
        return tool(APPLY_FIX, ticket=f.ticket, fix=f.fixes[f.ticket])
    if f.ticket not in f.fixes:
        todo = _unfollowed(f, mind, p.tools)
        if todo and todo[0] == (f.pointers[-1] if f.pointers else ""):
            mind.followed.append(todo[0])
            return tool(GET_FULL_TEXT, id=todo[0])
    name, params = p.planned
    return tool(name, **params)
