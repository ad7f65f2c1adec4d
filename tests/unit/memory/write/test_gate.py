"""The write gate's importance rules."""

from __future__ import annotations

import msgspec

from server.core.memory.model import WriteHints
from server.core.memory.write.gate import ImportanceGate
from server.core.settings import WritePolicySettings

GATE = ImportanceGate(WritePolicySettings())
NO = WriteHints()


def test_plain_content_gets_the_base_importance_and_is_stored() -> None:
    v = GATE.judge("The staging cluster runs in eu-west-1", None, NO)
    assert (v.importance, v.accepted) == (3, True)


def test_identity_payment_and_policy_keywords_raise_importance() -> None:
    assert GATE.judge("My name is Alice Chen", None, NO).importance == 4
    assert GATE.judge("用户的支付方式是银行卡", None, NO).importance == 4
    both = GATE.judge("Company policy: refund invoices within 30 days", None, NO)
    assert both.importance == 5 and "payment" in both.reason and "policy" in both.reason


def test_small_talk_is_rejected_with_a_reason() -> None:
    for text in ("hello!", "谢谢", "ok thanks", "哈哈 好的"):
        v = GATE.judge(text, None, NO)
        assert not v.accepted, text
        assert "small talk" in v.reason and "min_importance 3" in v.reason


def test_long_text_containing_a_greeting_is_not_small_talk() -> None:
    v = GATE.judge(
        "hello, the deploy script needs the --force flag on the build server " * 2, None, NO
    )
    assert v.accepted


def test_a_short_report_after_a_greeting_is_kept_in_either_language() -> None:
    """Small talk is measured by what is left besides it, a CJK character counting as two:
    a short Chinese report after a greeting is as long as its English translation."""
    for text in (
        "你好啊，今天我去了公园散步",
        "Hi, today I went for a walk in the park",
        "谢谢，我的航班改到了周五",
    ):
        assert GATE.judge(text, None, NO).accepted, text
    for text in ("你好啊！", "好的，谢谢你", "hi there!"):
        assert not GATE.judge(text, None, NO).accepted, text


def test_client_importance_is_respected_within_bounds() -> None:
    assert GATE.judge("hello", 5, NO).importance == 5
    assert not GATE.judge("My name is Bob", 1, NO).accepted
    narrow = ImportanceGate(WritePolicySettings(client_importance_min=2, client_importance_max=4))
    v = narrow.judge("x", 5, NO)
    assert v.importance == 4 and "clamped" in v.reason


def test_remember_flag_and_error_then_fix_mark_value() -> None:
    assert GATE.judge("hi", None, WriteHints(remember=True)).importance == 4
    assert GATE.judge("ok", None, WriteHints(error_resolved=True)).accepted
    v = GATE.judge("pip failed with error E501; fixed by pinning numpy", None, NO)
    assert v.importance >= 4 and "error then fix" in v.reason
    assert GATE.judge("安装报错, 后来修复了: 换成国内镜像", None, NO).importance >= 4


def test_rules_come_from_the_config() -> None:
    strict = ImportanceGate(msgspec.structs.replace(WritePolicySettings(), min_importance=4))
    assert not strict.judge("The staging cluster runs in eu-west-1", None, NO).accepted
    custom = ImportanceGate(WritePolicySettings(boost_keywords={"vip": ("gold member",)}))
    assert custom.judge("she is a gold member", None, NO).importance == 4
    assert custom.judge("my name is Carol", None, NO).importance == 3
