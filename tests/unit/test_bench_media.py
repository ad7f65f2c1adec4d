"""`python -m bench media`: recall@k counts only the first k, per language; the trivial row is the
newest items; an answer is read up to width, case and blanks; the afternoon baselines index the
distractors and the text pocketd read (not the truth) and find an item by its words in English
(stemmed) and Chinese (jieba); a hit is mapped to its item through its group; the drawn
pictures' recall is a share of the top 5; the set's halves are disjoint and every answer is in
its item; the report half refuses the flags that choose settings. No server and no model."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import media
from bench.media_data import HALVES, LANGS, Doc, Item, load
from bench.media_pocketd import Namespace
from bench.media_score import Afternoon, caption_recall, figures, newest, read, recall_at


def _item(iid: str, lang: str = "en", question: str = "") -> Item:
    return Item(iid, lang, "tune", "image", f"truth of {iid}", question, "x")


def test_recall_at_counts_only_the_first_k() -> None:
    rankings = {"q1": ["a", "b"], "q2": ["c", "d", "e", "f", "g", "b2"], "q3": []}
    gold = {"q1": "b", "q2": "b2", "q3": "c", "q4": "z"}  # q4 has no ranking: missed
    assert recall_at(rankings, gold, 1) == 0.0
    assert recall_at(rankings, gold, 2) == 0.25
    assert recall_at(rankings, gold, 5) == 0.25  # b2 is sixth
    assert recall_at(rankings, gold, 6) == 0.5
    assert recall_at(rankings, {}, 5) != recall_at(rankings, {}, 5)  # nan: nothing asked


@given(
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8, unique=True), min_size=1),
    st.integers(1, 8),
)
def test_recall_at_grows_with_k(rankings: list[list[str]], k: int) -> None:
    ranked = {str(i): r for i, r in enumerate(rankings)}
    gold = {str(i): "c" for i in range(len(rankings))}
    a, b = recall_at(ranked, gold, k), recall_at(ranked, gold, k + 1)
    assert 0.0 <= a <= b <= 1.0
    assert recall_at(ranked, gold, 8) == sum("c" in r for r in rankings) / len(rankings)


def test_figures_are_per_language() -> None:
    items = [_item("e1"), _item("e2"), _item("z1", "zh")]
    rankings = {"e1": ["e1"], "e2": ["x", "x", "x", "x", "x", "e2"], "z1": ["e1", "z1"]}
    f = figures(items, rankings)
    assert f["en"] == {"n": 2, "r@1": 0.5, "r@5": 0.5}
    assert f["zh"] == {"n": 1, "r@1": 0.0, "r@5": 1.0}


def test_newest_is_the_last_sent_newest_first() -> None:
    assert newest(["a", "b", "c", "d", "e", "f", "g"]) == ["g", "f", "e", "d", "c"]
    assert newest(["a", "b"]) == ["b", "a"]


def test_an_answer_is_read_up_to_width_case_and_blanks() -> None:
    assert read("2025-01-08 14:22", "到账时间：2025-01-0814:22")
    assert read("TK20250112-3347", "退款编号：ＴＫ20250112－3347")  # full-width forms
    assert read("0x80070005", "Error code: 0X80070005\nAccess is denied.")
    assert not read("0x80070005", "Error code: 0x8007005")  # a digit lost is not read
    assert not read("¥218.00", "支付金额：¥21800")


DISTRACTORS = (
    Doc("d-0", "en", "I prefer window seats on short flights."),
    Doc("d-1", "zh", "周三晚上要陪孩子写作业。"),
    Doc("d-2", "en", "My refund for the boots is still pending at the bank."),
)
READ = {  # what OCR made of each screenshot (the truth may say more)
    "en-1": "Northwind Outfitters\nRefund processed\nReturn ID: NW-R-20931\nRefund amount: $138.40",
    "zh-1": "退款详情\n退款已拒绝\n商品：极地熊男款长款羽绒服\n退款编号：TK20250112-3347",
    "en-2": "Windows Backup\nBackup did not complete\nError code: 0x80070005",
}


def test_the_afternoon_indexes_the_distractors_and_the_text_pocketd_read() -> None:
    a = Afternoon(DISTRACTORS, READ, encoder=None)
    assert a.bm25.ids == ["d-0", "d-1", "d-2", "en-1", "zh-1", "en-2"]
    assert set(a.rankers()) == {"bm25"}  # no encoder: no hybrid row
    bm25 = a.rankers()["bm25"]
    # stemmed: "refunded" finds "Refund processed"; the Return ID only that screenshot holds
    assert bm25(_item("en-1", question="How much was refunded for return NW-R-20931?"))[0] == "en-1"
    # jieba: 羽绒服 and 退款编号 are words of the read text
    assert bm25(_item("zh-1", "zh", "羽绒服那一单的退款编号是多少？"))[0] == "zh-1"
    # a word the read text lacks finds nothing of it: the truth is not indexed
    assert "en-2" not in bm25(_item("en-2", question="Which external drive was it, the Passport?"))


def test_a_hit_is_mapped_to_its_item_through_its_group() -> None:
    def hit(mid: str, members: tuple[str, ...] = ()) -> Any:
        return SimpleNamespace(memory=SimpleNamespace(memory_id=mid), group_member_ids=members)

    hits = [hit("m9"), hit("m2.ocr", ("m2",)), hit("m1")]
    client = SimpleNamespace(recall=lambda *a, **k: SimpleNamespace(hits=hits))
    ns = Namespace(client, "n")  # type: ignore[arg-type]
    ns.owner = {"m1": "en-1", "m2": "zh-1"}
    assert ns.rank([_item("en-1", question="q")]) == {"en-1": ["?", "zh-1", "en-1"]}


def test_caption_recall_is_the_share_of_the_top_5_showing_it() -> None:
    rankings = {
        "a red circle": [
            "a red circle",
            "a red circle",
            "a red square",
            "a red circle",
            "x",
            "a red circle",
        ],
        "the digit 7": ["the digit 1", "the digit 7"],
    }
    assert caption_recall(rankings, {"a red circle": 5, "the digit 7": 5}) == pytest.approx(
        (3 / 5 + 1 / 5) / 2
    )
    assert caption_recall(rankings, {"the digit 7": 2}) == 0.5  # of two pictures, one found


def test_the_set_halves_are_disjoint_and_every_answer_is_in_its_item() -> None:
    s = load()
    for items in (s.screenshots, s.notes):
        for h in HALVES:
            assert {i.lang for i in items if i.half == h} == set(LANGS)
        tune = {i.question for i in items if i.half == "tune"}
        assert tune and not tune & {i.question for i in items if i.half == "report"}
        for i in items:
            assert read(i.answer, i.truth), i.id
    assert sum(i.half == "report" and i.lang == "zh" for i in s.screenshots) == 40
    assert len({d.id for d in s.distractors}) == len(s.distractors) == 300
    quick = s.half("tune").cut(per_lang=2, notes_per_lang=1, distractors_per_lang=3)
    assert [i.lang for i in quick.screenshots] == ["en", "en", "zh", "zh"]
    assert len(quick.notes) == 2 and len(quick.distractors) == 6


@pytest.mark.parametrize("flags", [["--set", "media.ocr.min_score=0.4"], ["--misses"]])
def test_the_report_half_refuses_the_flags_that_choose_settings(flags: list[str]) -> None:
    with pytest.raises(SystemExit):
        media.parse(["--half", "report", *flags])
    assert media.parse(["--half", "tune", *flags]).half == "tune"


def test_parts_are_checked() -> None:
    with pytest.raises(SystemExit):
        media.parse(["--parts", "read,ocr"])
    ns = media.parse(["--half", "tune", "--parts", "read", "--quick"])
    assert ns.parts == ["read"] and ns.scale == 2_000
