"""Customer-support sessions for `bench agent` (seed 001's experiment): users whose sessions follow
each other, with screenshots, references to earlier tickets and preferences stated once and
needed later.

Each user has `sessions` sessions of `rounds` rounds. In the first session the user states a
preference (how to be contacted). Every session opens a ticket with a fix in it; a later session
refers back to the previous one's ticket. Some rounds carry a screenshot (its description is the
round's observation). Tool outputs are long, as logs, diagnostics and knowledge-base pages are:
500 to 1,400 tokens (seed 001's classic loop averaged 16K prompt tokens). The last round asks
for the resolution, which needs three facts:
- the order id the user gave earlier in this session;
- the fix recorded in the ticket the user refers to (from the previous session);
- the user's contact preference (from the first session).
A fact is a short code-like token (`ORD-…`, `FIX-…`, `PREF-…`), so the stand-in model can tell
whether its prompt holds it without understanding language.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

CHANNELS = ("email", "sms", "phone", "chat")
# How a user states the preference, and how the last round refers to it: varied, so that the
# key-event rules are not measured on one sentence.
STATED = (
    "Hi. For the record, I prefer to be contacted by {ch} only, my preference code is {pref}.",
    "Please only reach me by {ch} from now on (preference code {pref}).",
    "Quick note: {ch} is the best way to contact me. Reference {pref}.",
    "I'd rather you used {ch} when you get back to me, code {pref}.",
    "Contact me via {ch}, please. My contact code: {pref}.",
)
REFERRED = (
    "Please summarise the resolution and contact me the way I prefer.",
    "Sum up what was done and reach me through my usual channel.",
    "Wrap this up and get back to me how I asked before.",
    "Write the resolution summary and use my preferred contact method.",
)
# Written after the key-event rules were last changed, and never used to change them
# (`--wording held-out`): how the rules do on wordings they were not extended on.
HELD_OUT_STATED = (
    "Going forward, only use {ch} to reach me. My reference is {pref}.",
    "Text is fine, but {ch} works better for me, ref {pref}.",
    "I want all updates by {ch}, code {pref}.",
)
HELD_OUT_REFERRED = (
    "Close it out and reply through my preferred channel.",
    "Finish up and let me know the usual way.",
)
PRODUCTS = ("printer", "router", "laptop", "camera", "tablet", "scanner")
FILLER = (
    "The device was restarted twice and the firmware version was read from the settings page. "
    "The customer confirmed the cable, the power supply and the wall socket were fine, and the "
    "warranty card was found in the box. Logs were collected from the last three days. "
)


@dataclass(frozen=True)
class Round:
    text: str  # the user's input
    image: bool = False
    observation: str = ""  # what the agent's tool returned for it (a long tool output)
    facts: tuple[str, ...] = ()  # the facts this round states (in its text or observation)


@dataclass
class Session:
    user: str
    index: int
    rounds: list[Round]
    needed: tuple[str, ...]  # the facts the last round's answer needs
    preference: str  # the one needed fact that only an earlier session states
    ticket_ref: str  # the earlier ticket the session refers to ("" in a user's first session)


@dataclass
class Users:
    sessions: list[Session] = field(default_factory=list)


def generate(
    users: int, sessions: int, rounds: int, seed: int, held_out: bool = False
) -> list[Session]:
    """`held_out`: preferences stated and referred to in the held-out wordings only."""
    stated, referred = (HELD_OUT_STATED, HELD_OUT_REFERRED) if held_out else (STATED, REFERRED)
    rng = random.Random(seed)
    out: list[Session] = []
    for u in range(users):
        user = f"user-{u:03d}"
        pref = f"PREF-{rng.choice(CHANNELS).upper()}-{rng.randrange(100, 999)}"
        previous_fix, previous_ticket = "", ""
        for s in range(sessions):
            product = rng.choice(PRODUCTS)
            order = f"ORD-{rng.randrange(10000, 99999)}"
            ticket = f"T-{u:03d}{s}"
            fix = f"FIX-{rng.randrange(1000, 9999)}"
            rs: list[Round] = []
            if s == 0:
                said = rng.choice(stated).format(ch=pref.split("-")[1].lower(), pref=pref)
                rs.append(Round(said, facts=(pref,)))
            rs.append(
                Round(f"My {product} stopped working. The order number is {order}.", facts=(order,))
            )
            if previous_ticket:
                rs.append(
                    Round(
                        f"It looks like the problem from ticket {previous_ticket} again.",
                        observation=f"Ticket {previous_ticket}: resolved with fix {previous_fix}. "
                        + FILLER * 10,
                    )
                )
            while len(rs) < rounds - 2:
                k = len(rs)
                if k % 3 == 0:
                    rs.append(
                        Round(
                            "Here is a screenshot of the error screen.",
                            image=True,
                            observation=f"Screenshot: the {product} shows error "
                            f"E{rng.randrange(100, 999)}. " + FILLER * 20,
                        )
                    )
                else:
                    rs.append(
                        Round(
                            f"I tried that, the {product} still does not work.",
                            observation=f"Diagnostic run {k}: no hardware fault found. "
                            + FILLER * 25,
                        )
                    )
            rs.append(
                Round(
                    "Can you open a ticket for this?",
                    observation=f"Ticket created: {ticket}, fixed with {fix} after a reset. "
                    + FILLER,
                    facts=(fix,),
                )
            )
            needed = (order, previous_fix, pref) if previous_fix else (order, pref)
            rs.append(
                Round(
                    rng.choice(referred)
                    + (f" Mention what fixed ticket {previous_ticket}." if previous_ticket else "")
                )
            )
            out.append(Session(user, s, rs, needed, pref, previous_ticket))
            previous_fix, previous_ticket = fix, ticket
    return out
