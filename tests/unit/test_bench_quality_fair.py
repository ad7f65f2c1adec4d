"""`bench quality` is fair (issue 28): the baselines index the words alone with the speaker and
the event time as fields, the named baseline reads those fields, pocketd is sent the same words
and fields, and the tune and report halves are corpora of their own. Fast: no server (a
recording client stands in for it); a bag-of-words encoder stands in for the model."""

from __future__ import annotations

import datetime as dt
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from bench.dialogs import EN, TEMPLATES, ZH, Turn
from bench.quality import baselines, dialog_halves, report_only_when_cues
from bench.quality_data import Corpus, Probe
from bench.quality_fields import named_dates
from bench.quality_retrievers import BM25, Dense, Hybrid, HybridFields, Pocketd, documents
from bench.textproc import tokenize
from pocketd import MemoryInput


class BagOfWords:
    """A deterministic stand-in encoder: hashed word counts, unit length."""

    dim = 64

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.seen.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in tokenize(text):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-9)
        return out


def _at(day: int, month: int = 5) -> float:
    return dt.datetime(2023, month, day, 12, tzinfo=dt.UTC).timestamp()


AS_OF = _at(20)


def _corpus(turns: list[tuple[str, str, float]], questions: list[str]) -> Corpus:
    """One namespace; `turns` as (speaker, words, time), in that order."""
    ts = [
        Turn(f"t{i}", "ns", f"s{i}", speaker, words, at, 0)
        for i, (speaker, words, at) in enumerate(turns)
    ]
    probes = [Probe("ns", "q", q, (("t0",),), AS_OF) for q in questions]
    return Corpus(ts, probes)


def _rankers(corpus: Corpus) -> tuple[Hybrid, HybridFields, BagOfWords]:
    enc = BagOfWords()
    hybrid = Hybrid(BM25(corpus), Dense(corpus, enc))
    return hybrid, HybridFields(hybrid), enc


SAID = "Last Saturday I ran the half marathon in Lisbon."


def test_the_baselines_index_the_words_and_carry_speaker_and_time_as_fields() -> None:
    corpus = _corpus(
        [("Maya", SAID, _at(2)), ("Jonas", "小王说他在成都跑了半程马拉松。", _at(9))],
        ["When did Jonas run the half marathon?"],
    )
    bm25, enc = BM25(corpus), BagOfWords()
    for docs in (bm25.docs["ns"], Dense(corpus, enc).docs["ns"]):
        assert [(d.turn_id, d.text, d.speaker, d.time) for d in docs] == [
            (t.turn_id, t.text, t.speaker, t.time) for t in corpus.turns
        ]
    # What is indexed is the words alone: no speaker, no date glued into the text.
    vocab = set(bm25.indexes["ns"].vocab_dict)
    assert {"maya", "jona", "jonas", "2023", "2", "9", "may"}.isdisjoint(vocab)
    assert set(tokenize(SAID)) <= vocab
    assert set(enc.seen) >= {t.text for t in corpus.turns}
    assert not any("Maya" in s or "2023" in s for s in enc.seen)


def test_baselines_gives_the_named_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = _corpus([("Maya", SAID, _at(2))], ["When did Maya run?"])
    monkeypatch.setattr("bench.quality_retrievers.bench_encoder", BagOfWords)
    rows = baselines(corpus, {})
    assert set(rows) == {"hybrid+fields", "hybrid", "bm25", "dense", "trivial"}
    assert rows["hybrid+fields"](corpus.probes[0])[0] == "t0"


def test_the_fields_move_a_named_speakers_turn_up() -> None:
    # Both speakers told it in the same words: only the speaker tells them apart.
    corpus = _corpus(
        [("Maya", SAID, _at(9)), ("Jonas", SAID, _at(2)), ("Maya", "How was your week?", _at(3))],
        ["When did Jonas run the half marathon?", "when did jonas's race happen? half marathon"],
    )
    hybrid, fields, _ = _rankers(corpus)
    for p in corpus.probes:
        assert hybrid(p)[0] == "t0"  # words alone: Maya's turn first (it comes first)
        assert fields(p)[0] == "t1"  # the name in any case, possessive too
    # In Chinese too.
    zh = _corpus(
        [("小王", "我跑了半程马拉松。", _at(9)), ("阿美", "我跑了半程马拉松。", _at(2))],
        ["阿美是什么时候跑半程马拉松的？"],
    )
    hybrid, fields, _ = _rankers(zh)
    assert hybrid(zh.probes[0])[0] == "t0"
    assert fields(zh.probes[0])[0] == "t1"


@pytest.mark.parametrize(
    "question",
    [
        "I mentioned on May 2nd that I went to the museum. What did I see?",
        "What did I see at the museum on the 2nd of May?",
        "What did I see at the museum on 2 May 2023?",
        "我在5月2日去了博物馆，看了什么？",
        "我在五月二号去了博物馆，看了什么？",
    ],
)
def test_the_fields_move_a_named_dates_turn_up(question: str) -> None:
    words = "我去了博物馆。" if "博物馆" in question else "I went to the museum today."
    corpus = _corpus(
        [("Emily", words, _at(9)), ("Emily", words, _at(2)), ("AI", "Nice!", _at(2, 4))],
        [question],
    )
    hybrid, fields, _ = _rankers(corpus)
    p = corpus.probes[0]
    assert hybrid(p)[0] == "t0"  # words alone: the 9th first (it comes first)
    assert fields(p)[0] == "t1"
    assert fields(p).index("t2") > fields(p).index("t0")  # 2 April is not 2 May


def test_a_question_naming_no_field_ranks_as_the_hybrid() -> None:
    corpus = _corpus(
        [("Maya", SAID, _at(9)), ("Jonas", SAID, _at(2)), ("Jonas", "Nice!", _at(3))],
        ["Who ran the half marathon? May I ask?"],
    )
    hybrid, fields, _ = _rankers(corpus)
    assert named_dates(corpus.probes[0].text, AS_OF) == []
    assert fields(corpus.probes[0]) == hybrid(corpus.probes[0])


def test_relative_days_resolve_against_as_of() -> None:
    yesterday = named_dates("What did I say yesterday?", AS_OF)
    assert [w.matches(dt.date(2023, 5, 19)) for w in yesterday] == [True]
    assert not yesterday[0].matches(dt.date(2023, 5, 20))
    (week,) = named_dates("上周我说了什么？", AS_OF)  # 20 May 2023 is a Saturday
    assert week.matches(dt.date(2023, 5, 8)) and week.matches(dt.date(2023, 5, 14))
    assert not week.matches(dt.date(2023, 5, 15)) and not week.matches(dt.date(2023, 5, 7))


_CODE = re.compile(r"(?<![A-Za-z0-9])(?:ORD-|E|LH|BA|CA|NH)\d{4,5}(?!\d)")


def _fact_values() -> set[str]:
    """Every fact value of the generator's pools, both languages: jobs, cities, pets,
    instruments, items, and each event's wordings."""
    return {
        v
        for lang in (EN, ZH)
        for v in (
            *lang.jobs,
            *lang.cities,
            *lang.pets,
            *lang.instruments,
            *lang.items,
            *(w for e in lang.events for w in e.past),
        )
    }


def test_the_halves_share_no_evidence_turn_and_no_fact() -> None:
    halves = dialog_halves(2, 1, conversations=8, sessions=6)
    tune, report = halves["tune"], halves["report"]
    ev = {h: {t for p in c.probes for g in p.evidence for t in g} for h, c in halves.items()}
    assert ev["tune"] and ev["report"] and not ev["tune"] & ev["report"]
    # No conversation is in both, and no speaker.
    assert not {t.namespace for t in tune.turns} & {t.namespace for t in report.turns}
    assert not {t.speaker for t in tune.turns} & {t.speaker for t in report.turns}
    # No evidence sentence of one half is said, word for word, anywhere in the other.
    texts = {h: {t.turn_id: t.text for t in c.turns} for h, c in halves.items()}
    for h, other in (("report", "tune"), ("tune", "report")):
        said = {texts[h][t] for t in ev[h]}
        assert said and not said & set(texts[other].values()), h
    # No fact value (a job, city, pet, instrument, item or event) is told in both halves.
    told = {h: {v for v in _fact_values() if any(v in t for t in texts[h].values())} for h in texts}
    assert len(told["tune"]) > 20 and len(told["report"]) > 20
    assert not told["tune"] & told["report"], sorted(told["tune"] & told["report"])
    # No identifier is in both, asked about or told.
    codes = {h: {c for t in co.turns for c in _CODE.findall(t.text)} for h, co in halves.items()}
    assert codes["tune"] and codes["report"] and not codes["tune"] & codes["report"]
    # Each half is asked in its own templates only.
    for h, c in halves.items():
        forms = [f for t in TEMPLATES if t.half == h for f in (*t.en, *t.zh)]
        for p in c.probes:
            assert any(_matches(f, p.text) for f in forms), (h, p.text)
    with pytest.raises(ValueError):
        dialog_halves(1, 1, conversations=2, sessions=4)


def _matches(form: str, text: str) -> bool:
    pattern = re.escape(form)
    pattern = re.sub(r"\\\{[a-z]+\\\}", ".+", pattern)
    return re.fullmatch(pattern, text) is not None


def test_the_report_only_when_cues_are_in_report_wordings_only() -> None:
    cues = report_only_when_cues()
    assert cues
    for half, expect in (("report", True), ("tune", False)):
        forms = [f.lower() for t in TEMPLATES if t.half == half for f in (*t.en, *t.zh)]
        assert all(any(c in f for f in forms) is expect for c in cues)


class FakeServer:
    """Stands in for `pocketd serve`: nothing is started."""

    target = "fake:0"

    def __init__(
        self, data: Path, env: dict[str, str] | None = None, config: Path | None = None
    ) -> None:
        self.stopped = False

    def wait_serving(self, timeout: float = 60.0) -> float:
        return 0.0

    def stop(self) -> int:
        self.stopped = True
        return 0

    def close(self) -> None:
        self.stopped = True


@dataclass
class RecordingClient:
    """Stores every memory it is sent and records every Recall; answers with no hits."""

    target: str
    timeout: float = 0.0
    batches: list[list[MemoryInput]] = field(default_factory=list)
    recalls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def remember_batch(self, items: Sequence[MemoryInput]) -> list[Any]:
        start = sum(len(b) for b in self.batches)
        self.batches.append(list(items))
        return [SimpleNamespace(stored=True, memory_id=f"m{start + n}") for n in range(len(items))]

    def recall(self, namespace: str, text: str, **kw: Any) -> Any:
        self.recalls.append((namespace, text, kw))
        return SimpleNamespace(hits=[])

    def stats(self) -> Any:
        return SimpleNamespace(index=SimpleNamespace(pending=0))

    def close(self) -> None:
        pass


def test_pocketd_is_sent_the_words_speaker_and_time_the_baselines_get(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("bench.quality_retrievers.ServerProcess", FakeServer)
    monkeypatch.setattr("bench.quality_retrievers.Client", RecordingClient)
    corpus = dialog_halves(2, 1, conversations=2, sessions=4)["report"]
    pd = Pocketd()
    try:
        pd.add(corpus, "report")
        client = pd.client
        assert isinstance(client, RecordingClient)
        sent = [m for batch in client.batches for m in batch]
        # Each turn is one episode: its words as the text, its speaker, event time, session and
        # position as fields, and nothing else set.
        assert sent == [
            MemoryInput(
                t.namespace,
                t.text,
                kind="episode",
                session_id=t.session_id,
                speaker=t.speaker,
                occurred_at=t.time,
                turn=t.index,
            )
            for t in corpus.turns
        ]
        # One batch per session.
        assert all(len({m.session_id for m in b}) == 1 for b in client.batches)
        assert len(client.batches) == len({t.session_id for t in corpus.turns})
        # The same words, speaker and event time the baselines index.
        docs = [d for ds in documents(corpus).values() for d in ds]
        assert sorted((d.turn_id, d.text, d.speaker, d.time) for d in docs) == sorted(
            (t.turn_id, m.text, m.speaker, m.occurred_at)
            for t, m in zip(corpus.turns, sent, strict=True)
        )
        # A question is the probe's text alone, asked as of the probe's time, top 10, no floor.
        p = corpus.probes[0]
        assert pd.ranker("report")(p) == []
        assert client.recalls == [
            (p.namespace, p.text, {"top_k": 10, "as_of": p.as_of, "min_score": 0.0})
        ]
    finally:
        pd.close()
