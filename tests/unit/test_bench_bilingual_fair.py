"""`python -m bench bilingual` gives every row the same inputs: the same memory texts and the same
question texts; its hybrid fuses the two channels it names; the blind set loads and every gold
memory exists. No server and no model: the server is a recording fake and the encoders are
fakes whose vectors this test chooses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from bench import bilingual, bilingual_rankers, quality_retrievers
from bench.bilingual_data import Memory, Question
from bench.bilingual_rankers import BM25, Dense, hybrid
from bench.bilingual_sets import BilingualSet, blind_set, check, load_set

MEMORY_TEXTS = {
    "m1": "用户只使用安卓手机，不考虑苹果。",
    "m2": "I am allergic to peanuts.",
    "m3": "我女儿今年九月上小学。",
    "m4": "The standup moved to Thursday afternoons.",
}
QUESTIONS = {  # text → (group, gold)
    "他用的是什么手机？": ("zh", "m1"),
    "Which food makes me ill?": ("en", "m2"),
    "When does my daughter start school?": ("cross", "m3"),
}
TINY = BilingualSet(
    name="tiny",
    about="a test set",
    memories=tuple(Memory(i, t) for i, t in MEMORY_TEXTS.items()),
    questions=tuple(Question(g, t, gold) for t, (g, gold) in QUESTIONS.items()),
    background=("m4",),
)
ALL_TEXTS = {m.text for m in TINY.memories} | {q.text for q in TINY.questions}


class RecordingEncoder:
    """Vectors chosen per text (`vectors`; others get a fixed unit vector), and every text
    asked for, per side."""

    def __init__(self, name: str, vectors: dict[str, Sequence[float]] | None = None) -> None:
        self.name = name
        self.vectors = vectors or {}
        self.seen: dict[str, list[str]] = {"passages": [], "queries": []}

    def _rows(self, side: str, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.seen[side] += texts
        rows = [self.vectors.get(t, (0.0, 0.0, 1.0)) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), 3)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._rows("passages", texts)

    def queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._rows("queries", texts)


@dataclass
class FakeClient:
    """A server that stores every memory and answers each Recall with all of them."""

    remembered: list[str] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    namespaces: set[str] = field(default_factory=set)

    def remember_batch(self, items: Sequence[Any]) -> list[Any]:
        self.remembered += [i.text for i in items]
        self.namespaces |= {i.namespace for i in items}
        return [
            SimpleNamespace(decision="stored", memory_id=f"p{n}", reason="")
            for n in range(len(items))
        ]

    def recall(self, namespace: str, text: str, **_: Any) -> Any:
        self.asked.append(text)
        hits = [SimpleNamespace(memory=SimpleNamespace(memory_id=f"p{n}")) for n in range(4)]
        return SimpleNamespace(hits=hits)

    def stats(self) -> Any:
        return SimpleNamespace(index=SimpleNamespace(pending=0))


def record(
    monkeypatch: pytest.MonkeyPatch, name: str, module: Any = bilingual_rankers
) -> list[str]:
    """The texts `<module>.<name>` is called with from now on."""
    calls: list[str] = []
    real = getattr(module, name)

    def recording(text: str) -> Any:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(module, name, recording)
    return calls


def test_every_row_gets_the_same_memory_and_question_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = FakeClient()

    @contextmanager
    def serve(env: dict[str, str]) -> Iterator[Any]:
        assert env == {}  # use-m3: the server on its defaults
        yield client

    tokenized = record(monkeypatch, "tokenize", quality_retrievers)  # the shared bm25's
    grams = record(monkeypatch, "bigrams")
    encoders = {"use-m3": RecordingEncoder("use-m3"), "e5-small": RecordingEncoder("e5-small")}
    result = bilingual.run_set(TINY, encoders, serve=serve)  # type: ignore[arg-type]

    memories = sorted(m.text for m in TINY.memories)
    questions = sorted(q.text for q in TINY.questions)
    assert sorted(client.remembered) == memories
    assert sorted(client.asked) == questions
    for enc in encoders.values():
        assert sorted(enc.seen["passages"]) == memories
        assert sorted(set(enc.seen["queries"])) == questions
    for calls in (tokenized, grams):  # bm25 (and the hybrids' bm25 channel), the trivial row
        assert set(calls) == ALL_TEXTS
    assert set(result.rows) == {
        "pocketd use-m3",
        "hybrid use-m3",
        "dense use-m3",
        "hybrid e5-small",
        "dense e5-small",
        "bm25",
        "trivial",
    }
    for row, figures in result.rows.items():
        assert figures["all"]["n"] == len(TINY.questions), row
        assert set(figures) == {"zh", "en", "cross", "all"}, row


@dataclass
class Channel:
    scores: dict[str, float]

    def scored(self, q: Question, depth: int) -> list[tuple[str, float]]:
        ranked = sorted(self.scores.items(), key=lambda kv: -kv[1])
        return ranked[:depth]


def test_the_hybrid_fuses_both_channels() -> None:
    # Each channel alone puts another memory first; "both" is second in each and first fused.
    q = TINY.questions[0]
    keyword = Channel({"kw": 10.0, "both": 9.0, "dn": 1.0})
    dense = Channel({"dn": 0.9, "both": 0.8, "kw": 0.1})
    ranked = hybrid(keyword, dense)(q)  # type: ignore[arg-type]
    assert ranked[0] == "both"
    assert set(ranked) == {"both", "kw", "dn"}
    only_keyword = hybrid(keyword, Channel({}))(q)  # type: ignore[arg-type]
    assert only_keyword[0] == "kw"


def test_each_hybrid_row_reads_the_encoder_it_names() -> None:
    # No question word is in any memory, so bm25 finds nothing and the named encoder decides.
    s = BilingualSet(
        "tiny",
        "",
        (Memory("a", "alpha alpha"), Memory("b", "beta beta")),
        (Question("en", "gamma?", "a"),),
        (),
    )
    towards_a = RecordingEncoder("x", {"alpha alpha": (1, 0, 0), "beta beta": (0, 1, 0)})
    towards_b = RecordingEncoder("y", {"alpha alpha": (0, 1, 0), "beta beta": (1, 0, 0)})
    for enc in (towards_a, towards_b):
        enc.vectors["gamma?"] = (1, 0, 0)
    bm25 = BM25(s.memories)
    assert bm25(s.questions[0]) == []
    assert hybrid(bm25, Dense(towards_a, s.memories))(s.questions[0])[0] == "a"
    assert hybrid(bm25, Dense(towards_b, s.memories))(s.questions[0])[0] == "b"


def test_the_trivial_row_needs_shared_characters() -> None:
    trivial = bilingual_rankers.Bigram(TINY.memories)
    assert trivial(Question("zh", "安卓手机", "m1"))[0] == "m1"
    assert "m1" not in trivial(Question("cross", "Android phone", "m1"))  # no shared bigram


def test_the_blind_set_loads_and_every_gold_exists() -> None:
    s = blind_set()
    ids = {m.id for m in s.memories}
    assert s.questions and all(q.gold in ids for q in s.questions)
    assert len(ids) == len(s.memories)
    assert len(s.memories) > len({q.gold for q in s.questions})  # it has distractors
    assert set(s.background) == ids - {q.gold for q in s.questions}


def test_a_set_with_a_missing_gold_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "set.json"
    data = {
        "about": "x",
        "memories": [{"id": "a", "text": "alpha"}],
        "questions": [{"group": "en", "text": "alpha?", "gold": "a"}],
    }
    path.write_text(json.dumps(data))
    assert load_set(path, "t").questions[0].gold == "a"
    data["questions"].append({"group": "en", "text": "beta?", "gold": "b"})  # type: ignore[attr-defined]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="do not exist"):
        load_set(path, "t")
    with pytest.raises(ValueError, match="duplicate"):
        check(BilingualSet("t", "", (Memory("a", "x"), Memory("a", "y")), (), ()))
