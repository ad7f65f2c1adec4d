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
        ("我的生日是哪天", {"about_me"}),
        ("What did you just say about the deploy?", set()),
        ("As I said earlier, the deploy failed", {"just_said"}),
        ("刚才说的那个地址", {"just_said"}),
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
    assert set(fx.extract(text, None, False).flags) == flags


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
    flags = dict(zip(FLAGS, x[128 : 128 + len(FLAGS)].tolist(), strict=True))
    assert flags["quantity"] == 1.0 and flags["identifier"] == 1.0 and flags["time"] == 0.0
    assert x[-1] == 1.0  # an image query
