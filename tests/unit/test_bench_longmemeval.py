"""`bench longmemeval` on a tiny LongMemEval-shaped data set: the loader's fields, the any/all
scoring, what is left out, the same turns for every retriever, and the split. No server, no
encoder, no ../shared data."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

import bench.longmemeval as lme
from bench.ablations import ABLATIONS, ablation_env
from bench.dialogs import Turn
from bench.longmemeval_data import DataMissingError, Question, build, parse_date, read
from bench.longmemeval_score import figures, hits
from bench.longmemeval_split import PARTS, groups, load, split, to_json
from bench.quality_data import Corpus, Ranker

D1, D2, D3, D4 = (f"2023/05/0{d} (Mon) 1{d}:30" for d in (1, 2, 3, 4))
ASKED = "2023/05/10 (Wed) 09:00"
SESSIONS: dict[str, list[dict[str, Any]]] = {
    "s_a": [
        {"role": "user", "content": "I adopted a cat named Miso", "has_answer": True},
        {"role": "assistant", "content": "Congratulations on Miso!", "has_answer": False},
    ],
    "s_b": [
        {"role": "user", "content": "  ", "has_answer": False},  # no words: left out
        {"role": "user", "content": "My sister lives in Lyon", "has_answer": True},
        {"role": "assistant", "content": "Lyon is lovely in spring.", "has_answer": False},
    ],
    "s_c": [
        {"role": "user", "content": "What is the capital of Peru?", "has_answer": False},
        {"role": "assistant", "content": "Lima.", "has_answer": False},
    ],
    "s_d": [
        {"role": "user", "content": "Recommend me a novel", "has_answer": False},
        {"role": "assistant", "content": "Try Dune by Frank Herbert.", "has_answer": True},
    ],
}


def _q(qid: str, kind: str, text: str, haystack: list[tuple[str, str]], answer: list[str]) -> Any:
    return {
        "question_id": qid,
        "question_type": kind,
        "question": text,
        "answer": "-",
        "question_date": ASKED,
        "haystack_session_ids": [s for s, _ in haystack],
        "haystack_dates": [d for _, d in haystack],
        "answer_session_ids": answer,
    }


QUESTIONS = [
    # s_c recurs in q1's haystack: only its first occurrence is kept.
    _q("q1", "single-session-user", "What is my cat's name?",
       [("s_c", D2), ("s_a", D1), ("s_c", D3)], ["s_a"]),
    _q("q1_abs", "single-session-user", "What is my dog's name?",
       [("s_c", D2), ("s_a", D1)], []),
    _q("q2", "multi-session", "Where do my cat and my sister live?",
       [("s_a", D1), ("s_b", D3), ("s_c", D2)], ["s_a", "s_b"]),
    _q("q3", "single-session-assistant", "Which novel did you recommend?",
       [("s_c", D2), ("s_d", D4)], ["s_d"]),
]  # fmt: skip


def write_data(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    with gzip.open(path / "dev_questions.json.gz", "wt", encoding="utf-8") as fh:
        json.dump(QUESTIONS, fh)
    with gzip.open(path / "dev_sessions.json.gz", "wt", encoding="utf-8") as fh:
        json.dump(SESSIONS, fh)
    return path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return write_data(tmp_path / "lme")


def test_recall_any_and_all_count_evidence_turns_in_the_top_k() -> None:
    ranked = ["a", "x1", "x2", "x3", "x4", "b", "x5"]
    assert hits(ranked, ["a", "b"]) == {"any@5": 1, "any@10": 1, "all@5": 0, "all@10": 1}
    assert hits(ranked, ["b"]) == {"any@5": 0, "any@10": 1, "all@5": 0, "all@10": 1}
    assert hits(ranked, ["a", "zz"]) == {"any@5": 1, "any@10": 1, "all@5": 0, "all@10": 0}
    assert hits(["a", "a", "a", "a", "a", "b"], ["a", "b"])["all@5"] == 0  # repeats fill the top
    with pytest.raises(ValueError):
        hits(ranked, [])  # LongMemEval's all([]) == 1 would count a question with nothing to find
    per_question = {
        "u1": hits(ranked, ["a", "b"]),
        "u2": hits(ranked, ["b"]),
        "m1": hits(ranked, ["zz"]),
    }
    figs = figures(per_question, {"u1": "user", "u2": "user", "m1": "multi"})
    assert figs["user"] == {"n": 2, "any@5": 0.5, "any@10": 1.0, "all@5": 0.0, "all@10": 1.0}
    assert figs["multi"]["n"] == 1 and figs["multi"]["any@10"] == 0.0
    assert figs["overall"]["n"] == 3 and figs["overall"]["any@10"] == pytest.approx(2 / 3)


def test_the_loader_gives_each_question_its_haystack_with_fields(data_dir: Path) -> None:
    data = read(data_dir)
    assert (
        parse_date("2023/05/30 (Tue) 23:40")
        == dt.datetime(2023, 5, 30, 23, 40, tzinfo=dt.UTC).timestamp()
    )
    x = build(data, data.questions, part="tune")
    # The abstention question is left out, counted, and its haystack is not loaded.
    assert x.left_out == Counter({"abstention": 1})
    assert {t.namespace for t in x.corpus.turns} == {"lme/q1", "lme/q2", "lme/q3"}
    assert x.repeated_sessions == 1 and x.empty_turns == 1
    q1 = [t for t in x.corpus.turns if t.namespace == "lme/q1"]
    assert [(t.session_id, t.index) for t in q1] == [("s_c", 0), ("s_c", 1), ("s_a", 0), ("s_a", 1)]
    for t in x.corpus.turns:
        raw = SESSIONS[t.session_id][t.index]
        assert t.text == raw["content"] and t.speaker == raw["role"]  # words only, role as speaker
        q = next(q for q in QUESTIONS if f"lme/{q['question_id']}" == t.namespace)
        first = q["haystack_session_ids"].index(t.session_id)  # a repeat keeps the first date
        assert t.time == parse_date(q["haystack_dates"][first])
    probes = {p.namespace: p for p in x.corpus.probes}
    assert probes["lme/q2"].evidence == (("lme/q2/s_a/0",), ("lme/q2/s_b/1",))
    assert probes["lme/q3"].evidence == (("lme/q3/s_d/1",),)  # an assistant turn
    assert all(p.as_of == parse_date(ASKED) and p.half == "tune" for p in probes.values())
    # LongMemEval's own index: user turns only; q3's evidence is the assistant's, so it is out.
    u = build(data, data.questions, user_only=True)
    assert {t.speaker for t in u.corpus.turns} == {"user"}
    assert {p.namespace for p in u.corpus.probes} == {"lme/q1", "lme/q2"}
    assert u.no_evidence == Counter({"single-session-assistant": 1})
    assert not any(t.namespace == "lme/q3" for t in u.corpus.turns)


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    half = tmp_path / "half"
    write_data(half)
    (half / "dev_sessions.json.gz").unlink()
    with pytest.raises(DataMissingError, match=r"dev_sessions\.json\.gz"):
        read(half)
    with pytest.raises(SystemExit, match="LongMemEval data not found"):
        lme.main(["--data", str(tmp_path / "nowhere")])


class FakePocketd:
    """Records what it is given; holds every turn but q2's sister turn (as if the gate dropped
    it); ranks a namespace's turns in the order they came."""

    instances: ClassVar[list[FakePocketd]] = []

    def __init__(
        self,
        keep: bool = False,
        work: Path | None = None,
        config: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.envs: list[dict[str, str]] = [env or {}]  # each server's settings, in order
        self.turns: list[Turn] = []
        self.imports: dict[str, dict[str, float]] = {}
        self.short_lists: dict[str, int] = {"longmemeval": 0}
        self.closed = False
        FakePocketd.instances.append(self)

    def add(self, corpus: Corpus, label: str) -> None:
        self.turns += corpus.turns
        self.imports[label] = {
            "turns": float(len(corpus.turns)),
            "seconds": 1.0,
            "turns_per_second": 0.0,
            "rejected_by_gate": 0.0,
            "turns_folded_by_merging": 0.0,
            "index_wait_seconds": 0.0,
        }

    @property
    def held(self) -> set[str]:
        return {t.turn_id for t in self.turns} - {"lme/q2/s_b/1"}

    saved = False

    def save(self) -> None:
        pass

    def reopen(self, env: dict[str, str] | None = None) -> None:
        self.envs.append(env or {})

    def ranker(self, label: str) -> Ranker:
        return lambda p: [t.turn_id for t in self.turns if t.namespace == p.namespace]

    def close(self) -> None:
        self.closed = True


def test_every_retriever_gets_the_same_turns_and_is_scored_per_part(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    split_file = tmp_path / "split.json"
    split_file.write_text(json.dumps({"tune": ["q1", "q1_abs", "q2"], "report": ["q3"]}))
    given: list[Turn] = []

    def fake_baselines(corpus: Corpus, info: dict[str, Any]) -> dict[str, Ranker]:
        given.extend(corpus.turns)
        info["dense_encoder"] = "fake"
        return {
            "nothing": lambda p: [],
            "reverse": lambda p: [t.turn_id for t in corpus.turns if t.namespace == p.namespace][
                ::-1
            ],
        }

    FakePocketd.instances.clear()
    monkeypatch.setattr(lme, "Pocketd", FakePocketd)
    monkeypatch.setattr(lme, "baselines", fake_baselines)
    out = tmp_path / "out.json"
    assert lme.main(["--data", str(data_dir), "--split", str(split_file), "--json", str(out)]) == 0
    (pd,) = FakePocketd.instances
    assert pd.closed
    # one server on the defaults, then one per ablation with its mechanism off
    assert pd.envs[0] == {}
    assert pd.envs[1:] == [ablation_env(off) for _, off in ABLATIONS]
    assert pd.envs[1] == {"POCKETD__MEMORY__HYBRID_SEARCH__ROLE_BOOST": "0"}
    key = [(t.turn_id, t.text, t.speaker, t.session_id, t.time, t.index) for t in pd.turns]
    assert sorted(key) == sorted(
        (t.turn_id, t.text, t.speaker, t.session_id, t.time, t.index) for t in given
    )
    assert {t.speaker for t in given} == {"user", "assistant"}
    r = json.loads(out.read_text())
    tune, report = r["parts"]["tune"]["figures"], r["parts"]["report"]["figures"]
    assert {name for name, _ in ABLATIONS} <= set(report)
    assert r["parts"]["tune"]["left_out"] == {"abstention": 1}
    assert tune["pocketd"]["overall"]["n"] == 2 and report["pocketd"]["overall"]["n"] == 1
    assert tune["nothing"]["overall"]["any@10"] == 0.0
    # The ceiling: q2's sister turn is not held, so one evidence turn of two.
    assert tune["ceiling"]["multi-session"] == {
        "n": 1,
        "any@5": 1,
        "any@10": 1,
        "all@5": 0,
        "all@10": 0,
    }
    assert tune["ceiling"]["single-session-user"]["all@5"] == 1
    assert tune["oracle"]["overall"]["all@5"] == 1
    # "reverse" on q2 (6 turns): s_c/1 s_c/0 s_b/2 s_b/1 s_a/1 | s_a/0: all only at 10.
    assert r["per_question"]["reverse"]["q2"] == {"any@5": 1, "any@10": 1, "all@5": 0, "all@10": 1}
    assert set(r["per_question"]["pocketd"]) == {"q1", "q2", "q3"}  # no abstention question
    assert r["together"]["ceiling"]["n"] == 3
    assert r["together"]["ceiling"]["all@10"] == pytest.approx(2 / 3)


def _questions(n: int, seed: int) -> list[Question]:
    """n questions of three types; some pairs share an evidence session; every fifth has an
    `_abs` twin."""
    rng = random.Random(seed)
    kinds = ("multi-session", "temporal-reasoning", "single-session-user")
    out = []
    for i in range(n):
        shared = f"ev{i // 2}" if i % 7 == 0 else f"ev-{i}"
        q = Question(f"q{i:03d}", kinds[i % 3], "?", ASKED, ("s",), (D1,), (shared,))
        out.append(q)
        if i % 5 == 0:
            out.append(Question(f"q{i:03d}_abs", q.question_type, "?", ASKED, ("s",), (D1,), ()))
    rng.shuffle(out)
    return out


def test_the_split_is_stable_disjoint_balanced_and_keeps_groups_together() -> None:
    qs = _questions(60, seed=1)
    parts = split(qs)
    assert parts == split(list(reversed(qs)))  # the input's order does not matter
    assert set(parts) == {q.question_id for q in qs} and set(parts.values()) == set(PARTS)
    for g in groups(qs):
        assert len({parts[q.question_id] for q in g}) == 1
    assert any(len(g) > 1 for g in groups(qs))
    for kind in {q.question_type for q in qs}:
        n = Counter(
            parts[q.question_id] for q in qs if q.question_type == kind and not q.abstention
        )
        assert abs(n["tune"] - n["report"]) <= 2


def test_the_split_file_reads_back_and_the_committed_one_is_disjoint(tmp_path: Path) -> None:
    parts = split(_questions(30, seed=3))
    (tmp_path / "split.json").write_text(to_json(parts))
    assert load(tmp_path / "split.json") == parts
    committed = json.loads(Path(lme.SPLIT).read_text())
    assert not set(committed["tune"]) & set(committed["report"])
    assert "sha256" in committed["about"] and committed["seed"] in committed["about"]


def test_a_subset_keeps_each_part_and_type_share() -> None:
    qs = _questions(60, seed=2)
    part_of = split(qs)
    sub = lme.stratified(qs, 12, lambda q: (part_of[q.question_id], q.question_type))
    assert len(sub) == 12 and not any(q.abstention for q in sub)
    counts = Counter((part_of[q.question_id], q.question_type) for q in sub)
    assert len(counts) == 6 and set(counts.values()) <= {1, 2, 3}  # 6 strata of about 10 each
    assert sub == lme.stratified(qs, 12, lambda q: (part_of[q.question_id], q.question_type))
