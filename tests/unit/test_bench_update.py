"""`python -m bench update`: the set's halves are disjoint and laid out in time as described, the
figures are computed right on hand-made rankings, the trivial rule swaps only the top 2, what
pocketd marked is scored against the right successor, and the report half refuses the flags that
choose settings. No server and no model: pocketd is a recording fake."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import update
from bench.update_data import DAY, END, HALVES, LANGS, YEAR_DAYS, Case, Probe, UpdateSet, load
from bench.update_score import (
    Mark,
    above,
    figures,
    newer_first,
    newer_of_top2,
    supersession,
)


@pytest.fixture(scope="module")
def halves() -> dict[str, dict[str, UpdateSet]]:
    return {h: load(h) for h in HALVES}


def test_the_halves_are_disjoint(halves: dict[str, dict[str, UpdateSet]]) -> None:
    for part in ("topic", "old", "new"):
        tune = {getattr(c, part) for s in halves["tune"].values() for c in s.cases}
        report = {getattr(c, part) for s in halves["report"].values() for c in s.cases}
        assert tune and report and not tune & report, part
    tune_q = {p.text for s in halves["tune"].values() for p in s.probes}
    report_q = {p.text for s in halves["report"].values() for p in s.probes}
    assert not tune_q & report_q


def test_each_half_is_laid_out_in_time(halves: dict[str, dict[str, UpdateSet]]) -> None:
    for sets in halves.values():
        for lang in LANGS:
            s = sets[lang]
            times = [x.at for x in s.statements]
            assert times == sorted(times)
            assert times[0] >= END - YEAR_DAYS * DAY and times[-1] < END == s.as_of
            born = s.born
            for c in s.cases:
                assert born[c.new_item] - born[c.old_item] == pytest.approx(c.days_between * DAY)
            assert sum(x.item.startswith("d:") for x in s.statements) == 150
            assert len(s.statements) == 2 * len(s.cases) + 150
            keys = [p.key for p in s.probes]
            assert len(keys) == len(set(keys))
            # Every update's questions ask for its new value over the old one, and its past
            # questions for the old value with include_obsolete; a coexist pair asks for new.
            for p in s.probes:
                case = next(c for c in s.cases if c.id == p.case)
                want = {
                    "current": (case.new_item, case.old_item, "update"),
                    "past": (case.old_item, "", "update"),
                    "coexist": (case.new_item, "", "coexist"),
                    "own": (case.old_item, "", "coexist"),
                }[p.group]
                assert (p.target, p.rival, case.type) == want
                assert p.include_obsolete == (p.group == "past")


def _probe(group: str, target: str = "c:new", rival: str = "") -> Probe:
    return Probe(f"{group}/{target}/{rival}", "c", group, "q", target, rival)  # type: ignore[arg-type]


def test_figures_on_hand_made_rankings() -> None:
    first = _probe("current", "a:new", "a:old")
    second_above_old = _probe("current", "b:new", "b:old")
    third_old_absent = _probe("current", "c:new", "c:old")
    below_old = _probe("current", "d:new", "d:old")
    fourth = _probe("current", "e:new", "e:old")
    past_in = _probe("past", "a:old")
    past_out = _probe("past", "b:old")
    probes = [first, second_above_old, third_old_absent, below_old, fourth, past_in, past_out]
    rankings = {
        first.key: ["a:new", "a:old"],
        second_above_old.key: ["d:1", "b:new", "b:old"],
        third_old_absent.key: ["d:1", "d:2", "c:new"],
        below_old.key: ["d:old", "d:new"],
        fourth.key: ["d:1", "d:2", "d:3", "e:new"],
        past_in.key: ["a:new", "d:1", "d:2", "d:3", "a:old"],
        past_out.key: ["b:new", "d:1", "d:2", "d:3", "d:4", "b:old"],
    }
    f = figures(probes, rankings)
    assert f["current r1"] == pytest.approx(1 / 5)
    assert f["current top3>old"] == pytest.approx(3 / 5)
    assert f["past top5"] == pytest.approx(1 / 2)
    assert f["n current"] == 5 and f["n past"] == 2 and f["n coexist"] == 0
    assert f["coexist top3"] == 0.0  # no such questions: 0, and n says so


def test_coexist_and_own_words_figures() -> None:
    co = _probe("coexist", "a:new")
    own = _probe("own", "a:old")
    rankings = {co.key: ["x", "y", "a:new"], own.key: ["a:new", "x", "y", "z", "w", "a:old"]}
    f = figures([co, own], rankings)
    assert f["coexist top3"] == 1.0 and f["own top5"] == 0.0


def test_the_trivial_rule_puts_the_later_of_the_top_two_first() -> None:
    born = {"old": 1.0, "new": 2.0, "d": 3.0}
    assert newer_of_top2(["old", "new", "d"], born) == ["new", "old", "d"]
    assert newer_of_top2(["new", "old", "d"], born) == ["new", "old", "d"]
    assert newer_of_top2(["old", "d", "new"], born) == ["d", "old", "new"]  # only the top 2
    assert newer_of_top2(["old"], born) == ["old"]
    now, past = _probe("current", "new", "old"), _probe("past", "old")
    rankings = {now.key: ["old", "new"], past.key: ["old", "new"]}
    got = newer_first([now, past], rankings, born)
    assert got[now.key] == ["new", "old"] and got[past.key] == ["old", "new"]


@given(st.permutations(list(range(6))), st.integers(0, 6))
def test_the_trivial_rule_is_a_permutation_of_the_top_two(order: list[int], n: int) -> None:
    ranking = [f"i{k}" for k in order[:n]]
    born = {f"i{k}": float(k) for k in range(6)}
    out = newer_of_top2(ranking, born)
    assert sorted(out) == sorted(ranking) and out[2:] == ranking[2:]
    if n >= 2:
        assert born[out[0]] == max(born[ranking[0]], born[ranking[1]])


@given(st.lists(st.sampled_from("abcdef"), unique=True), st.integers(1, 6))
def test_above_is_rank_within_depth_and_before_the_rival(ranking: list[str], depth: int) -> None:
    for target in "abc":
        for rival in ("", "d", "e"):
            t = ranking.index(target) if target in ranking else None
            r = ranking.index(rival) if rival in ranking else None
            want = t is not None and t < depth and (r is None or t < r)
            assert above(ranking, target, rival, depth) == want


def _case(i: str, type_: str) -> Case:
    return Case(i, type_, i, "fact", f"{i} old", f"{i} new", 10.0, ("q",), ())  # type: ignore[arg-type]


def test_supersession_scores_marks_against_the_right_successor() -> None:
    cases = [_case("u1", "update"), _case("u2", "update"), _case("c1", "coexist")]
    marks = [
        Mark("u1:old", "u1:new", "value:number"),  # right
        Mark("u2:old", "d:4", "value:object"),  # the right old, the wrong successor
        Mark("c1:old", "c1:new", "value:entity"),  # a coexist pair marked
        Mark("d:1", "d:2", "value:object"),  # a distractor
    ]
    got = supersession(cases, marks)
    assert got["update recall"] == 0.5
    assert got["coexist kept"] == 0.0
    assert got["precision"] == 0.25 and got["marks"] == 4
    assert got["right by reason"] == {"value:number": 1}
    assert got["wrong by reason"] == {"value:object": 2, "value:entity": 1}
    assert got["wrong by what"] == {"update old": 1, "coexist old": 1, "distractor": 1}
    assert supersession(cases, [])["precision"] == 1.0


@dataclass
class _Result:
    memory_id: str
    decision: str

    @property
    def stored(self) -> bool:
        return self.decision in ("stored", "merged")


class FakeClient:
    """Remembers what it is sent; the second statement is merged into the first; the third
    supersedes the first (Get reports it)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.recalls: list[dict[str, Any]] = []

    def remember(self, namespace: str, text: str, **fields: Any) -> _Result:
        self.sent.append({"namespace": namespace, "text": text, **fields})
        n = len(self.sent)
        return _Result("m1" if n == 2 else f"m{n}", "merged" if n == 2 else "stored")

    def recall(self, namespace: str, text: str, **options: Any) -> Any:
        self.recalls.append({"text": text, **options})
        hits = [SimpleNamespace(memory=SimpleNamespace(memory_id=m)) for m in ("m3", "m1", "mX")]
        return SimpleNamespace(hits=hits)

    def get(self, namespace: str, memory_id: str) -> Any:
        obsolete = memory_id == "m1"
        return SimpleNamespace(
            obsolete=obsolete,
            superseded_by="m3" if obsolete else "",
            supersede_reason="value:number" if obsolete else "",
        )


def test_pocketd_user_writes_in_time_order_and_maps_merges() -> None:
    s = load("tune")["en"]
    small = UpdateSet(s.half, s.lang, s.cases[:2], s.statements[:3], s.probes[:2])
    client = FakeClient()
    user = update.PocketdUser(client, small)  # type: ignore[arg-type]
    assert [x["text"] for x in client.sent] == [x.text for x in small.statements]
    assert all(x["speaker"] == "user" for x in client.sent)
    assert [x["occurred_at"] for x in client.sent] == [x.at for x in small.statements]
    assert [x["kind"] for x in client.sent] == [x.kind for x in small.statements]
    first, second, third = (x.item for x in small.statements)
    # The merge overwrote m1 with the second statement's words: the first is held by none.
    assert user.owner == {"m1": second, "m3": third} and first not in user.owner.values()
    probe = small.probes[0]
    assert user(probe) == [third, second, "?"]
    assert client.recalls[-1]["as_of"] == small.as_of
    assert client.recalls[-1]["include_obsolete"] == probe.include_obsolete
    assert user.marks() == [Mark(second, third, "value:number")]


@pytest.mark.parametrize("flags", [["--set", "a.b=1"], ["--misses"]])
def test_the_report_half_refuses_flags_that_choose_settings(flags: list[str]) -> None:
    with pytest.raises(SystemExit):
        update.parse(["--half", "report", *flags])
    with pytest.raises(SystemExit):
        update.parse(flags)  # the default half is report
    ns = update.parse(["--half", "tune", *flags])
    assert ns.half == "tune"


def test_settings_become_environment_and_rows_are_checked() -> None:
    ns = update.parse(["--half", "tune", "--set", "memory.lifecycle.supersede.cosine=0.45"])
    assert ns.settings == {"memory.lifecycle.supersede.cosine": "0.45"}
    assert update.environment(ns.settings) == {
        "POCKETD__MEMORY__LIFECYCLE__SUPERSEDE__COSINE": "0.45"
    }
    assert update.parse(["--rows", "hybrid"]).rows == ["hybrid"]
    with pytest.raises(SystemExit):
        update.parse(["--rows", "chroma"])
