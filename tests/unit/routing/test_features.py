"""Route features (server/core/routing/features.py): lexical flags in English and Chinese, the
vector prefix, and the model input they make."""

from __future__ import annotations

import numpy as np
import pytest

from server.core.routing.features import FLAGS, FeatureExtractor
from server.core.settings import RouterSettings


@pytest.fixture
def fx() -> FeatureExtractor:
    return FeatureExtractor(RouterSettings(), lambda t: t.lower().split())


@pytest.mark.parametrize(
    ("text", "flags"),
    [
        ("What is my favourite colour?", {"about_me"}),
        ("What is the user's preferred seat?", {"about_me"}),  # the third person
        ("用户的妹妹叫什么", {"about_me"}),
        ("我的名字是什么", {"about_me"}),
        # A bare "my" / "我的" asks for the history as often as for the profile.
        ("Where did my trip to Kyoto start?", set()),
        ("我的那次旅行住在哪家酒店", set()),
        ("What did you just say about the deploy?", set()),
        ("As I just said, the deploy failed", {"just_said"}),
        ("In this conversation, which hotel did we pick?", {"just_said"}),
        ("刚才说的那个地址", {"just_said"}),
        # "earlier", "before", "I said" point back to past conversations as often.
        ("From our earlier conversations, what did I say about the deploy?", set()),
        ("Before the move, which movers did I say I liked?", set()),
        ("我说过我喜欢哪家餐厅吗", {"about_me"}),
        ("How many tickets did we close last week?", {"quantity", "time"}),
        ("上周一共多少张工单", {"quantity", "time"}),
        ("Is the new plan better than the old one?", {"comparison"}),
        ("Error E1234 again", {"identifier"}),
        ("Which medication am I allergic to?", {"safety"}),
        ("我对什么药过敏", {"safety"}),
        ("Weather in Chicago", set()),  # "ago" is a whole word, not a substring
    ],
)
def test_lexical_flags(fx: FeatureExtractor, text: str, flags: set[str]) -> None:
    assert set(fx.extract(text, None, False).flags) - set(FORM) == flags


FORM = ("summary", "detail", "past", "current")


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("Give me the gist of the dentist appointment", {"summary"}),
        ("总结一下我们以前关于装修的讨论", {"summary", "past"}),
        ("What exactly was the contractor's quote?", {"detail"}),
        ("那阵子我说的牙医叫什么名字", {"detail", "past"}),
        ("A while back I mentioned the vet", {"past"}),
        ("Which hotel have we settled on?", {"detail", "current"}),
        ("我刚说的房租", {"current"}),
        ("Thanks, that's all", set()),
        # False positives the review found: a bare "once", "just", "before" or "刚".
        ("Tell me the hotel name once more.", set()),
        ("Can you just give me an overview of our chats?", {"summary"}),
        ("I need it before Friday.", set()),
        ("我们刚开始聊京都的时候说了什么", set()),
    ],
)
def test_the_questions_form(fx: FeatureExtractor, text: str, form: set[str]) -> None:
    assert set(fx.extract(text, None, False).flags) & set(FORM) == form


def test_the_safety_cues_that_fired_are_named(fx: FeatureExtractor) -> None:
    f = fx.extract("my credit card and my passport", None, False)
    assert f.safety == ("credit card", "passport")


def test_the_prefix_is_the_renormalised_head_of_the_vector(fx: FeatureExtractor) -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal(384).astype(np.float32)
    f = fx.extract("", v, False)
    assert f.prefix.shape == (128,)
    assert np.linalg.norm(f.prefix) == pytest.approx(1.0, rel=1e-5)
    assert np.allclose(f.prefix * np.linalg.norm(v[:128]), v[:128], atol=1e-5)
    assert not fx.extract("", None, False).prefix.any()


def test_the_model_input_has_a_fixed_layout(fx: FeatureExtractor) -> None:
    f = fx.extract("how many E1234", np.ones(384, np.float32), True)
    x = f.vector()
    assert x.shape == (128 + len(FLAGS) + 2,) and x.dtype == np.float32
    assert FLAGS[-4:] == FORM
    flags = dict(zip(FLAGS, x[128 : 128 + len(FLAGS)].tolist(), strict=True))
    assert flags["quantity"] == 1.0 and flags["identifier"] == 1.0 and flags["time"] == 0.0
    assert x[-1] == 1.0  # an image query


def test_the_router_reads_the_keyword_analysers_terms_without_stopwords() -> None:
    from server.adapters.analysis import Analyzer

    fx = FeatureExtractor(RouterSettings(), Analyzer())
    terms = fx.extract("What is the name of the hotel that we booked?", None, False).terms
    assert "the" not in terms and "what" not in terms and "of" not in terms
    assert {"name", "hotel"} <= set(terms)
    zh = fx.extract("我们之前订的是哪家酒店", None, False).terms
    assert "酒店" in zh and "的" not in zh and "是" not in zh
