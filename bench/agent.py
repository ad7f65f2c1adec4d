"""`python -m bench agent`: seed 001's experiment. Classic full-context ReAct against the
pocketd-assisted loop, on the same customer-support sessions (`bench.agent_data`), with the same
stand-in model, the same tools, the same tokenizer and the same prices.

- **The baseline** puts the current session's whole history in every prompt, as classic ReAct
  does: every input and tool output verbatim, and nothing from the user's earlier sessions. It
  calls one model, the medium route's.
- **The pocketd loop** calls Step twice a round against a real `pocketd serve`: once to report
  the last round and get the tier and the context, and once with the model's output to get the
  action checked. The model is called on Step's context, at the tier Step routes to.
- **The stand-in model** (`model`) does not know which loop it is in. It reads its prompt, and the
  session's list of needed facts (the same for both loops), which stands for what a real model
  would infer from the question. It knows a fact only when its prompt holds it. In the last
  round it answers with the needed facts its prompt holds. When one is missing and a tool can
  fetch it (the order id by asking the user, the earlier ticket's fix by looking the ticket
  up), it spends a round fetching it (at most `MAX_FETCHES`), and the fetch's observation must
  reach its next prompt. A preference only an earlier session stated cannot be fetched, so the
  task fails.
- **The wording varies** (`bench.agent_data.STATED`, `REFERRED`): a preference is stated in one
  of five ways and referred to in one of four, so the key-event rules are not measured on one
  sentence.
- **What favours whom.** The stand-in answers as well on every tier, so the cheaper tiers Step
  routes to cost nothing in quality here; a real model might. The baseline never sees earlier
  sessions, by design (classic ReAct's context is the session), which fixes its preference hit
  at the share of first sessions (0.25). pocketd's own work is priced by its settings (a Recall
  at 1 micro per 1,000 cost units, a stored memory at 20 micros) and added to its cost.

Reported per loop:
- prompt tokens per task, cost per task in micros, rounds;
- the preference hit rate (the preference is in the last round's prompt);
- completion (the answer holds every needed fact);
- and, for pocketd, Step's p50/p99 overhead per round (the round's two calls together), per
  call, and for the round's first call (recall and context) alone.
`--json PATH` writes them as data; `--quick` runs 20 sessions.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench.agent_data import Round, Session, generate
from bench.server_proc import ServerProcess
from bench.stats import environment, summary_ms
from pocketd import Client
from pocketd.v1 import ledger_service_pb2 as lpb
from server.adapters.token_counter import TokenCounter
from server.config import BUILTIN_TOKENIZER
from server.core.settings import AgentSettings

OUTPUT_TOKENS = 40
MAX_FETCHES = 3  # lookups per task; then the stand-in answers with what its prompt holds
TOOLS = [
    {"name": "support", "description": "Run the next support step. Returns what it found.",
     "parameters": {"type": "object", "properties": {"ask": {"type": "string"}}}},
    {"name": "lookup", "description": "Fetch a missing fact. Returns the fact.",
     "parameters": {"type": "object", "properties": {"fact": {"type": "string"}}}},
]  # fmt: skip
BASELINE_MODEL = AgentSettings().routes["medium"].model


def log(msg: str) -> None:
    print(f"[agent] {msg}", file=sys.stderr, flush=True)


def price(model: str, tokens_in: int, tokens_out: int) -> int:
    p = AgentSettings().prices.get(model, AgentSettings().default_price)
    return -(-tokens_in * p.input_per_1k_micros // 1000) - (
        -tokens_out * p.output_per_1k_micros // 1000
    )


def fetchable(prompt: str, needed: tuple[str, ...]) -> list[str]:
    """The needed facts a tool can fetch that the prompt lacks (a preference cannot be)."""
    return [f for f in needed if f not in prompt and not f.startswith("PREF-")]


def model(
    prompt: str, r: Round, last: bool, needed: tuple[str, ...], fetches: int
) -> dict[str, object]:
    """The stand-in model's action for a round, from its prompt alone: it knows a fact only when
    the prompt holds it (a fetched one too: the fetch's observation must reach the prompt).
    `fetches`: the lookups it already made this task; it makes at most MAX_FETCHES."""
    if not last:
        return {"type": "tool", "tool": "support", "params": {"ask": r.text[:40]}}
    missing = fetchable(prompt, needed)
    if missing and fetches < MAX_FETCHES:
        return {"type": "tool", "tool": "lookup", "params": {"fact": missing[0][:3]}}
    answer = "Resolution: " + ", ".join(f for f in needed if f in prompt)
    return {"type": "finish", "answer": answer}


@dataclass
class Tally:
    tokens: list[int] = field(default_factory=list)
    cost: list[int] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    pref_hit: list[bool] = field(default_factory=list)
    done: list[bool] = field(default_factory=list)
    step_s: list[float] = field(default_factory=list)  # each Step call
    round_s: list[float] = field(default_factory=list)  # each round's two calls together

    def summary(self) -> dict[str, float]:
        n = len(self.tokens) or 1
        return {
            "prompt_tokens_per_task": sum(self.tokens) / n,
            "cost_micros_per_task": sum(self.cost) / n,
            "rounds": sum(self.rounds) / n,
            "preference_hit": sum(self.pref_hit) / n,
            "completion": sum(self.done) / n,
        }


def baseline(s: Session, count: TokenCounter, t: Tally) -> None:
    history: list[str] = []
    tokens = cost = rounds = 0
    fetched: set[str] = set()
    finished = False
    goal = f"Goal: help {s.user} with their support request."
    for i, r in enumerate(s.rounds):
        last = i == len(s.rounds) - 1
        while True:
            rounds += 1
            prompt = "\n".join([goal, *history, f"User: {r.text}"])
            n = count.count(prompt)
            tokens += n
            cost += price(BASELINE_MODEL, n, OUTPUT_TOKENS)
            act = model(prompt, r, last, s.needed, len(fetched))
            if act["type"] == "finish":
                t.pref_hit.append(s.preference in prompt)
                t.done.append(all(f in str(act["answer"]) for f in s.needed))
                finished = True
                break
            if last:  # a fetch: the model asked for a missing fact, and got it
                got = fetchable(prompt, s.needed)[0]
                fetched.add(got)
                history.append(f"Observation: Fetched: {got}")
                continue
            history.append(f"User: {r.text}\nObservation: {r.observation or 'ok'}")
            break
    if not finished:
        t.pref_hit.append(False)
        t.done.append(False)
    t.tokens.append(tokens)
    t.cost.append(cost)
    t.rounds.append(rounds)


def assisted(c: Client, s: Session, count: TokenCounter, t: Tally, model_s: float = 0.0) -> None:
    budget = lpb.TaskBudget(total_micros=10**9, emergency_ratio=0.0)
    task = f"{s.user}-{s.index}-{uuid.uuid4().hex[:6]}"
    goal = f"Help {s.user} with their support request."
    tokens = cost = n = 0
    fetched: set[str] = set()
    action, obs = "", ""
    prev_image = False
    used: tuple[tuple[str, int, int], ...] = ()
    finished = False
    with c.task(task, budget, namespace=s.user, goal=goal, session_id=f"s{s.index}") as tk:
        for i, r in enumerate(s.rounds):
            last = i == len(s.rounds) - 1
            while True:
                n += 1
                t0 = time.perf_counter()
                plan = tk.step(
                    n, input=r.text, image=r.image, action=action, observation=obs,
                    media=bool(obs) and prev_image, usage=used, tools=TOOLS if n == 1 else None,
                )  # fmt: skip
                first = time.perf_counter() - t0
                t.step_s.append(first)
                k = count.count(plan.context)
                tokens += k
                cost += price(plan.model, k, OUTPUT_TOKENS)
                act = model(plan.context, r, last, s.needed, len(fetched))
                time.sleep(model_s)  # the model's own latency, if asked (0: back to back)
                t0 = time.perf_counter()
                checked = tk.step(n, raw_output=json.dumps(act))
                t.step_s.append(time.perf_counter() - t0)
                t.round_s.append(first + t.step_s[-1])
                assert not checked.action_error, checked.action_error  # every action is valid
                used = ((plan.model, k, OUTPUT_TOKENS),)
                if checked.action.type == "finish":
                    t.pref_hit.append(s.preference in plan.context)
                    t.done.append(all(f in checked.action.answer for f in s.needed))
                    finished = True
                    break
                action = checked.action.params_json
                if last:
                    got = fetchable(plan.context, s.needed)[0]
                    fetched.add(got)
                    obs = f"Fetched: {got}"
                    continue
                obs = r.observation or "ok"
                prev_image = r.image  # the observation belongs to this round's input
                break
    if not finished:
        t.pref_hit.append(False)
        t.done.append(False)
    own = 0  # pocketd's own work (recall, storage), charged to the task as memory
    if tk.bill is not None:
        own = sum(k.spent_micros for k in tk.bill.by_kind if k.kind == lpb.SPEND_KIND_MEMORY)
    t.tokens.append(tokens)
    t.cost.append(cost + own)
    t.rounds.append(n)


def run(
    users: int,
    sessions: int,
    rounds: int,
    seed: int,
    model_ms: float = 0.0,
    held_out: bool = False,
) -> dict[str, object]:
    data = generate(users, sessions, rounds, seed, held_out)
    count = TokenCounter(BUILTIN_TOKENIZER)
    base, help_ = Tally(), Tally()
    with tempfile.TemporaryDirectory(prefix="pocketd-agent-") as tmp:
        p = ServerProcess(Path(tmp) / "data")
        try:
            p.wait_serving(timeout=300)
            with Client(p.target, timeout=30) as c:
                for i, s in enumerate(data):
                    baseline(s, count, base)
                    assisted(c, s, count, help_, model_ms / 1000)
                    if (i + 1) % 20 == 0:
                        log(f"{i + 1}/{len(data)} sessions")
        finally:
            p.close()
    b, a = base.summary(), help_.summary()
    return {
        "environment": environment(),
        "sessions": len(data),
        "model_ms": model_ms,
        "wording": "held-out" if held_out else "seen",
        "baseline": b,
        "pocketd": a,
        "token_reduction": 1 - a["prompt_tokens_per_task"] / b["prompt_tokens_per_task"],
        "cost_reduction": 1 - a["cost_micros_per_task"] / b["cost_micros_per_task"],
        "preference_hit_baseline": b["preference_hit"],
        "preference_hit": a["preference_hit"],
        "rounds_baseline": b["rounds"],
        "rounds": a["rounds"],
        "completion_baseline": b["completion"],
        "completion": a["completion"],
        # Step's overhead per round: the round's two calls (the context, then the action).
        "step_p50_ms": summary_ms(help_.round_s)["p50_ms"],
        "step_p99_ms": summary_ms(help_.round_s)["p99_ms"],
        # Each call alone, and the round's first call (recall and context) alone.
        "call_p50_ms": summary_ms(help_.step_s)["p50_ms"],
        "call_p99_ms": summary_ms(help_.step_s)["p99_ms"],
        "context_call_p50_ms": summary_ms(help_.step_s[0::2])["p50_ms"],
        "context_call_p99_ms": summary_ms(help_.step_s[0::2])["p99_ms"],
    }


def report(r: dict[str, object]) -> str:
    b, a = r["baseline"], r["pocketd"]
    rows = [f"{'':<22} {'classic ReAct':>14} {'pocketd':>10}"]
    for key, label in (
        ("prompt_tokens_per_task", "prompt tokens / task"),
        ("cost_micros_per_task", "cost micros / task"),
        ("rounds", "rounds"),
        ("preference_hit", "preference hit"),
        ("completion", "completion"),
    ):
        rows.append(f"{label:<22} {b[key]:>14.2f} {a[key]:>10.2f}")  # type: ignore[index]
    rows.append(
        f"tokens −{r['token_reduction']:.1%}, cost −{r['cost_reduction']:.1%};"
        f" Step per round p50 {r['step_p50_ms']:.1f} ms, p99 {r['step_p99_ms']:.1f} ms"
        f" (per call {r['call_p50_ms']:.1f} / {r['call_p99_ms']:.1f};"
        f" the context call {r['context_call_p50_ms']:.1f} / {r['context_call_p99_ms']:.1f})"
        f" ({r['sessions']} sessions, model latency {r['model_ms']:.0f} ms,"
        f" {r['wording']} wording)"
    )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench agent", description=__doc__)
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--sessions", type=int, default=4, help="per user")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="20 sessions")
    ap.add_argument(
        "--model-ms",
        type=float,
        default=0.0,
        help="the stand-in model's latency per call, slept in the pocketd loop between its "
        "Steps (0: rounds back to back, the worst case for pocketd's background work)",
    )
    ap.add_argument(
        "--wording",
        choices=("seen", "held-out"),
        default="seen",
        help="how preferences are stated: the wordings the key-event rules were extended on, "
        "or ones written after them (bench.agent_data.HELD_OUT_*)",
    )
    ap.add_argument("--json", type=Path)
    ns = ap.parse_args(argv)
    if ns.quick:
        ns.users, ns.sessions = 5, 4
    r = run(ns.users, ns.sessions, ns.rounds, ns.seed, ns.model_ms, ns.wording == "held-out")
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0
