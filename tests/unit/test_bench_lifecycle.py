"""`bench lifecycle`: the figures' arithmetic on known rankings, the world's layout in time, and a
tiny run of both rows (three simulated days over a handmade world, the built-in encoder)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench import lifecycle
from bench.lifecycle_score import Rankings, figures, first, found, holdings, spread_ms, stale
from bench.lifecycle_world import (
    DAY,
    LANGS,
    RELEVANT,
    Probe,
    Sources,
    World,
    build,
    probes,
)
from bench.update_data import Case
from server.adapters.onnx_encoder import OnnxTextEncoder

F = frozenset


def _probe(key: str, group: str, target: str, rival: str = "") -> Probe:
    return Probe(key, "en", group, f"question {key}", target, rival)  # type: ignore[arg-type]


def test_holdings_link_a_summary_to_what_it_stands_for_and_check_its_words() -> None:
    owner = {"m1": "A", "m2": "B"}
    texts = {"A": "Mia has  soccer on Monday.", "B": "I bank with Ally."}
    linked, text = holdings(
        "s9", ("m1", "m2", "m7"), "user: Mia has soccer on Monday. Other news.", owner, texts
    )
    assert linked == {"A", "B"}  # m7 holds no item of the world
    assert text == {"A"}  # B's words are not in the summary
    # a memory holds its own item whatever its words (a merge keeps the newest)
    assert holdings("m2", (), "I moved my checking to Chase.", owner, texts) == (F({"B"}),) * 2
    assert holdings("x", (), "anything", owner, texts) == (F(), F())


def test_first_found_and_stale_on_known_rankings() -> None:
    ranking = [F({"x"}), F({"B"}), F({"A", "C"}), F(), F(), F({"D"})]
    assert first(ranking, "A") == 2 and first(ranking, "Z") is None
    assert found(ranking, "A") and not found(ranking, "D")  # rank 5 is outside the top 5
    assert stale(ranking, "A", "B")  # the old value above the new one
    assert not stale(ranking, "B", "A")
    assert stale(ranking, "Z", "D")  # the new one absent: the old one outranks it
    assert not stale(ranking, "A", "Z")  # no old value at all
    assert stale([F({"A", "B"})], "A", "B")  # the top hit holds the old value too
    assert not stale([F({"A"}), F({"B"})], "A", "B")


def test_figures_on_known_inputs() -> None:
    ps = [
        _probe("p1", "current", "A", "B"),
        _probe("p2", "current", "C", "D"),
        _probe("p3", "current", "E", "F"),
        _probe("p4", "coexist", "G"),
        _probe("p5", "own", "H"),
        _probe("p6", "past", "B"),
    ]
    linked = {
        "p1": [F({"B"}), F({"A"})],  # found at 2, stale
        "p2": [F({"C", "D"})],  # one summary holds both: found, stale (top hit)
        "p3": [F({"x"})] * 5 + [F({"E"})],  # found only at 6: a miss, not stale
        "p4": [F({"G"})],
        "p5": [],
        "p6": [F({"y"}), F({"B"})],
    }
    text = {**linked, "p2": [F({"D"})], "p4": [F()]}  # the summaries lost C's and G's words
    summary = {k: [False] * len(r) for k, r in linked.items()}
    summary["p2"] = [True]  # p2's old value came from a summary, p1's from its own memory
    got = figures(ps, Rankings(linked, text, summary))
    assert got["recall@5"] == pytest.approx(3 / 5)
    assert got["recall@5 text"] == pytest.approx(1 / 5)
    assert got["stale"] == pytest.approx(2 / 3)
    assert got["stale via summary"] == pytest.approx(1 / 3)
    assert got["past@5"] == 1.0
    assert (got["n recall@5"], got["n stale"], got["n past@5"]) == (5.0, 3.0, 1.0)
    empty = figures([], Rankings())
    assert empty["n stale"] == 0.0 and empty["stale"] != empty["stale"]  # NaN: nothing asked


def test_spread_ms() -> None:
    got = spread_ms([0.001, 0.002, 0.003, 0.010])
    assert got["p50_ms"] == pytest.approx(2.5)
    assert got["max_ms"] == pytest.approx(10.0)
    assert got["n"] == 4.0
    assert spread_ms([])["n"] == 0.0


def _case(n: int, lang: str, old: str, new: str, kind: str = "fact") -> Case:
    return Case(
        id=f"tune-{lang}-{n:03d}",
        type="update",
        topic="home",
        kind=kind,
        old=old,
        new=new,
        days_between=100.0,
        current=(f"{new} (asked)",),
        past=(f"{old} (asked)",),
    )


BACKGROUND = (
    "I'm left-handed, though I cut with my right hand.",
    "Autumn is my favourite season by far.",
    "I collect vintage postcards from flea markets.",
    "Bright sunlight makes me sneeze.",
    "I can't whistle no matter how hard I try.",
    "My middle name is Francis, after my great-grandfather.",
    "Heights make me dizzy on glass floors.",
    "I keep a handwritten journal in green notebooks.",
)
TURNS = (
    "We went hiking near the lake on Saturday.",
    "That sounds lovely; was the trail steep?",
    "A bit, but the view from the ridge was worth it.",
    "Ridges are great for sunsets too.",
    "I want to try painting that view in watercolour.",
    "Watercolour suits landscapes with a lot of sky.",
    "My sister is visiting from Lisbon next month.",
    "How long is she staying with you?",
    "Two weeks, and she wants to see the old harbour.",
    "The harbour museum has a new exhibit on ships.",
    "I burned the rice again last night.",
    "A rice cooker might save your evenings.",
    "Our team shipped the billing feature on time.",
    "Congratulations, that was a long project.",
    "The release party is at a taco place downtown.",
    "Tacos and a release: a good combination.",
    "I started reading a novel about a lighthouse keeper.",
    "Is it the one set on the Scottish coast?",
    "Yes, and the storms in it feel very real.",
    "Storm scenes are hard to write well.",
    "My bike got a flat tyre on the way to work.",
    "Did you manage to patch it yourself?",
    "No, the shop near the station fixed it for me.",
    "Good to have a repair shop on the way.",
)


def _sources() -> Sources:
    """Per language: three updates and a coexist pair, eight distractors, four user-days."""
    cases: dict[str, tuple[Case, ...]] = {}
    distractors: dict[str, tuple[str, ...]] = {}
    days: dict[str, tuple[tuple[tuple[str, str], ...], ...]] = {}
    for lang in LANGS:
        cases[lang] = (
            _case(1, lang, "The app does not support Android.", "The new version runs on Android."),
            _case(2, lang, "I take 20 mg of lisinopril daily.", "My lisinopril is 40 mg now."),
            _case(3, lang, "My manager is Priya.", "I report to Tom Becker now.", "preference"),
            Case(
                f"tune-{lang}-004", "coexist", "kids", "fact", "My son Leo is seven.",
                "My daughter Ana is four.", 50.0, ("How old is Ana?",), (),
            ),
        )  # fmt: skip
        distractors[lang] = BACKGROUND
        days[lang] = tuple(
            tuple(("user" if t % 2 == 0 else "assistant", TURNS[6 * d + t]) for t in range(6))
            for d in range(4)
        )
    return Sources(cases, distractors, days)


def _home(texts: Sequence[str]) -> list[str]:
    return ["home"] * len(texts)


def test_world_layout() -> None:
    src = _sources()
    world = build(src, days=10, seed=3, topic_of=_home, session_rate=0.4)
    assert world == build(src, days=10, seed=3, topic_of=_home, session_rate=0.4)  # seeded
    said = [x for s in world.sessions for x in s.said]
    items = Counter(x.item for x in said)
    assert max(items.values()) == 1  # everything is said once
    per_lang = 2 * 4 + 8  # case statements and distractors
    assert sum(1 for i in items if not i.startswith("t:")) == 2 * per_lang
    assert world.count("episode") == 2 * 4 * 6  # 4 user-days of 6 turns per language
    end = world.start + 10 * DAY
    for s in world.sessions:
        ats = [x.at for x in s.said]
        assert ats == sorted(ats) and world.start <= s.start <= ats[0] < end
        assert all(x.topic == "home" for x in s.said if x.kind != "episode")
        for p in s.asks:  # asked of what was said before the session began
            assert p.group in ("current", "coexist") and world.said_at[p.target] < s.start
    for lang in LANGS:
        for c in world.cases[lang]:
            assert world.said_at[c.old_item] < world.said_at[c.new_item]
    starts = [s.start for s in world.sessions]
    assert starts == sorted(starts)
    assert any(x.expires_at is not None and x.expires_at > x.at for x in said)


def test_probes_follow_what_was_said() -> None:
    src = _sources()
    world = build(src, days=10, seed=3, topic_of=_home, session_rate=0.4)
    c = world.cases["en"][0]
    old, new = world.said_at[c.old_item], world.said_at[c.new_item]
    at = {p.key: p for p in probes(world, "en", (old + new) / 2)}
    assert at[f"{c.id}/current/0"].target == c.old_item and not at[f"{c.id}/current/0"].rival
    assert f"{c.id}/past/0" not in at
    after = {p.key: p for p in probes(world, "en", new)}
    assert (after[f"{c.id}/current/0"].target, after[f"{c.id}/current/0"].rival) == (
        c.new_item,
        c.old_item,
    )
    assert after[f"{c.id}/past/0"].include_obsolete
    assert probes(world, "en", world.start) == []
    every = probes(world, "en", world.start + 10 * DAY)
    groups = Counter(p.group for p in every)
    assert groups == {"current": 3, "past": 3, "coexist": 1, "own": 1}


def _tiny() -> World:
    return build(_sources(), days=3, seed=5, topic_of=_home, session_rate=1.5)


def test_a_tiny_run_of_both_rows(encoder: OnnxTextEncoder) -> None:
    world = _tiny()
    rows = lifecycle.run_rows(world, encoder)
    end = world.start + world.days * DAY
    asked = [p for lang in LANGS for p in probes(world, lang, end)]
    expired = sum(1 for s in world.sessions for x in s.said if x.expires_at and x.expires_at <= end)
    assert expired > 0  # the world has some: the figure below can tell
    for name in lifecycle.ROWS:
        row = rows[name]
        assert [cp["day"] for cp in row.checkpoints] == [3]
        cp = row.checkpoints[-1]
        q, sizes = cp["quality"], cp["sizes"]
        assert q["all"]["n recall@5"] == sum(p.group in RELEVANT for p in asked)
        assert q["all"]["n stale"] == sum(bool(p.rival) for p in asked)
        assert q["all"]["n past@5"] == sum(p.group == "past" for p in asked)
        assert q["en"]["n recall@5"] + q["zh"]["n recall@5"] == q["all"]["n recall@5"]
        for f in ("recall@5", "recall@5 text", "stale", "past@5"):
            assert 0.0 <= q["all"][f] <= 1.0
        assert q["all"]["recall@5 text"] <= q["all"]["recall@5"]
        # once the indexes caught up, a warm or cold record has its vector in its tier's index
        assert sizes["warm vectors"] == sizes["warm records"]
        assert sizes["cold vectors"] == sizes["cold records"]
        assert row.recall["n"] == lifecycle.REPEATS * len(asked)
        assert row.recall["p50_ms"] <= row.recall["p99_ms"]
    without, with_ = rows["without"], rows["with"]
    assert without.maintenance["n"] == 0 and without.checkpoints[-1]["sizes"]["cold records"] == 0
    assert without.checkpoints[-1]["sizes"]["expired held"] == expired  # nothing deletes them
    assert with_.maintenance["n"] == world.days
    m = with_.maintenance
    # one topic of more than five facts: compressed, its originals in the cold tier (too young
    # for retention to move anything else)
    assert m.get("topics_compressed", 0) >= 1
    assert with_.checkpoints[-1]["sizes"]["cold records"] == m["compressed_records"]
    assert with_.checkpoints[-1]["sizes"]["warm summaries"] >= m["topics_compressed"]
    assert without.decisions == with_.decisions  # the same writes, the same gate


def test_settings_and_the_command_line(tmp_path: Path) -> None:
    base = lifecycle.settings()
    assert not base.lifecycle.maintenance.enabled  # the bench runs maintenance itself
    assert base.access_flush_seconds == 3600.0  # and ticks on the simulated clock
    longer = lifecycle.settings({"write_policy.expire_after_days": "365"})
    assert longer.write_policy.expire_after_days == 365.0
    assert longer.lifecycle == base.lifecycle
    with pytest.raises(KeyError):
        lifecycle.settings({"write_policy.no_such_key": "1"})
    for bad in (["--days", "0"], ["--set", "nokey"], ["--set", "hot.ttl_seconds=-5"]):
        with pytest.raises(SystemExit):
            lifecycle.parse(bad)
    ns = lifecycle.parse(
        ["--days", "7", "--seed", "1", "--json", str(tmp_path / "x.json"), "--set",
         "memory.lifecycle.compression.enabled=false"]
    )  # fmt: skip
    assert (ns.days, ns.seed) == (7, 1)
    assert not ns.memory.lifecycle.compression.enabled
