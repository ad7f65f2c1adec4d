"""The quality benchmark's generator, tokeniser, MemoryBank loader and scoring, which issue
figures rest on. Fast: no server, no encoder."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.dialogs import HALVES, TEMPLATES, TYPES, generate
from bench.memorybank import load, load_language, turn_id
from bench.quality_data import Probe, from_dialogs, pooled, score
from bench.textproc import add_words, tokenize


def test_the_generator_is_deterministic_and_its_evidence_exists() -> None:
    a, b = generate(1, conversations=4, sessions=6), generate(1, conversations=4, sessions=6)
    assert a == b
    assert generate(2, conversations=4, sessions=6) != a
    turns = {t.turn_id: t for t in a.turns}
    assert len(turns) == len(a.turns)
    assert set(Counter(q.kind for q in a.questions)) == set(TYPES)
    for q in a.questions:
        assert q.evidence and all(turns[e].namespace == q.namespace for e in q.evidence)
    multi = [q for q in a.questions if q.kind == "multi_hop"]
    assert all(len({turns[e].session_id for e in q.evidence}) >= 2 for q in multi)
    # Both languages, and every conversation has two speakers.
    assert any("是" in t.text for t in a.turns) and any(" the " in t.text for t in a.turns)
    for ns in {t.namespace for t in a.turns}:
        assert len({t.speaker for t in a.turns if t.namespace == ns}) == 2
    # A turn's index is its position in its session; its words carry no speaker prefix.
    for t in a.turns:
        assert t.turn_id.endswith(f"-t{t.index:02d}")
        assert not t.text.startswith(f"{t.speaker}:")


def test_adversarial_evidence_has_a_look_alike_of_the_other_speaker() -> None:
    d = generate(3, conversations=2, sessions=6)
    turns = {t.turn_id: t for t in d.turns}
    for q in (q for q in d.questions if q.kind == "adversarial"):
        ev = turns[q.evidence[0]]
        twins = [t for t in d.turns if t.namespace == ev.namespace and t.text == ev.text]
        # The same words, said by both speakers: only the name tells evidence from trap.
        assert any(t.speaker != ev.speaker for t in twins), q


def test_every_type_has_four_templates_with_two_paraphrases_in_each_language() -> None:
    for kind in TYPES:
        ts = [t for t in TEMPLATES if t.kind == kind]
        assert len(ts) >= 4, kind
        assert {t.half for t in ts} == set(HALVES), kind
        for t in ts:
            assert len(t.en) >= 2 and len(t.zh) >= 2, t.id
            assert len(set(t.en)) == len(t.en) and len(set(t.zh)) == len(t.zh), t.id
    # Every fact is asked in both halves.
    for kind, fact in {(t.kind, t.fact) for t in TEMPLATES}:
        assert {t.half for t in TEMPLATES if (t.kind, t.fact) == (kind, fact)} == set(HALVES)


def test_the_template_split_is_disjoint_and_deterministic() -> None:
    assert len({t.id for t in TEMPLATES}) == len(TEMPLATES)
    halves = {t.id: t.half for t in TEMPLATES}
    assert all(halves[t.id] == HALVES[t.index % 2] for t in TEMPLATES)
    tune = {f for t in TEMPLATES if t.half == "tune" for f in (*t.en, *t.zh)}
    report = {f for t in TEMPLATES if t.half == "report" for f in (*t.en, *t.zh)}
    assert tune and report and not tune & report  # no wording is in both halves
    d = generate(1, conversations=4, sessions=6)
    assert [(q.template, q.half) for q in d.questions] == [
        (q.template, q.half) for q in generate(1, conversations=4, sessions=6).questions
    ]
    for q in d.questions:
        assert halves[q.template] == q.half
        assert q.template.startswith(q.kind + "/")
    count = Counter((q.kind, q.half) for q in d.questions)
    assert all(count[(k, "tune")] == count[(k, "report")] > 0 for k in TYPES)


def test_questions_do_not_always_carry_the_evidence_words() -> None:
    d = generate(1, conversations=6, sessions=6)
    turns = {t.turn_id: t for t in d.turns}
    names = {w for t in d.turns for w in tokenize(t.speaker)}
    paraphrased = 0
    for q in d.questions:
        asked = set(tokenize(q.text)) - names
        said = {w for e in q.evidence for w in tokenize(turns[e].text)}
        paraphrased += not asked & said  # no content word in common with the evidence
    assert paraphrased > len(d.questions) // 5
    # The facts are told in several phrasings.
    moves = {t.text.split(" ")[0] for t in d.turns if "relocated" in t.text or "settled" in t.text}
    assert len(moves) >= 2


def test_the_tokeniser_stems_drops_stopwords_and_segments_chinese() -> None:
    assert tokenize("running") == ["run"]
    assert tokenize("The cities where I was running") == ["citi", "run"]
    assert tokenize("What did I do?") == []  # all stopwords
    assert tokenize("Order ORD-48213 failed") == ["order", "ord", "48213", "fail"]
    zh = tokenize("用户只使用安卓手机")
    assert "用户" in zh and "安卓" in zh and "手机" in zh  # words, not single characters
    assert sum(len(w) > 1 for w in zh) >= 3
    add_words(["阿强"])  # a speaker's name is taught to jieba: one word, not two characters
    assert tokenize("阿强靠什么谋生？")[:1] == ["阿强"]
    mixed = tokenize("我的订单ORD-1买的是一张升降桌")
    assert "订单" in mixed and "ord" in mixed and "的" not in mixed and "我" not in mixed


def _fixture(tmp: Path) -> Path:
    bank = {
        " Ann ": {
            "name": "Ann",
            "history": {
                "2023-04-27": [
                    {"query": "Hi, I am Ann.", "response": "Hello Ann."},
                    {"query": "I love jazz.", "response": "Jazz is great."},
                ],
                "2023-04-28": [{"query": "I adopted a cat.", "response": "Lovely!"}],
            },
        },
        "Bo": {
            "name": "Bo",
            "history": {"2023-04-27": [{"query": "I am Bo.", "response": "Hi Bo."}]},
        },
    }
    questions = [{"Ann": ["What music do I like?", "What pet did I adopt?", "Unanswerable?"]}]
    labels = {
        "format": 1,
        "languages": {
            "en": {
                "Ann": [
                    {"q": 0, "evidence": [["2023-04-27", 1]]},
                    {"q": 1, "evidence": [["2023-04-28", 0], ["2023-04-27", 1]]},
                    {"q": 2, "evidence": []},
                ]
            },
            "cn": {},
        },
    }
    for lang in ("en", "cn"):
        (tmp / lang).mkdir()
        (tmp / lang / f"memory_bank_{lang}.json").write_text(json.dumps(bank))
        lines = "\n".join(json.dumps(q) for q in questions) + "\n"
        (tmp / lang / f"probing_questions_{lang}.jsonl").write_text(lines)
    path = tmp / "labels.json"
    path.write_text(json.dumps(labels))
    return path


def test_the_memorybank_loader_maps_labels_to_turns(tmp_path: Path) -> None:
    bank = load(tmp_path, _fixture(tmp_path))
    assert set(bank.corpora) == {"zh", "en"}
    en = bank.corpora["en"]
    assert bank.unlabelled == {"zh": 0, "en": 1}
    assert len(en.turns) == 2 * 4  # two turns an exchange
    ann = [t for t in en.turns if t.namespace == "mb-en-00"]
    assert [t.speaker for t in ann] == ["Ann", "AI"] * 3
    day1 = [t for t in ann if t.session_id == "mb-en-00-2023-04-27"]
    assert [t.index for t in day1] == [0, 1, 2, 3]
    times = [t.time for t in ann]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert day1[0].time == 1_682_596_800.0  # 2023-04-27T12:00:00Z
    assert {t.text for t in ann} >= {"I love jazz.", "Jazz is great."}
    by_id = {t.turn_id: t for t in en.turns}
    music, pet = en.probes
    assert music.text == "What music do I like?" and music.namespace == "mb-en-00"
    assert music.evidence == (
        (turn_id("mb-en-00", "2023-04-27", 1, "q"), turn_id("mb-en-00", "2023-04-27", 1, "r")),
    )
    assert [by_id[t].text for t in music.evidence[0]] == ["I love jazz.", "Jazz is great."]
    assert len(pet.evidence) == 2
    assert pet.as_of == 1_682_596_800.0 + 2 * 86_400.0  # noon, the day after the last day
    assert bank.corpora["zh"].probes == []


def test_a_label_naming_a_missing_exchange_is_an_error(tmp_path: Path) -> None:
    bank = {"Ann": {"name": "Ann", "history": {"2023-04-27": [{"query": "q", "response": "r"}]}}}
    labels = {"Ann": [{"q": 0, "evidence": [["2023-04-27", 3]]}]}
    try:
        load_language(bank, {"Ann": ["?"]}, labels, "en")
    except ValueError as exc:
        assert "2023-04-27[3]" in str(exc)
    else:
        raise AssertionError("a bad label was accepted")


def test_recall_at_k_counts_the_share_of_evidence_groups_found() -> None:
    a = ("a1", "a2")  # one exchange: either turn finds it
    probes = [
        Probe("ns", "x", "q1", (a, ("b",)), 0.0),
        Probe("ns", "x", "q2", (("c",),), 0.0),
        Probe("ns", "y", "q3", (("d",),), 0.0),
    ]
    ranked = {
        "q1": ["z", "a2", "z2", "z3", "z4", "b"],  # a at 2, b at 6
        "q2": [f"n{i}" for i in range(9)] + ["c"],  # c at 10
        "q3": [],
    }
    figs = score(probes, lambda p: ranked[p.text], lambda p: p.kind)
    assert figs["x"] == {"r5": (0.5 + 0.0) / 2, "r10": (1.0 + 1.0) / 2, "questions": 2}
    assert figs["y"] == {"r5": 0.0, "r10": 0.0, "questions": 1}
    assert pooled(figs, ["x", "y"]) == {"r5": 0.25 * 2 / 3, "r10": 2 / 3, "questions": 3}
    assert pooled(figs, ["x", "y"], macro=True)["r10"] == 0.5
    # A turn listed twice, or a turn that is no evidence, adds nothing.
    twice = score(probes[:1], lambda p: ["a1", "a2", "a1"], lambda p: "all")
    assert twice["all"]["r5"] == 0.5


def test_dialog_questions_are_asked_after_their_conversation() -> None:
    d = generate(1, conversations=2, sessions=6)
    c = from_dialogs(d)
    last = {ns: max(t.time for t in d.turns if t.namespace == ns) for ns in {"dlg1-00", "dlg1-01"}}
    assert all(p.as_of > last[p.namespace] for p in c.probes)
    assert all(len(g) == 1 for p in c.probes for g in p.evidence)
    perfect = score(c.probes, lambda p: [g[0] for g in p.evidence], lambda p: p.kind)
    assert all(m["r5"] == 1.0 for m in perfect.values())  # at most 3 evidence turns each
