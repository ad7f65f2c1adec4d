"""Customer-support sessions for `bench agent`: users whose sessions follow each other, with tool
outputs of varied length, preferences that change over time, needs that are not preferences, and
a last round that refers back to an earlier ticket.

A user has `sessions` sessions of `rounds` rounds. Every session opens a ticket (round 1) and
investigates it (rounds 2 to R-1): each of those rounds has a scripted tool (logs, a knowledge
base search, diagnostics, a screenshot) and its output. Exactly one output of the session holds
the ticket's fix, as one line or sentence naming the ticket and the fix ("case T-48213 matched
rule R-7: apply FIX-7733 (...)"), anywhere in it: in a log on line six or later, in a KB page
after its first paragraph, in a diagnostic report after the third check. Other outputs hold
distractor fixes for other customers' tickets. The last round asks to close the ticket, refers
to the user's contact preference without stating it (a *reference*), and, from the second
session on, asks what fixed an earlier ticket, named by id or as "the ticket from last time".

Preferences: the first session states a contact preference (a *statement*: channel and code);
a later session may change it (a newer statement supersedes the older one). Needs that are not
preferences (*distractors*: "I need this fixed before Friday") are said in passing. The
wordings come from a JSON file (`Wordings.load`), so that wordings written by someone who never
saw the server's rules can be run: `WORDINGS` names the three sets (blind: written from the task
description alone after the rules were frozen; seen: the rules were extended on it; held-out:
older, never used to change a rule; blind2, the headline since issue 32: written blind, half in
Chinese, read after the `said` head was frozen; seen and held-out are in the head's training
set).

Tool-output length: each session draws all its outputs from one bucket (about: short 60-120, medium
200-500, long 800-1500 tokens); `mixed` cycles the buckets over the sessions, so one run
reports the saving per length.

Nothing here knows about any loop: every loop runs the same sessions.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_WORDINGS = DATA / "agent_wordings.json"  # seen: the rules were extended on it
HELD_OUT_WORDINGS = DATA / "agent_wordings_heldout.json"  # never used to change a rule
BLIND_WORDINGS = DATA / "agent_wordings_blind.json"  # written blind, read after the rules froze
# Written blind for issue 32 (half in Chinese), read once the `said` head was frozen (d609761).
BLIND2_WORDINGS = DATA / "agent_wordings_blind2.json"
# Written blind for issue 32 by a helper on 2026-12-07 (half in Chinese), kept outside the
# repository unread until the defaults were frozen (91630de).
BLIND3_WORDINGS = DATA / "agent_wordings_blind3.json"
# The same, written for the next headline and kept unread until the refitted head was committed
# (see bench/RESULTS.md).
BLIND4_WORDINGS = DATA / "agent_wordings_blind4.json"
# The same again, kept unread until 5c25f0c; its distractors hold no standing preference about
# another topic (blind4's photo-paper preferences were preferences, counted against pocketd).
BLIND5_WORDINGS = DATA / "agent_wordings_blind5.json"
# The same again (written on 2026-12-08 from the task description alone), kept outside the
# repository unread until the defaults of 1634607 were committed.
BLIND6_WORDINGS = DATA / "agent_wordings_blind6.json"
# The same again, sealed in the repository (bench/data/sealed) unread until 845ea66.
BLIND7_WORDINGS = DATA / "agent_wordings_blind7.json"
WORDINGS = {
    "blind7": BLIND7_WORDINGS,
    "blind6": BLIND6_WORDINGS,
    "blind5": BLIND5_WORDINGS,
    "blind4": BLIND4_WORDINGS,
    "blind3": BLIND3_WORDINGS,
    "blind2": BLIND2_WORDINGS,
    "blind": BLIND_WORDINGS,
    "seen": DEFAULT_WORDINGS,
    "held-out": HELD_OUT_WORDINGS,
}
BUCKETS: dict[str, tuple[int, int]] = {
    "short": (60, 120),
    "medium": (200, 500),
    "long": (800, 1500),
}
CHANNELS = ("email", "sms", "phone", "chat")
PRODUCTS = (
    ("printer", "keeps jamming on the second page"),
    ("router", "drops the connection every hour"),
    ("laptop", "will not wake from sleep"),
    ("camera", "stops recording after a few minutes"),
    ("tablet", "freezes on the home screen"),
    ("scanner", "produces blank pages"),
)
FIX_DESCRIPTIONS = (
    "reseat the drum unit and clear the sensor",
    "roll the firmware back to 4.1.7",
    "replace the power adapter",
    "reset the network stack and renew the lease",
    "clear the queue and reinstall the driver",
    "recalibrate the sensor from the service menu",
)
LAST_TIME = "the ticket from last time"
CHANGE_PROBABILITY = 0.4  # a later session changes the preference
INVESTIGATION_INPUTS = (
    "I restarted the {product} twice, no change.",
    "It only happens after it has been idle for a while.",
    "The light on the front keeps blinking orange.",
    "Can you check the logs from this morning?",
    "I already updated the firmware last week.",
    "My colleague has the same model and hers works fine.",
    "Is there a known issue with this model?",
    "It started after the power cut on Tuesday.",
    "I unplugged everything else, same thing.",
)
SCREENSHOT_INPUT = "Here is a screenshot of the error screen."


@dataclass(frozen=True)
class Wordings:
    """Preference wordings: a statement holds `{ch}` and `{pref}`; a reference points back to a
    stated preference and holds neither; a distractor is a need that is not a preference."""

    statements: tuple[str, ...]
    references: tuple[str, ...]
    distractors: tuple[str, ...]
    source: str

    @classmethod
    def load(cls, path: Path) -> Wordings:
        """Read and check a wordings file (`{"statements", "references", "distractors"}`)."""
        doc = json.loads(path.read_text(encoding="utf-8"))
        out = cls(
            tuple(doc["statements"]), tuple(doc["references"]), tuple(doc["distractors"]), str(path)
        )
        for s in out.statements:
            if "{ch}" not in s or "{pref}" not in s:
                raise ValueError(f"{path}: a statement needs {{ch}} and {{pref}}: {s!r}")
        for s in (*out.references, *out.distractors):
            if "{" in s:
                raise ValueError(f"{path}: only statements hold placeholders: {s!r}")
        if not (out.statements and out.references and out.distractors):
            raise ValueError(f"{path}: statements, references and distractors must be non-empty")
        return out


@dataclass(frozen=True)
class Output:
    """A tool's output. `fix_at`: the 1-based line (or sentence) holding the session's fix, 0
    when it holds none."""

    kind: str  # ticket, log, kb, diagnostics, screenshot
    text: str
    tokens: int
    fix_at: int = 0


@dataclass(frozen=True)
class Round:
    """One user turn, with the tool the round's request calls for and what that tool returns."""

    text: str
    tool: str
    params: dict[str, str]
    output: Output
    image: bool = False
    statement: str = ""  # the preference statement this input holds
    distractor: str = ""  # the need (not a preference) this input holds
    closing: bool = False  # the last round: close the ticket


@dataclass(frozen=True)
class Session:
    user: str
    index: int
    goal: str
    product: str
    ticket: str
    fix: str
    rounds: tuple[Round, ...]
    bucket: str
    preference: str  # the current preference code at the closing round
    channel: str
    stale: tuple[str, ...]  # the codes it superseded
    earlier_ticket: str = ""  # the earlier ticket the last round asks about ("" in session 0)
    earlier_fix: str = ""
    earlier_named: bool = False  # named by id (else "the ticket from last time")
    stated: str = ""  # the statement of the current preference
    stated_in: int = 0  # the session it was stated in

    @property
    def fix_round(self) -> int:
        """The 1-based round whose output holds the fix."""
        return next(i for i, r in enumerate(self.rounds, 1) if r.output.fix_at)


@dataclass(frozen=True)
class _Case:
    """What a session's tool outputs are about: its ticket, the user's other tickets (which
    distractor ids avoid) and the output length."""

    bucket: str
    product: str
    symptom: str
    ticket: str
    own: frozenset[str]


@dataclass
class _User:
    """A user's state across sessions: tickets so far, the preference history."""

    name: str
    base: int
    tickets: list[tuple[str, str]]  # (ticket, fix) of earlier sessions
    codes: list[str]  # preference codes stated so far, oldest first
    channel: str = ""
    stated: str = ""  # the last statement
    stated_in: int = 0


class _Writer:
    """Tool outputs of a target length; `count` is the bench's tokenizer."""

    def __init__(self, rng: random.Random, count: Callable[[str], int]) -> None:
        self.rng = rng
        self.count = count

    def target(self, bucket: str) -> int:
        lo, hi = BUCKETS[bucket]
        return self.rng.randint(lo, hi)

    def _fill(self, first: list[str], make: Callable[[], str], target: int, glue: str) -> list[str]:
        parts = list(first)
        while self.count(glue.join(parts)) < target:
            parts.append(make())
        while len(parts) > len(first) + 1 and self.count(glue.join(parts)) > target:
            parts.pop()
        return parts

    def _insert(self, parts: list[str], line: str, lowest: int) -> tuple[list[str], int]:
        """Put `line` at a random 1-based position from `lowest` (or last, if fewer parts)."""
        lo = min(lowest, len(parts) + 1)
        at = self.rng.randint(lo, len(parts) + 1)
        return [*parts[: at - 1], line, *parts[at - 1 :]], at

    def _other(self, own: frozenset[str]) -> str:
        while True:
            t = f"T-{self.rng.randrange(10000, 99999)}"
            if t not in own:
                return t

    def fix_code(self) -> str:
        return f"FIX-{self.rng.randrange(1000, 9999)}"

    def _stamp(self) -> str:
        r = self.rng
        return (
            f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:"
            f"{r.randint(0, 59):02d}:{r.randint(0, 59):02d}Z"
        )

    def log_line(self, own: frozenset[str]) -> str:
        r = self.rng
        pid = r.randrange(100, 9999)
        msgs = (
            f"spooler[{pid}] job {r.randrange(1000, 9999)} queued, {r.randint(1, 40)} pages, "
            f"queue depth {r.randint(0, 9)}",
            f"net[{pid}] dhcp lease renewed for 10.0.{r.randint(0, 255)}.{r.randint(2, 254)}, "
            f"ttl {r.choice((600, 1800, 3600))}s",
            f"fw[{pid}] self-test {r.randint(1, 12)}/12 passed in {r.randint(3, 900)} ms",
            f"power[{pid}] rail 5V at {r.uniform(4.7, 5.3):.2f} V, drift {r.randint(0, 90)} mV",
            f"sensor[{pid}] temp {r.randint(20, 80)} C, fan {r.randrange(800, 4000)} rpm",
            f"driver[{pid}] retry {r.randint(1, 5)} after a timeout of {r.randint(50, 5000)} ms",
            f"storage[{pid}] {r.randint(10, 900)} MB free of 1024 MB",
            f"ui[{pid}] panel event code {r.randint(100, 999)} acknowledged",
        )
        if r.random() < 0.08:
            desc = r.choice(FIX_DESCRIPTIONS)
            line = f"resolver[{pid}] case {self._other(own)} matched rule R-{r.randint(1, 40)}: "
            return f"{self._stamp()} INFO {line}apply {self.fix_code()} ({desc})"
        level = r.choice(("INFO", "INFO", "INFO", "WARN", "DEBUG"))
        return f"{self._stamp()} {level} {r.choice(msgs)}"

    def log(self, c: _Case, fix: str) -> Output:
        lines = self._fill([], lambda: self.log_line(c.own), self.target(c.bucket), "\n")
        if not fix:
            return Output("log", "\n".join(lines), self.count("\n".join(lines)))
        desc = self.rng.choice(FIX_DESCRIPTIONS)
        line = (
            f"{self._stamp()} INFO resolver[{self.rng.randrange(100, 9999)}] case {c.ticket} "
            f"matched rule R-{self.rng.randint(1, 40)}: apply {fix} ({desc})"
        )
        lines, at = self._insert(lines[:-1] if len(lines) > 6 else lines, line, 6)
        text = "\n".join(lines)
        return Output("log", text, self.count(text), at)

    def kb_sentence(self, product: str, symptom: str, own: frozenset[str]) -> str:
        r = self.rng
        k = r.randint(1, 9)
        pool = (
            f"This article applies to the {product} series sold after 2021.",
            "Most reports come from units running firmware 4.2 or older.",
            "Before anything else, confirm the unit is on a dedicated outlet.",
            "The fault is intermittent and often disappears after a cold start.",
            f"Customers describe the symptom as follows: it {symptom}.",
            "Replacing the unit is rarely needed; fewer than 3 in 100 cases required it.",
            "If the panel shows a code between E100 and E199, the cause is usually mechanical.",
            "Keep the service log open while you work through the steps below.",
            f"Step {k}: power the unit off, wait 30 seconds and power it on again.",
            f"Step {k}: check the cable for visible damage and reseat both ends.",
            f"Step {k}: open the maintenance menu and read the page and error counters.",
            "Note that the warranty does not cover damage from third-party consumables.",
            "Escalate to the second line only after the checklist is complete.",
        )
        if r.random() < 0.1:
            other = r.choice(PRODUCTS)[0]
            return (
                f"Similar case {self._other(own)} (another customer's {other}): "
                f"resolved with {self.fix_code()}."
            )
        return r.choice(pool)

    def kb(self, c: _Case, fix: str) -> Output:
        head = f"KB-{self.rng.randrange(1000, 9999)}: {c.product} troubleshooting ({c.symptom})."
        more = lambda: self.kb_sentence(c.product, c.symptom, c.own)  # noqa: E731
        parts = self._fill([head], more, self.target(c.bucket), " ")
        if not fix:
            return Output("kb", " ".join(parts), self.count(" ".join(parts)))
        line = f"For ticket {c.ticket}, the matching resolution is {fix}: "
        line += f"{self.rng.choice(FIX_DESCRIPTIONS)}."
        parts, at = self._insert(parts[:-1] if len(parts) > 3 else parts, line, 3)
        text = " ".join(parts)
        return Output("kb", text, self.count(text), at)

    def check_line(self, own: frozenset[str]) -> str:
        r = self.rng
        name, unit, lo, hi = r.choice(
            (
                ("rail_voltage", "V", 4, 6),
                ("fuser_temp", "C", 150, 220),
                ("fan_speed", "rpm", 800, 4000),
                ("link_speed", "Mbps", 10, 1000),
                ("flash_wear", "%", 1, 99),
                ("uptime", "h", 1, 900),
                ("error_count", "", 0, 40),
            )
        )
        if r.random() < 0.06:
            return f"note: fleet case {self._other(own)} closed with {self.fix_code()}"
        val = r.randint(lo, hi)
        status = "ok" if r.random() < 0.85 else "warn"
        return f"check {r.randint(1, 60):02d} {name}={val}{unit} limit={hi}{unit} {status}"

    def diagnostics(self, c: _Case, fix: str) -> Output:
        serial = f"SN{self.rng.randrange(10**6, 10**7)}"
        head = f"Diagnostic report for ticket {c.ticket}, {c.product} serial {serial}"
        lines = self._fill([head], lambda: self.check_line(c.own), self.target(c.bucket), "\n")
        if not fix:
            return Output("diagnostics", "\n".join(lines), self.count("\n".join(lines)))
        line = f"recommendation for {c.ticket}: {fix} ({self.rng.choice(FIX_DESCRIPTIONS)})"
        lines, at = self._insert(lines[:-1] if len(lines) > 4 else lines, line, 4)
        text = "\n".join(lines)
        return Output("diagnostics", text, self.count(text), at)

    def screenshot(self, product: str) -> Output:
        r = self.rng
        text = (
            f"Screenshot of the {product}'s panel: error E{r.randint(100, 999)} "
            f"('service required'), shown at {r.randint(0, 23):02d}:{r.randint(0, 59):02d}. "
            f"The status bar reads {r.randint(1, 99)} % and the network icon is grey. "
            "No other message is visible."
        )
        return Output("screenshot", text, self.count(text))


def _statement(w: Wordings, rng: random.Random, u: _User) -> str:
    """A new preference for `u` (another channel than the current one), stated in a wording."""
    u.channel = rng.choice([c for c in CHANNELS if c != u.channel])
    code = f"PREF-{u.channel.upper()}-{rng.randrange(100, 999)}"
    u.codes.append(code)
    return rng.choice(w.statements).format(ch=u.channel, pref=code)


def _investigation(wr: _Writer, c: _Case, k: int, fix: str) -> Round:
    """Round `k` (1-based) of the investigation; `fix` is given to the round that finds it."""
    rng = wr.rng
    if k % 3 == 0 and not fix:
        shot = wr.screenshot(c.product)
        return Round(SCREENSHOT_INPUT, "read_screenshot", {"ticket": c.ticket}, shot, True)
    text = rng.choice(INVESTIGATION_INPUTS).format(product=c.product)
    kind = rng.choice(("log", "kb", "diagnostics"))
    if kind == "log":
        return Round(text, "fetch_logs", {"ticket": c.ticket, "since": f"-{k}h"}, wr.log(c, fix))
    if kind == "kb":
        query = {"query": f"{c.product} {c.symptom}"[:60]}
        return Round(text, "search_kb", query, wr.kb(c, fix))
    params = {"ticket": c.ticket, "suite": "full"}
    return Round(text, "run_diagnostics", params, wr.diagnostics(c, fix))


def _with(r: Round, said: str, what: str, rng: random.Random) -> Round:
    """`r` with `said` (`what`: a statement or a distractor) said before or after its input."""
    text = f"{said} {r.text}" if rng.random() < 0.5 else f"{r.text} {said}"
    return Round(
        text, r.tool, r.params, r.output, r.image,
        statement=said if what == "statement" else r.statement,
        distractor=said if what == "distractor" else r.distractor,
    )  # fmt: skip


def _say(w: Wordings, rng: random.Random, u: _User, s: int, rs: list[Round]) -> None:
    """Put the session's sayings in its rounds: a new preference (always in session 0, then
    with `CHANGE_PROBABILITY`), and one or two needs that are not preferences."""
    if s == 0 or rng.random() < CHANGE_PROBABILITY:
        at = rng.randrange(0, len(rs))
        u.stated, u.stated_in = _statement(w, rng, u), s
        rs[at] = _with(rs[at], u.stated, "statement", rng)
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(1, len(rs))
        if not rs[at].statement and not rs[at].distractor:
            rs[at] = _with(rs[at], rng.choice(w.distractors), "distractor", rng)


def _opening(wr: _Writer, c: _Case) -> Round:
    """Round 1: the user reports the problem, and the agent opens the ticket."""
    order = f"ORD-{wr.rng.randrange(10000, 99999)}"
    opened = f"Opened ticket {c.ticket} for your {c.product} (order {order}). Priority normal."
    return Round(
        f"Hi, my {c.product} {c.symptom}. The order number is {order}.",
        "open_ticket", {"product": c.product, "order": order},
        Output("ticket", opened, wr.count(opened)),
    )  # fmt: skip


def _closing(w: Wordings, rng: random.Random, u: _User) -> tuple[Round, str, str, bool]:
    """The last round: a reference to the preference, and the earlier ticket's question."""
    text = rng.choice(w.references)
    if not u.tickets:
        return Round(text, "", {}, Output("none", "", 0), closing=True), "", "", False
    named = rng.random() < 0.5
    ticket, fix = rng.choice(u.tickets) if named else u.tickets[-1]
    ask = ticket if named else LAST_TIME
    text += f" Also, what was the fix on {'ticket ' + ask if named else ask}? "
    text += "My colleague has the same fault."
    return Round(text, "", {}, Output("none", "", 0), closing=True), ticket, fix, named


def _session(w: Wordings, wr: _Writer, u: _User, s: int, rounds: int, bucket: str) -> Session:
    rng = wr.rng
    product, symptom = rng.choice(PRODUCTS)
    ticket = f"T-{u.base + 1000 * s + rng.randrange(0, 999)}"
    case = _Case(bucket, product, symptom, ticket, frozenset({ticket, *(t for t, _ in u.tickets)}))
    fix = wr.fix_code()
    first = _opening(wr, case)
    n = max(rounds - 2, 1)  # investigation rounds: 2 .. rounds-1
    fix_k = rng.choice([k for k in range(2, n + 2) if k % 3 != 0] or [2])
    rs = [first] + [_investigation(wr, case, k, fix if k == fix_k else "") for k in range(2, n + 2)]
    _say(w, rng, u, s, rs)
    last, earlier, earlier_fix, named = _closing(w, rng, u)
    goal = f"Resolve ticket {ticket} for {u.name}: their {product} {symptom}."
    out = Session(
        u.name, s, goal, product, ticket, fix, (*rs, last), bucket, u.codes[-1], u.channel,
        tuple(u.codes[:-1]), earlier, earlier_fix, named, u.stated, u.stated_in,
    )  # fmt: skip
    u.tickets.append((ticket, fix))
    return out


def generate(
    users: int,
    sessions: int,
    rounds: int,
    seed: int,
    count: Callable[[str], int],
    wordings: Wordings,
    output_tokens: str = "mixed",
) -> list[Session]:
    """The sessions, user by user, each user's in order. `output_tokens`: a bucket of
    `BUCKETS`, or `mixed` (the buckets in turn, session by session)."""
    rng = random.Random(seed)
    wr = _Writer(rng, count)
    names = list(BUCKETS)
    out: list[Session] = []
    for i in range(users):
        u = _User(f"user-{i:03d}", rng.randrange(20, 60) * 1000, [], [])
        for s in range(sessions):
            bucket = names[len(out) % 3] if output_tokens == "mixed" else output_tokens
            out.append(_session(wordings, wr, u, s, rounds, bucket))
    return out
