"""Write `server/prompts/difficulty.jsonl`: the labelled prompts the difficulty classifier trains
on (`pocketd models train-difficulty`), in English and Chinese.

Each line is {"text", "tier", "lang", "template"}. The tiers:
- simple: one structured lookup or transformation;
- medium: a few steps, or a tool or two;
- complex: analysis, comparison, planning or design over several sources.
The prompts come from hand-written templates and slot values, shuffled with a fixed seed, so the
file is the same on every run (`python tools/make_difficulty_set.py` rewrites it). The held-out
split is by template, so no held-out prompt is a slot variant of a training one.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "server" / "prompts" / "difficulty.jsonl"

EN = {
    "simple": [
        "What is the status of order {n}?",
        "Where is my package {n}?",
        "Translate '{phrase}' into French.",
        "Convert {n} dollars to euros.",
        "Format this date as ISO 8601: {date}.",
        "How much is the {product} plan per month?",
        "Reset my password for the {product} account.",
        "List my open tickets.",
        "What time does support open on {day}?",
        "Look up the invoice {n}.",
        "Spell-check this sentence: {phrase}.",
        "Give me the tracking number for order {n}.",
    ],
    "medium": [
        "Find my last invoice for {product}, then email it to me.",
        "Check whether order {n} shipped and, if not, open a ticket.",
        "Summarise ticket {n} and suggest a reply to the customer.",
        "My {product} app crashes on start; walk me through fixing it step by step.",
        "Update my shipping address and then confirm the change for order {n}.",
        "Search the docs for how to export data from {product} and explain the steps.",
        "Cancel my {product} subscription and tell me what refund I will get.",
        "Draft an apology email about the delayed order {n} and offer a voucher.",
        "Collect the error logs for {product} from yesterday and tell me what failed.",
        "Book a support call for {day} and send me the invite.",
    ],
    "complex": [
        "Compare the {product} and {product2} contracts and summarise the differences in risk.",
        "Analyse why refunds for {product} rose last quarter and propose three fixes.",
        "Design a migration plan from {product} to {product2} with a rollback strategy.",
        "Evaluate the trade-offs of moving our billing to {product2}, with costs over 3 years.",
        "Find the root cause of the intermittent {product} outage from the last {n} incidents.",
        "Plan a rollout of {product} across {n} regions, with dependencies and risks.",
        "Optimise our support workflow for {product}: analyse ticket data and redesign triage.",
        "Prove that the discount rule for {product} can never make an order cost less than zero.",
        "Review these {n} customer complaints, cluster them, and write a strategy memo.",
        "Refactor the {product} integration to remove duplicate API calls and explain the design.",
    ],
}
ZH = {
    "simple": [
        "查询订单 {n} 的状态。",
        "我的包裹 {n} 到哪里了？",
        "把这句话翻译成英文：{zphrase}。",
        "{product} 套餐每月多少钱？",
        "帮我重置 {product} 账户的密码。",
        "列出我所有未关闭的工单。",
        "把日期 {date} 改成标准格式。",
        "查一下发票 {n}。",
        "客服{zday}几点上班？",
        "给我订单 {n} 的物流单号。",
    ],
    "medium": [
        "先找到我 {product} 的最新发票，然后发到我邮箱。",
        "看看订单 {n} 发货了没有，没有的话帮我开个工单。",
        "总结工单 {n}，再给客户拟一个回复。",
        "我的 {product} 应用一打开就崩溃，请一步一步教我修好。",
        "修改我的收货地址，然后确认订单 {n} 已经更新。",
        "取消我的 {product} 订阅，并告诉我能退多少钱。",
        "就订单 {n} 的延误写一封道歉邮件，并附上一张优惠券。",
        "整理 {product} 昨天的错误日志，告诉我哪里出了问题。",
    ],
    "complex": [
        "比较 {product} 和 {product2} 两份合同，总结风险上的差异。",
        "分析上个季度 {product} 退款增加的原因，并提出三个改进方案。",
        "设计一个从 {product} 迁移到 {product2} 的方案，包括回滚策略。",
        "评估把计费系统迁到 {product2} 的利弊，给出三年的成本对比。",
        "根据最近 {n} 次故障，找出 {product} 间歇性宕机的根本原因。",
        "规划 {product} 在 {n} 个地区的上线，列出依赖和风险。",
        "优化 {product} 的客服流程：分析工单数据并重新设计分流。",
        "审阅这 {n} 条客户投诉，做聚类分析，并写一份策略备忘录。",
    ],
}
SLOTS = {
    "n": ["1042", "88123", "77", "5", "3190", "12"],
    "product": ["Acme Cloud", "PayFlow", "Nimbus", "DeskPro", "ShopLite"],
    "product2": ["Stratus", "BillWise", "Orbit", "CoreLedger"],
    "phrase": ["thank you for waiting", "your order has shipped", "we are sorry"],
    "zphrase": ["感谢您的耐心等待", "您的订单已发货", "非常抱歉"],
    "date": ["03/04/2026", "4 March 2026", "2026.03.04"],
    "day": ["Monday", "Saturday", "public holidays"],
    "zday": ["周一", "周六", "节假日"],
}


def main() -> None:
    rng = random.Random(20261201)
    rows = []
    for lang, table in (("en", EN), ("zh", ZH)):
        for tier, templates in table.items():
            for i, t in enumerate(templates):
                seen: set[str] = set()
                for _ in range(12 if lang == "en" else 11):
                    text = t.format(**{k: rng.choice(v) for k, v in SLOTS.items()})
                    if text not in seen:
                        seen.add(text)
                        row = {"text": text, "tier": tier, "lang": lang}
                        rows.append({**row, "template": f"{lang}-{tier}-{i}"})
    rng.shuffle(rows)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"wrote {len(rows)} prompts to {OUT}")


if __name__ == "__main__":
    main()
