"""The alignment check of a caption against the text read from its image (seed 001 §5.2;
server/core/media/align.py): paraphrases agree in English and Chinese, another error code
disagrees, a generic caption is no contradiction, conflicting numbers lower the score."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.core.media.align import NEUTRAL, agreement, check
from server.core.settings import AlignmentSettings

MIN = AlignmentSettings().min_score  # 0.15

DIALOG_EN = """Payment failed
Error E1234
Your card was declined by the issuing bank.
Please try another card or contact support.
Order ORD-48213 · Amount $1,200.00
OK   Cancel
12:30"""

DIALOG_ZH = """支付失败
错误代码：E1234
您的银行卡余额不足，请更换银行卡后重试
订单号 ORD-48213  金额 ¥1,200.00
确定  取消"""

NOTES = """Q3 planning meeting notes
Budget review: marketing spend up 12%, hiring freeze until October
Action items: Alice drafts the roadmap, Bob books the offsite"""


@pytest.mark.parametrize(
    ("caption", "ocr"),
    [
        ("the payment was declined with error E1234", DIALOG_EN),
        ("card rejected by the bank, code E1234", DIALOG_EN),  # other words, one lexicon concept
        ("a red error dialog from the payment app", DIALOG_EN),  # no code, the gist
        ("refund of $1200 for order ORD-48213 failed", DIALOG_EN),  # an amount written another way
        ("这张截图显示支付失败，错误码E1234", DIALOG_ZH),
        ("余额不足导致付款失败", DIALOG_ZH),  # 付款 for 支付: the lexicon
        ("订单ORD-48213支付失败", DIALOG_ZH),
        ("payment failed because the balance was insufficient", DIALOG_ZH),  # across languages
        ("notes from the Q3 planning meeting about the budget", NOTES),
    ],
)
def test_a_caption_that_paraphrases_the_image_agrees(caption: str, ocr: str) -> None:
    v = check(caption, ocr, None, MIN)
    assert v.ok, v
    assert v.score >= 0.3
    assert v.why.startswith("caption and image text agree")


@pytest.mark.parametrize(
    ("caption", "ocr", "named", "shown"),
    [
        ("payment failed with error E5678", DIALOG_EN, "E5678", "E1234"),
        ("错误码E5678，支付失败", DIALOG_ZH, "E5678", "E1234"),
        ("order ORD-48299 payment failed", DIALOG_EN, "ORD-48299", "ORD-48213"),
    ],
)
def test_a_caption_about_another_code_disagrees(
    caption: str, ocr: str, named: str, shown: str
) -> None:
    v = check(caption, ocr, None, MIN)
    assert not v.ok
    assert v.why.startswith(f"caption and image text disagree ({v.score:.2f} < {MIN})")
    assert f"the caption names {named} where the image shows {shown}" in v.why
    # The text encoder cannot tell the codes apart; its cosine does not rescue the caption.
    assert not check(caption, ocr, 0.95, MIN).ok


def test_a_caption_about_something_else_disagrees_and_says_what() -> None:
    v = check("a cute cat sleeping on a sofa", DIALOG_EN, None, MIN)
    assert not v.ok
    assert "the image's text does not say 'cute', 'cat', 'sleeping'" in v.why
    z = check("一只猫在沙发上睡觉", DIALOG_ZH, None, MIN)
    assert not z.ok and "一只猫在沙发上睡觉" in z.why


@pytest.mark.parametrize(
    "caption", ["screenshot", "a screenshot", "截图", "这张图片", "Screen shot."]
)
def test_a_generic_caption_is_no_contradiction(caption: str) -> None:
    # Design: words that name the medium are not features, so a caption of only those claims
    # nothing; its score is NEUTRAL (above the default threshold), and check passes it at any
    # threshold, with the reason.
    assert agreement(caption, DIALOG_EN, None) == NEUTRAL >= MIN
    v = check(caption, DIALOG_EN + "\n" + NOTES * 5, None, 0.9)
    assert v.ok and v.why.startswith("nothing to compare")


def test_an_empty_side_is_nothing_to_compare() -> None:
    assert check("", DIALOG_EN, None, 0.9) == check("  ", DIALOG_EN, None, 0.9)
    assert check("", DIALOG_EN, None, 0.9).ok
    assert check("payment failed with error E5678", "", None, 0.9).ok
    assert check("payment failed with error E5678", "\n \n", None, 0.9).why == (
        "nothing to compare: no text was read in the image"
    )


def test_conflicting_numbers_and_codes_lower_the_score() -> None:
    right = agreement("order ORD-48213, $1200, error E1234", DIALOG_EN, None)
    one_off = agreement("order ORD-48213, $1200, error E1239", DIALOG_EN, None)
    two_off = agreement("order ORD-48213, $1500, error E1239", DIALOG_EN, None)
    all_off = agreement("order ORD-40000, $1500, error E1239", DIALOG_EN, None)
    assert right > one_off > two_off > all_off
    # One wrong code sinks a caption that gets the rest right: it misstates the image.
    assert right >= 0.9 and one_off < MIN
    # A code the image does not show, while it shows none of that shape, is unsupported, not a
    # conflict: it lowers the score less than a conflicting one.
    unsupported = agreement("payment failed, ticket T-7781", DIALOG_EN, None)
    conflicting = agreement("payment failed, order ORD-77810", DIALOG_EN, None)
    assert unsupported > conflicting
    assert check("payment failed, ticket T-7781", DIALOG_EN, None, MIN).ok


def test_full_width_digits_and_thousands_separators_are_one_number() -> None:
    assert check("金额１２００元，订单ORD－48213", DIALOG_ZH, None, MIN).ok
    assert agreement("amount 1200", "Amount 1,200", None) == agreement(
        "amount 1,200", "Amount 1,200", None
    )


def test_ocr_confusions_of_o_and_l_are_read_as_digits() -> None:
    ocr = "Payment failed\nError EI2O4\nYour card was declined by the bank"
    assert check("error E1204: payment failed", ocr, None, MIN).ok


def test_the_cosine_rescues_a_paraphrase_in_other_words() -> None:
    caption = "the purchase could not go through"
    ocr = (
        "Transaction unsuccessful. Your bank did not authorise this charge. "
        "Try again later, or call your bank's support line."
    )
    assert not check(caption, ocr, None, MIN).ok
    assert not check(caption, ocr, 0.10, MIN).ok  # below the encoder's floor: no help
    v = check(caption, ocr, 0.55, MIN)
    assert v.ok and v.score == pytest.approx((0.55 - 0.15) / (0.6 - 0.15))
    # The encoder's own floor and ceiling, when the caller passes them.
    assert agreement(caption, ocr, 0.55, floor=0.3, ceiling=0.8) == pytest.approx(0.5)


def test_a_low_cosine_does_not_sink_a_lexical_match() -> None:
    caption = "the payment was declined with error E1234"
    assert agreement(caption, DIALOG_EN, 0.0) == agreement(caption, DIALOG_EN, None)


def test_thin_image_text_weighs_little_either_way() -> None:
    # A photo of a cat under a status bar: "12:30 4G 85%" says nothing about the caption.
    assert check("a cute cat on a sofa", "12:30 4G 85%", None, MIN).ok
    assert not check("a cute cat on a sofa", DIALOG_EN, None, MIN).ok


_WORDS = st.sampled_from(
    [
        "payment",
        "failed",
        "E1234",
        "E5678",
        "1,200",
        "declined",
        "支付",
        "失败",
        "截图",
        "cat",
        "12:30",
    ]
)


@given(
    st.lists(_WORDS, max_size=8).map(" ".join),
    st.lists(_WORDS, max_size=12).map(" ".join),
    st.none() | st.floats(-1.0, 1.0),
)
def test_the_score_is_in_the_unit_interval(caption: str, ocr: str, cosine: float | None) -> None:
    s = agreement(caption, ocr, cosine)
    assert 0.0 <= s <= 1.0
    v = check(caption, ocr, cosine, MIN)
    assert v.ok == (v.score >= MIN or v.why.startswith("nothing to compare"))


@given(st.text(max_size=200), st.text(max_size=200))
def test_any_texts_are_scored(caption: str, ocr: str) -> None:
    assert 0.0 <= agreement(caption, ocr, None) <= 1.0
