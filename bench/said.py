"""`python -m bench said`: what a user's input says (issue 32), read by pocketd's head against the
baselines, on wordings its fit never saw.

- **the labelled blind set** (`bench/data/said_blind.json`, the default headline): 240 things
  users say (preference / fact / correction / other, 60 each, half Chinese), written by a helper
  session from the label definitions alone, read only after the head was frozen;
- **the agent bench's wordings** (`bench/data/agent_wordings*.json`): each statement (its
  placeholders filled) is a preference, each reference and distractor is not (the preference
  figures only).

Rows: **pocketd** (the shipped head, `server/prompts/said_head.npz`, with its calibrated floors);
**argmax** (the same head without floors); **1-NN** (the nearest training wording's label, by
the same encoder's cosine: what an afternoon build with the same labelled set would do);
**rules** (the trivial row: pocketd's preference rule before issue 32, `bench.said_rules`);
**other** (everything other); **oracle** (the labels).

Reported: per label precision and recall, and the preference precision/recall per wording set.
What favours whom: the head and 1-NN learn from the same shipped set; the rules were extended on
the `seen` agent wordings (their row there is not a fair test of them).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.agent_data import CHANNELS, WORDINGS, Wordings
from bench.encoder import bench_encoder
from bench.said_rules import rule_says_preference
from bench.stats import environment
from server.adapters.said_models import SHIPPED, read_head
from server.core.agent.said import LABELS, Said, features, precision_recall
from server.said_admin import DEFAULT_DATA, load_set

DATA = Path(__file__).resolve().parent / "data"
BLIND = DATA / "said_blind.json"
EXTRA_WORDINGS: dict[str, Path] = {}
Reader = Callable[[Sequence[str]], list[Said]]


def _labelled(path: Path) -> tuple[list[str], list[Said], list[str]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    items = doc["items"]
    return (
        [str(i["text"]) for i in items],
        [Said(i["label"]) for i in items],
        [str(i.get("lang", "")) for i in items],
    )


def _wordings(w: Wordings) -> tuple[list[str], list[bool]]:
    """Statements filled in (each channel once, a code each), then references and distractors."""
    texts, truth = [], []
    for i, s in enumerate(w.statements):
        ch = CHANNELS[i % len(CHANNELS)]
        texts.append(s.format(ch=ch, pref=f"PREF-{ch.upper()}-{100 + i}"))
        truth.append(True)
    for s in (*w.references, *w.distractors):
        texts.append(s)
        truth.append(False)
    return texts, truth


def readers() -> dict[str, Reader]:
    enc = bench_encoder()
    head = read_head(SHIPPED)
    train = load_set(DEFAULT_DATA)
    train_v = enc.encode([e.text for e in train])
    train_y = [e.said for e in train]

    def pocketd(texts: Sequence[str]) -> list[Said]:
        vs = enc.encode(list(texts))
        return [head.read(t, v).said for t, v in zip(texts, vs, strict=True)]

    def argmax(texts: Sequence[str]) -> list[Said]:
        p = head.probabilities(features(list(texts), enc.encode(list(texts))))
        return [LABELS[int(i)] for i in p.argmax(axis=1)]

    def nearest(texts: Sequence[str]) -> list[Said]:
        sims = enc.encode(list(texts)) @ train_v.T
        return [train_y[int(i)] for i in np.asarray(sims).argmax(axis=1)]

    def rules(texts: Sequence[str]) -> list[Said]:
        return [Said.PREFERENCE if rule_says_preference(t) else Said.OTHER for t in texts]

    def other(texts: Sequence[str]) -> list[Said]:
        return [Said.OTHER for _ in texts]

    return {"pocketd": pocketd, "argmax": argmax, "1-NN": nearest, "rules": rules, "other": other}


def run(blind: Path) -> dict[str, Any]:
    texts, truth, langs = _labelled(blind)
    rs = readers()
    out: dict[str, Any] = {"environment": environment(), "blind": str(blind), "labelled": {}}

    def oracle(_texts: Sequence[str]) -> list[Said]:
        return list(truth)

    for name, read in {**rs, "oracle": oracle}.items():
        said = read(texts)
        row: dict[str, Any] = {
            "accuracy": sum(s == t for s, t in zip(said, truth, strict=True)) / len(truth)
        }
        for lab in LABELS:
            row[lab.value] = precision_recall(said, truth, lab)
        for lang in sorted(set(langs)):
            pick = [i for i, g in enumerate(langs) if g == lang]
            row[f"preference_{lang}"] = precision_recall(
                [said[i] for i in pick], [truth[i] for i in pick], Said.PREFERENCE
            )
        out["labelled"][name] = row
    sets = {**WORDINGS, **{k: v for k, v in EXTRA_WORDINGS.items() if v.is_file()}}
    out["wordings"] = {}
    for set_name, path in sets.items():
        w_texts, w_truth = _wordings(Wordings.load(path))
        truth_said = [Said.PREFERENCE if t else Said.OTHER for t in w_truth]
        out["wordings"][set_name] = {
            name: precision_recall(read(w_texts), truth_said, Said.PREFERENCE)
            for name, read in rs.items()
        }
    return out


def _f(v: float | None) -> str:
    return " n/a" if v is None else f"{v:.2f}"


def report(r: dict[str, Any]) -> str:
    rows = [f"labelled blind set ({Path(r['blind']).name}): precision / recall per label"]
    head = f"{'':<9}{'acc':>6}" + "".join(f"{lab.value:>16}" for lab in LABELS)
    langs = sorted(
        k[11:] for k in next(iter(r["labelled"].values())) if k.startswith("preference_")
    )
    head += "".join(f"{'pref ' + g:>14}" for g in langs)
    rows.append(head)
    for name, row in r["labelled"].items():
        cells = "".join(
            f"{_f(row[lab.value][0]) + ' / ' + _f(row[lab.value][1]):>16}" for lab in LABELS
        )
        cells += "".join(
            f"{_f(row[f'preference_{g}'][0]) + '/' + _f(row[f'preference_{g}'][1]):>14}"
            for g in langs
        )
        rows.append(f"{name:<9}{row['accuracy']:>6.2f}{cells}")
    rows.append("agent bench wordings: preference precision / recall")
    names = list(next(iter(r["wordings"].values())))
    rows.append(f"{'':<10}" + "".join(f"{n:>14}" for n in names))
    for set_name, by in r["wordings"].items():
        rows.append(
            f"{set_name:<10}" + "".join(f"{_f(by[n][0]) + ' / ' + _f(by[n][1]):>14}" for n in names)
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench said", description=__doc__)
    ap.add_argument("--blind", type=Path, default=BLIND, help="the labelled set to report on")
    ap.add_argument("--json", type=Path)
    ns = ap.parse_args(argv)
    r = run(ns.blind)
    print(report(r))
    if ns.json:
        ns.json.parent.mkdir(parents=True, exist_ok=True)
        ns.json.write_text(json.dumps(r, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
