"""The word lists of supersession without ids (server/core/memory/write/supersede.py): whom a
statement is about, what says it adds, and that a liking adds unless it names a favourite. Pure
functions: no engine, no encoder (the verdict is given its cosine)."""

from __future__ import annotations

import pytest

from server.adapters.analysis import Analyzer
from server.core.memory.model import Kind, Record
from server.core.memory.write.supersede import SupersedePolicy, both_hold
from server.core.settings import SupersedeSettings


@pytest.mark.parametrize(
    ("newer", "older"),
    [
        # Two children, two sisters: the name after the relation tells them apart.
        ("My son Noah just started kindergarten", "My son Leo goes to Brookside Elementary"),
        ("My sister Grace studies architecture", "My sister Hannah is a pilot"),
        ("我爸的生日是3月12号", "我妈生日是农历八月十五"),
        # The newer says it adds.
        ("I also have a Discover card", "I have an Amex card"),
        ("我另一个邮箱是QQ邮箱", "我的邮箱是163邮箱"),
        # Two codes are two things (tickets, orders), not two values of one.
        ("Ticket E1240 is about the billing page", "Ticket E1234 is about the login page"),
        ("订单ORD-48214明天发货", "订单ORD-48213今天发货"),
        # A number after a word that names things by number is a code too.
        ("Order 48214 shipped on Friday", "Order 48213 shipped on Monday"),
        ("工单号77已经关闭", "工单号76还在处理"),
    ],
)
def test_statements_that_both_hold(newer: str, older: str) -> None:
    assert both_hold(newer, older)


@pytest.mark.parametrize(
    ("newer", "older"),
    [
        # "都" (always) and "又" (again) restate a value; they do not add one.
        ("快递都寄到楼下的菜鸟驿站", "我的快递一般放在小区门口的丰巢柜"),
        ("我又换了手机，现在用小米14", "我用的手机是华为Mate 40"),
        # The dog of "搜狗" (an input method) is nobody; "爸妈" and "父母" are one holder.
        ("我的输入法是微信输入法", "我打字用搜狗输入法"),
        ("爸妈搬到广州跟我们一起住了", "我父母住在老家洛阳"),
        # A pet's food brand is no name of the pet.
        ("The cat eats Royal Canin kibble", "We feed the cat Purina dry food"),
        ("My wife is a nurse practitioner now", "My wife works as a nurse"),
        # A weekday, a month or a number is a value, not a code.
        ("The team meeting moved to Tuesday", "The team meeting is on Monday"),
        ("周会改到周三下午两点", "部门周会定在周一上午十点"),
        ("Rent went up to 2100", "The rent is 1800 a month"),
    ],
)
def test_statements_that_may_be_two_values_of_one_thing(newer: str, older: str) -> None:
    assert both_hold(newer, older) == ""


def _rec(text: str, at: float) -> Record:
    return Record(
        memory_id=f"m{at:g}", namespace="ns", kind=Kind.PREFERENCE, text=text, speaker="user",
        created_at=at,
    )  # fmt: skip


@pytest.fixture(scope="module")
def policy() -> SupersedePolicy:
    return SupersedePolicy(SupersedeSettings(), Analyzer())


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("I like hiking in the hills", "I like swimming in the hills"),
        ("我喜欢秋天的桂花香", "我喜欢秋天的红叶"),
        ("I dislike the texture of cotton balls", "I dislike the texture of velvet"),
    ],
)
def test_a_new_liking_does_not_replace_an_old_one(
    policy: SupersedePolicy, older: str, newer: str
) -> None:
    v = policy.verdict(_rec(newer, 2.0), _rec(older, 1.0), cosine=0.9)
    assert not v.supersede, v


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        (
            "My favourite sport is hiking in the hills",
            "My favourite sport is swimming in the hills",
        ),
        ("我最喜欢的季节是秋天的早晨", "我最喜欢的季节是春天的早晨"),
        ("Our team chats on Microsoft Teams", "Our team chats on Slack"),
    ],
)
def test_a_favourite_that_changes_is_a_new_value(
    policy: SupersedePolicy, older: str, newer: str
) -> None:
    v = policy.verdict(_rec(newer, 2.0), _rec(older, 1.0), cosine=0.9)
    assert v.supersede and v.code.startswith("value:"), v
