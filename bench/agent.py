"""`python -m bench agent`: the pocketd-assisted agent loop against competent baselines, on the
same customer-support sessions (`bench.agent_data`), with the same stand-in model
(`bench.agent_model`), system prompt, tool text (the compact tool lines, in every loop), image
cost, tokenizer and prices.

- **B0** classic full-context ReAct, **B2** windowed (last 3 rounds, tool outputs cut to 300
  tokens, older rounds one line each), **B3** (the named baseline) B2 with a grep for the task's
  ids past each cut plus a plain vector memory over the user's earlier sessions, one line per
  recalled round, and **B3-full** (B3 before issue 28: no grep, recalled rounds in full)
  (`bench.agent_loops`);
- the bounds (`bench.agent_bounds`): **oracle**, handed exactly the needed facts, and
  **trivial**, the goal and the user's current message only;
- **pocketd**: two Steps a round against a real `pocketd serve` (`bench.agent_pocketd`).

The headline wordings are the blind ones (`--wording blind7`, the default: written from the task
description alone for issue 32, half in Chinese, read only after the `said` head and the
defaults were frozen at 845ea66); `blind6`, `blind5`, `blind4`, `blind3` and `blind2` (issue
32's earlier blind sets, read since),
`blind` (issue 28's, read since), `seen` and `held-out` (both in the head's training set) are
labelled rows. Cost is given routed and at one price (every token at
the medium route's price); `--small-context N` makes the stand-in read only the last N tokens of
a prompt sent to the simple route's model, so a cheap tier can cost quality.

The stand-in gets no list of needed facts: it must find the ticket's fix in a tool output
(following pocketd's `[full text: id]` pointers by a Get where it needs to), match an earlier
ticket to its fix among distractors, and use the current contact preference (or ask the user,
at the cost of a round). Completion (the closing answer has the ticket's fix, the earlier
ticket's fix when asked, and the current preference) and the preference hit (the current
preference used without asking) are reported apart. After the run, the memories pocketd
stored as kind preference are listed back: the preference precision is the share of them that
really are preference statements (the user's statements, or a reply to the question); needs
("I need this fixed before Friday"), references and other sentences stored as preferences count
against it. With nothing stored it is undefined (n/a, JSON null), not 0.

Reported: per loop, prompt tokens (and of them the tool text's, per call), cost (micros,
routed and at one price), model calls, completion, preference hit; the
reductions of pocketd against each baseline, overall and by tool-output length (short 60-120,
medium 200-500, long 800-1500 tokens); the goals of issue 16 §3, met or not; Step's p50/p99 per
round (its calls together), per call, and for the round's first call alone; and pocketd's
misses, with the sessions and sentences behind them.

Nothing here is tuned for pocketd: the goals are reported, and a miss is a miss.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.agent_bounds import Oracle, Trivial
from bench.agent_data import BUCKETS, CHANNELS, WORDINGS, Session, Wordings, generate
from bench.agent_loops import (
    Cutter,
    Encodings,
    Loop,
    Outcome,
    Reads,
    Shortener,
    VectorMemory,
    Window,
    Windowed,
    ask_reply,
    run_session,
)
from bench.agent_model import SMALL_MODEL, TOOL_TEXT, TOOLS, system_prompt, tools_json
from bench.agent_pocketd import Latency, Pocketd
from bench.encoder import bench_encoder
from bench.server_proc import ServerProcess
from bench.stats import environment, summary_ms
from pocketd import Client
from server.adapters.token_counter import TokenCounter
from server.config import BUILTIN_TOKENIZER

BASELINES = ("B0", "B2", "B3-full", "B3")
BOUNDS = ("oracle", "trivial")
LOOPS = (*BOUNDS, *BASELINES, "pocketd")
GOALS = (  # (name, what, target): issue 32 (issue 16's were −85 % / −77 % vs B0, −40 % vs B3)
    ("b3_tokens", "prompt tokens −≥30 % vs B3", 0.30),
    ("b3_completion", "completion ≥ B3's", 0.0),
    ("b3_cost_one_price", "cost at one price below B3's", 1e-6),
    ("preference_hit", "preference hit ≥ 0.90", 0.90),
    ("preference_precision", "preference precision ≥ 0.95", 0.95),
    ("step_p50", "Step per round p50 ≤ 10 ms", 10.0),
    ("step_p99", "Step per round p99 ≤ 25 ms", 25.0),
)
CEILINGS = frozenset({"step_p50", "step_p99"})
EXAMPLES = 12

Results = dict[str, list[tuple[Session, Outcome]]]


def log(msg: str) -> None:
    print(f"[agent] {msg}", file=sys.stderr, flush=True)


def summary(rows: Sequence[tuple[Session, Outcome]]) -> dict[str, float]:
    """Means per task of one loop's outcomes."""
    n = len(rows) or 1
    asked_about = [o for s, o in rows if s.earlier_ticket]

    def mean(f: Callable[[Outcome], float]) -> float:
        return sum(f(o) for _, o in rows) / n

    return {
        "tokens": mean(lambda o: o.tokens),
        "fixed_tokens": mean(lambda o: o.fixed),
        "tool_tokens_per_call": mean(lambda o: o.tool_tokens / (o.calls or 1)),
        "cost": mean(lambda o: o.cost),
        "cost_one_price": mean(lambda o: o.cost_one_price),
        "rounds": mean(lambda o: o.calls),
        "completion": mean(lambda o: o.completion),
        "preference_hit": mean(lambda o: o.preference_hit),
        "preference_in_prompt": mean(lambda o: o.preference_in_prompt),
        "asked_user": mean(lambda o: o.asked),
        "stale_preference": mean(lambda o: o.stale_preference),
        "current_fix": mean(lambda o: o.current_fix),
        "earlier_fix": sum(bool(o.earlier_fix) for o in asked_about) / (len(asked_about) or 1),
        "fetches": mean(lambda o: o.fetches),
    }


def model_shares(rows: Sequence[tuple[Session, Outcome]]) -> dict[str, float]:
    """The share of a loop's prompt tokens sent to each model."""
    total: dict[str, int] = {}
    for _, o in rows:
        for m, n in o.by_model.items():
            total[m] = total.get(m, 0) + n
    whole = sum(total.values()) or 1
    return {m: n / whole for m, n in sorted(total.items())}


def reductions(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    """pocketd (`a`) against a baseline (`b`): the share of tokens and cost (routed, and at one
    price) saved, and the differences in completion and preference hit (positive: pocketd's is
    higher)."""

    def saved(key: str) -> float:
        return 1 - a[key] / b[key] if b[key] else 0.0

    return {
        "tokens": saved("tokens"),
        "cost": saved("cost"),
        "cost_one_price": saved("cost_one_price"),
        "completion": a["completion"] - b["completion"],
        "preference_hit": a["preference_hit"] - b["preference_hit"],
    }


def by_length(res: Results) -> dict[str, Any]:
    """Each loop's summary and pocketd's reductions, per tool-output bucket."""
    out: dict[str, Any] = {}
    for bucket in BUCKETS:
        per = {k: summary([x for x in v if x[0].bucket == bucket]) for k, v in res.items()}
        if not any(x[0].bucket == bucket for x in res["pocketd"]):
            continue
        out[bucket] = {
            "sessions": sum(x[0].bucket == bucket for x in res["pocketd"]),
            "loops": per,
            "reductions": {b: reductions(per["pocketd"], per[b]) for b in BASELINES},
        }
    return out


def _miss(s: Session, o: Outcome) -> dict[str, Any]:
    """Why a session failed in a loop, with where its facts were."""
    r = s.rounds[s.fix_round - 1]
    why = []
    if not o.current_fix:
        why.append(
            f"current fix {s.fix} of {s.ticket} missing: it was in round {s.fix_round}'s "
            f"{r.output.kind} ({r.output.tokens} tokens, line {r.output.fix_at})"
        )
    if o.earlier_fix is False:
        how = "named" if s.earlier_named else "as 'the ticket from last time'"
        tid, fix = ("in" if x else "not in" for x in o.earlier_seen)
        why.append(
            f"earlier ticket {s.earlier_ticket} ({how}): fix {s.earlier_fix} missing (the id "
            f"{tid} the closing prompt, the fix {fix} it)"
        )
    if not o.preference_hit:
        what = "asked the user" if o.asked else "stale code" if o.stale_preference else "missing"
        why.append(
            f"preference {s.preference}: {what} (stated in session {s.stated_in}: {s.stated!r})"
        )
    return {"session": f"{s.user}/s{s.index}", "bucket": s.bucket, "answer": o.answer, "why": why}


def misses(rows: Sequence[tuple[Session, Outcome]]) -> dict[str, Any]:
    bad = [(s, o) for s, o in rows if not (o.completion and o.preference_hit)]
    return {
        "sessions": len(rows),
        "earlier_asked_named": sum(bool(s.earlier_ticket) and s.earlier_named for s, _ in rows),
        "earlier_asked_last_time": sum(
            bool(s.earlier_ticket) and not s.earlier_named for s, _ in rows
        ),
        "current_fix_missing": sum(not o.current_fix for _, o in rows),
        "earlier_fix_missing": sum(o.earlier_fix is False for _, o in rows),
        "earlier_fix_missing_named": sum(
            o.earlier_fix is False and s.earlier_named for s, o in rows
        ),
        "asked_user": sum(o.asked for _, o in rows),
        "stale_preference": sum(o.stale_preference for _, o in rows),
        "examples": [_miss(s, o) for s, o in bad[:EXAMPLES]],
    }


def _listed(c: Client, user: str) -> list[Any]:
    out: list[Any] = []
    token = ""
    while True:
        page = c.list(user, page_size=1000, page_token=token, kinds=["preference"])
        out += page.memories
        token = page.next_page_token
        if not token:
            return out


def stored_preferences(c: Client, data: Sequence[Session]) -> dict[str, list[Any]]:
    """Each user's memories of kind preference, once the background writes have settled."""
    users = sorted({s.user for s in data})
    last: dict[str, list[Any]] = {}
    for _ in range(20):
        now = {u: _listed(c, u) for u in users}
        if now == last:
            return now
        last = now
        time.sleep(0.5)
    return last


_CODE = re.compile(r"PREF-([A-Z]+)-\d+")
_SENTENCE = re.compile(r"(?<=[。！？!?])|(?<=[.])\s+")  # after 。！？!?, or a full stop and a space


def _names(text: str, word: str) -> bool:
    """Whether `text` names `word` as a word ("phone", not "smartphone"; "chat", not "WeChat"),
    Chinese characters around it allowed ("用phone联系")."""
    return re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text, re.I) is not None


def _holds(text: str, statement: str, code: bool = False) -> bool:
    """Whether a stored memory holds `statement`: all of it, or a sentence of it that names the
    statement's code or, unless `code` is asked for, its channel, whatever else the memory
    holds (pocketd keeps each part of an input that says something apart, and a preference's
    part with the sentence after it); a sentence around it ("the jam light blinks orange")
    does not count."""
    if statement in text:
        return True
    m = _CODE.search(statement)
    if m is None:
        return False
    parts = (p.strip() for p in _SENTENCE.split(text))
    return any(
        p and p in statement and (m.group(0) in p or (not code and _names(p, m.group(1).lower())))
        for p in parts
    )


def _within(text: str, statement: str) -> bool:
    """`_holds` as it counted before 3cbcb46: all of the statement, or a part of it and nothing
    beyond it that names its code or channel (a part with the round's next sentence is
    wrong)."""
    return statement in text or (text.strip() in statement and _holds(text, statement))


def _label(text: str, s_texts: set[str], d_texts: set[str], r_texts: set[str]) -> str:
    if any(_holds(text, t) for t in s_texts):
        return "preference"
    if any(t in text or text.strip() in t for t in d_texts):
        return "distractor"
    if any(t in text or text.strip() in t for t in r_texts):
        return "reference"
    return "other"


def _stale(text: str, current: str) -> bool:
    """Whether a stored preference states an older value than the user's `current` code: it
    names another code, or, naming none, another channel and not the current one."""
    codes = {c.group(0) for c in _CODE.finditer(text)}
    if codes:
        return current not in codes
    channel = current.split("-")[1].lower()
    said = {c for c in CHANNELS if _names(text, c)}
    return bool(said) and channel not in said


def precision(stored: dict[str, list[Any]], data: Sequence[Session]) -> dict[str, Any]:
    """The share of stored preferences that are preference statements, and what the others
    were (every one in `wrong`); the share of statements stored (recall: a stored memory holds
    the statement, or a sentence of it with its code), and the stored preferences of an older
    value left current (not obsolete)."""
    real: dict[str, set[str]] = {}
    for s in data:
        said = {r.statement for r in s.rounds if r.statement} | {ask_reply(s)}
        real.setdefault(s.user, set()).update(said)
    dis = {r.distractor for s in data for r in s.rounds if r.distractor}
    refs = {r.text.split(" Also,")[0] for s in data for r in s.rounds if r.closing}
    labels: dict[str, int] = {}
    wrong: list[str] = []
    found: set[str] = set()  # the statements some stored preference holds
    stale_live = 0
    current = {s.user: s.preference for s in data}
    strict = 0  # of those labelled preference, the ones that are all a statement's
    for user, mems in stored.items():
        for m in mems:
            kind = _label(m.text, real.get(user, set()), dis, refs)
            labels[kind] = labels.get(kind, 0) + 1
            if kind != "preference":
                wrong.append(f"{kind}: {m.text[:160]}")
                continue
            strict += any(_within(m.text, t) for t in real.get(user, set()))
            found.update(t for t in real.get(user, set()) if _holds(m.text, t, code=True))
            stale_live += not m.obsolete and _stale(m.text, current[user])
    total = sum(labels.values())
    statements = {r.statement for s in data for r in s.rounds if r.statement}
    missed = sorted(statements - found)
    return {
        "stored": total,
        "by_label": labels,
        "precision": labels.get("preference", 0) / total if total else None,
        # The rule before 3cbcb46: a memory holding more than a statement's own text is wrong.
        "precision_strict": strict / total if total else None,
        "statements_stored": len(found & statements) / (len(statements) or 1),
        "superseded_not_obsolete": stale_live,
        "wrong_examples": wrong[:EXAMPLES],
        "wrong": dict(Counter(wrong).most_common()),  # every one, with how often it was stored
        "statements_not_stored": missed[:EXAMPLES],
    }


def goals(r: dict[str, Any]) -> dict[str, Any]:
    red = r["reductions"]
    values = {
        "b3_tokens": red["B3"]["tokens"],
        "b3_completion": red["B3"]["completion"],
        "b3_cost_one_price": red["B3"]["cost_one_price"],
        "preference_hit": r["pocketd"]["preference_hit"],
        "preference_precision": r["preference_precision"],
        "step_p50": r["step_p50_ms"],
        "step_p99": r["step_p99_ms"],
    }
    return {
        name: {"goal": what, "value": values[name], "met": _met(name, values[name], target)}
        for name, what, target in GOALS
    }


def _met(name: str, value: float | None, target: float) -> bool:
    if value is None:  # undefined (no preference stored): not met
        return False
    return value <= target if name in CEILINGS else value >= target - 1e-9


def loops(system: str, encode: Encodings) -> dict[str, Loop]:
    """The in-process loops (the bounds and the baselines), by name."""
    cut = Cutter()
    head_only, grep = Shortener(cut, grep=False), Shortener(cut, grep=True)
    return {
        "oracle": Oracle(system),
        "trivial": Trivial(system),
        "B0": Window("B0", system, None),
        "B2": Window("B2", system, head_only),
        "B3-full": Windowed("B3-full", system, head_only, VectorMemory(encode), one_line=False),
        "B3": Windowed("B3", system, grep, VectorMemory(encode), one_line=True),
    }


def _run_all(
    c: Client, data: Sequence[Session], system: str, count: TokenCounter, model_s: float,
    reads: Reads,
) -> tuple[Results, Latency, dict[str, list[Any]]]:  # fmt: skip
    latency = Latency()
    every = {
        **loops(system, Encodings(bench_encoder())),
        "pocketd": Pocketd(c, system, latency, model_s),
    }
    res: Results = {k: [] for k in LOOPS}
    for i, s in enumerate(data):
        for name, loop in every.items():
            res[name].append((s, run_session(loop, s, count.count, reads)))
        if (i + 1) % 10 == 0:
            log(f"{i + 1}/{len(data)} sessions")
    return res, latency, stored_preferences(c, data)


def run(
    users: int,
    sessions: int,
    rounds: int,
    seed: int,
    wordings: Wordings,
    output_tokens: str = "mixed",
    system_tokens: int = 0,
    model_ms: float = 0.0,
    small_context: int = 0,
) -> dict[str, Any]:
    """`small_context` > 0: the stand-in reads only the last N tokens of a prompt sent to the
    simple route's model (`Reads`)."""
    count = TokenCounter(BUILTIN_TOKENIZER)
    data = generate(users, sessions, rounds, seed, count.count, wordings, output_tokens)
    system = system_prompt(system_tokens, count.count)
    reads = Reads(Cutter(), {SMALL_MODEL: small_context} if small_context else {})
    with tempfile.TemporaryDirectory(prefix="pocketd-agent-") as tmp:
        p = ServerProcess(Path(tmp) / "data")
        try:
            p.wait_serving(timeout=300)
            # Step's latency in steady state: not beside the start-up's loading of the media
            # readers (OCR, speech), which this workload never uses.
            p.wait_log("media: readers warm", timeout=300)
            with Client(p.target, timeout=30) as c:
                res, lat, stored = _run_all(c, data, system, count, model_ms / 1000, reads)
        finally:
            p.close()
    out = result(res, lat, stored, data, wordings, output_tokens, count.count(system), model_ms)
    out["small_context"] = small_context
    out["tool_text_tokens"] = count.count(TOOL_TEXT)
    out["tools_json_tokens"] = count.count(tools_json(TOOLS))  # what B0-B3 sent before issue 28
    return out


def result(
    res: Results,
    lat: Latency,
    stored: dict[str, list[Any]],
    data: Sequence[Session],
    wordings: Wordings,
    output_tokens: str,
    system_tokens: int,
    model_ms: float,
) -> dict[str, Any]:
    sums = {k: summary(v) for k, v in res.items()}
    b0, a = sums["B0"], sums["pocketd"]
    prec = precision(stored, data)
    out: dict[str, Any] = {
        "environment": environment(),
        "sessions": len(data),
        "model_ms": model_ms,
        "wording": wordings.source,
        "output_tokens": output_tokens,
        "system_tokens": system_tokens,
        "baseline": b0,
        "pocketd": a,
        "baselines": {b: sums[b] for b in BASELINES},
        "bounds": {b: sums[b] for b in BOUNDS},
        "reductions": {b: reductions(a, sums[b]) for b in BASELINES},
        "token_reduction": reductions(a, b0)["tokens"],
        "cost_reduction": reductions(a, b0)["cost"],
        "preference_hit_baseline": b0["preference_hit"],
        "preference_hit": a["preference_hit"],
        "rounds_baseline": b0["rounds"],
        "rounds": a["rounds"],
        "completion_baseline": b0["completion"],
        "completion": a["completion"],
        "preference_precision": prec["precision"],
        "tokens_by_model": {k: model_shares(v) for k, v in res.items()},
        "stored_preferences": prec,
        "by_output_length": by_length(res),
        "misses": {k: misses(v) for k, v in res.items()},
        # Step's overhead per round: the round's calls (the context, then the action checks).
        "step_p50_ms": summary_ms(lat.round_s)["p50_ms"],
        "step_p99_ms": summary_ms(lat.round_s)["p99_ms"],
        "call_p50_ms": summary_ms(lat.call_s)["p50_ms"],
        "call_p99_ms": summary_ms(lat.call_s)["p99_ms"],
        "context_call_p50_ms": summary_ms(lat.context_s)["p50_ms"],
        "context_call_p99_ms": summary_ms(lat.context_s)["p99_ms"],
    }
    out["goals"] = goals(out)
    return out


def _table(r: dict[str, Any]) -> list[str]:
    loops = {**r["bounds"], **r["baselines"], "pocketd": r["pocketd"]}
    rows = [f"{'':<24}" + "".join(f"{k:>10}" for k in loops)]
    for key, label in (
        ("tokens", "prompt tokens / task"),
        ("fixed_tokens", "  of which fixed"),
        ("tool_tokens_per_call", "  tool text / call"),
        ("cost", "cost micros / task"),
        ("cost_one_price", "  at one price"),
        ("rounds", "model calls / task"),
        ("completion", "completion"),
        ("preference_hit", "preference hit"),
        ("preference_in_prompt", "  pref. in last prompt"),
        ("asked_user", "  asked the user"),
        ("stale_preference", "  stale preference"),
        ("current_fix", "  current fix found"),
        ("earlier_fix", "  earlier fix found"),
        ("fetches", "  pointers read"),
    ):
        rows.append(f"{label:<24}" + "".join(f"{v[key]:>10.2f}" for v in loops.values()))
    return rows


def _value(v: float | None, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def report(r: dict[str, Any]) -> str:
    rows = _table(r)
    for b, red in r["reductions"].items():
        rows.append(
            f"pocketd vs {b}: tokens {-red['tokens']:+.1%}, cost {-red['cost']:+.1%} (at one "
            f"price {-red['cost_one_price']:+.1%}), completion {red['completion']:+.2f}, "
            f"preference hit {red['preference_hit']:+.2f}"
        )
    for bucket, v in r["by_output_length"].items():
        parts = [
            f"vs {b} tokens {-x['tokens']:+.1%} cost {-x['cost']:+.1%} (one price "
            f"{-x['cost_one_price']:+.1%}) compl {x['completion']:+.2f}"
            for b, x in v["reductions"].items()
            if b in ("B0", "B3")
        ]
        rows.append(f"  {bucket:<6} ({v['sessions']:>3} sessions): " + "; ".join(parts))
    for loop in ("B3", "pocketd"):
        shares = ", ".join(f"{m} {v:.0%}" for m, v in r["tokens_by_model"][loop].items())
        rows.append(f"{loop} prompt tokens by model: {shares}")
    p = r["stored_preferences"]
    rows.append(
        f"preference precision {_value(p['precision'], '.2f')} (strict "
        f"{_value(p.get('precision_strict'), '.2f')}; {p['stored']} stored: "
        f"{p['by_label']}); statements stored {p['statements_stored']:.2f}; "
        f"superseded left current {p['superseded_not_obsolete']}"
    )
    for g in r["goals"].values():
        rows.append(f"  [{'met' if g['met'] else 'MISS'}] {g['goal']}: {_value(g['value'], '.3f')}")
    rows.append(
        f"Step per round p50 {r['step_p50_ms']:.1f} ms, p99 {r['step_p99_ms']:.1f} ms"
        f" (per call {r['call_p50_ms']:.1f} / {r['call_p99_ms']:.1f};"
        f" the context call {r['context_call_p50_ms']:.1f} / {r['context_call_p99_ms']:.1f})"
    )
    small = r.get("small_context", 0)
    rows.append(
        f"({r['sessions']} sessions, outputs {r['output_tokens']}, system prompt"
        f" {r['system_tokens']} tokens, tool text {r.get('tool_text_tokens', 0)} tokens in every"
        f" loop (the JSON schemas: {r.get('tools_json_tokens', 0)}), model latency"
        f" {r['model_ms']:.0f} ms, small tier reads "
        f"{f'the last {small} tokens' if small else 'everything'},"
        f" wordings {Path(r['wording']).name})"
    )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench agent", description=__doc__)
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--sessions", type=int, default=4, help="per user")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="5 users × 4 sessions")
    ap.add_argument(
        "--model-ms",
        type=float,
        default=0.0,
        help="the stand-in model's latency per call, slept in the pocketd loop between its "
        "Steps (0: rounds back to back, the worst case for pocketd's background work)",
    )
    ap.add_argument(
        "--wording",
        choices=tuple(WORDINGS),
        default="blind7",
        help="the preference wordings: blind7 (the headline: written from the task description "
        "alone for issue 32, half in Chinese), blind6, blind5, blind4, blind3, blind2 and blind "
        "(read since), "
        "seen or "
        "held-out "
        "(in the said head's training set) (bench/data/agent_wordings_*)",
    )
    ap.add_argument("--wording-file", type=Path, help="a wordings file (in place of --wording)")
    ap.add_argument(
        "--small-context",
        type=int,
        default=0,
        help="the simple route's model reads only the last N tokens of a longer prompt "
        "(0: it reads everything, as every other model)",
    )
    ap.add_argument(
        "--output-tokens",
        choices=("mixed", *BUCKETS),
        default="mixed",
        help="tool-output length: one bucket, or mixed (the buckets in turn, by session)",
    )
    ap.add_argument(
        "--system-tokens", type=int, default=0, help="pad the system prompt to N tokens"
    )
    ap.add_argument("--json", type=Path)
    ns = ap.parse_args(argv)
    if ns.quick:
        ns.users, ns.sessions = 5, 4
    path = ns.wording_file or WORDINGS[ns.wording]
    r = run(
        ns.users, ns.sessions, ns.rounds, ns.seed, Wordings.load(path),
        ns.output_tokens, ns.system_tokens, ns.model_ms, ns.small_context,
    )  # fmt: skip
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=2, ensure_ascii=False) + "\n")
    return 0
