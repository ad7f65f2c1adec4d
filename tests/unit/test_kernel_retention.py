"""The retention kernel (kernels/retention.py) agrees with its numpy twin, stays in [0, 1], and is
monotone in each input: never lower for a more important or more accessed memory, never higher
for an older one or at a later time."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kernels.retention import DAY, retention, retention_ref

NOW = 1_800_000_000.0
YEARS = 20 * 365 * DAY


@dataclass(frozen=True)
class Case:
    """One namespace's memories and the weights they are scored under."""

    importance: npt.NDArray[np.int8]
    created: npt.NDArray[np.float64]
    last_access: npt.NDArray[np.float64]
    accesses: npt.NDArray[np.int64]
    now: float
    w_importance: float
    w_freshness: float
    half_life_days: float
    access_saturation: float

    def args(self) -> tuple[object, ...]:
        return (
            self.importance,
            self.created,
            self.last_access,
            self.accesses,
            self.now,
            self.w_importance,
            self.w_freshness,
            self.half_life_days,
            self.access_saturation,
        )


@st.composite
def cases(draw: st.DrawFn, min_size: int = 0) -> Case:
    n = draw(st.integers(min_size, 40))
    times = st.floats(NOW - YEARS, NOW + DAY)  # a little after now too: a clock that moved back
    last = draw(hnp.arrays(np.float64, n, elements=times))
    never = draw(hnp.arrays(np.bool_, n))
    last[never] = np.nan
    return Case(
        importance=draw(hnp.arrays(np.int8, n, elements=st.integers(0, 6))),
        created=draw(hnp.arrays(np.float64, n, elements=times)),
        last_access=last,
        accesses=draw(hnp.arrays(np.int64, n, elements=st.integers(0, 1 << 40))),
        now=NOW,
        w_importance=draw(st.floats(0.0, 1.0)),
        w_freshness=draw(st.floats(0.0, 1.0)),
        half_life_days=draw(st.floats(0.01, 36_500.0)),
        access_saturation=draw(st.floats(0.01, 1e6)),
    )


def both(c: Case) -> npt.NDArray[np.float32]:
    """The kernel's result, checked against the twin's."""
    got = retention(*c.args())
    np.testing.assert_allclose(got, retention_ref(*c.args()), rtol=1e-6, atol=1e-7)
    assert got.dtype == np.float32 and got.shape == c.importance.shape
    return got


@given(cases())
def test_the_kernel_matches_its_twin_and_stays_in_the_unit_interval(c: Case) -> None:
    got = both(c)
    assert np.all((got >= 0.0) & (got <= 1.0))
    accesses32 = replace(c, accesses=c.accesses.clip(0, 1 << 30).astype(np.int32))
    np.testing.assert_allclose(retention(*accesses32.args()), retention_ref(*accesses32.args()))


@given(cases(min_size=1), st.data())
def test_more_importance_never_lowers_retention(c: Case, data: st.DataObject) -> None:
    more = c.importance + data.draw(
        hnp.arrays(np.int8, len(c.importance), elements=st.integers(0, 3))
    )
    assert np.all(both(replace(c, importance=more)) >= both(c))


@given(cases(min_size=1), st.data())
def test_more_accesses_never_lower_retention(c: Case, data: st.DataObject) -> None:
    extra = data.draw(hnp.arrays(np.int64, len(c.accesses), elements=st.integers(0, 1 << 20)))
    assert np.all(both(replace(c, accesses=c.accesses + extra)) >= both(c))


@given(cases(min_size=1), st.data())
def test_an_older_last_access_never_raises_retention(c: Case, data: st.DataObject) -> None:
    earlier = data.draw(hnp.arrays(np.float64, len(c.created), elements=st.floats(0.0, YEARS)))
    # Never accessed: the age counts from creation, so that is what moves back.
    older = replace(c, created=c.created - earlier, last_access=c.last_access - earlier)
    assert np.all(both(older) <= both(c))


@given(cases(min_size=1), st.floats(0.0, YEARS))
def test_a_later_now_never_raises_retention(c: Case, later: float) -> None:
    assert np.all(both(replace(c, now=c.now + later)) <= both(c))


def test_the_parts_and_their_weights() -> None:
    one = np.ones(1)

    def score(importance: int, age_days: float, accesses: int, w_i: float, w_f: float) -> float:
        c = Case(
            np.array([importance], np.int8),
            one * (NOW - age_days * DAY),
            one * np.nan,
            np.array([accesses], np.int64),
            NOW,
            w_i,
            w_f,
            30.0,
            4.0,
        )
        return float(both(c)[0])

    assert score(5, 0.0, 0, 1.0, 0.0) == 1.0
    assert score(3, 0.0, 0, 1.0, 0.0) == 0.5
    assert score(1, 0.0, 0, 1.0, 0.0) == 0.0
    assert score(1, 30.0, 0, 0.0, 1.0) == pytest.approx(0.5)  # one half-life
    assert score(1, 60.0, 0, 0.0, 1.0) == pytest.approx(0.25)
    # Four accesses at a saturation of four: half of what the age took back.
    assert score(1, 60.0, 4, 0.0, 1.0) == pytest.approx(1 - 0.75 * 0.5)
    assert score(5, 60.0, 0, 0.5, 0.5) == pytest.approx((1.0 + 0.25) / 2)
    assert score(5, 0.0, 9, 0.0, 0.0) == 0.0  # no weight: nothing to retain


def test_a_last_access_counts_from_itself_not_from_creation() -> None:
    created = np.array([NOW - 300 * DAY, NOW - 300 * DAY])
    last = np.array([np.nan, NOW - DAY])
    args = (np.array([1, 1], np.int8), created, last, np.zeros(2, np.int64), NOW, 0.0, 1.0, 30.0)
    got = retention(*args, 4.0)
    assert got[0] == pytest.approx(0.5 ** (300 / 30))
    assert got[1] == pytest.approx(0.5 ** (1 / 30))
