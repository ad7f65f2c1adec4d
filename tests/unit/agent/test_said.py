"""The head that reads what a user's input says: fitted on separable clusters it reads them, its
calibrated floors hold the precision asked for on held-out rows, a correction keeps the kind it
corrects, words count beside the vector, and the file round-trips and is refused in another
encoder space."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from server.adapters.said_models import load_said, read_head, save_head
from server.core.agent.said import (
    BUCKETS,
    LABELS,
    Reading,
    Said,
    SaidHead,
    features,
    fit,
    floors_for,
    with_floors,
)
from server.core.settings import Settings

DIM = 16


def rows(x: np.ndarray) -> np.ndarray:
    return features([""] * len(x), x)  # no words: the vectors alone


def clusters(n: int, seed: int, spread: float) -> tuple[np.ndarray, list[Said]]:
    rng = np.random.default_rng(seed)
    centres = np.eye(DIM, dtype=np.float32)[: len(LABELS)]
    x, y = [], []
    for i, lab in enumerate(LABELS):
        pts = centres[i] + spread * rng.standard_normal((n, DIM)).astype(np.float32)
        x.append(pts / np.linalg.norm(pts, axis=1, keepdims=True))
        y += [lab] * n
    return np.vstack(x), y


def test_a_fitted_head_reads_the_clusters_it_was_fitted_on() -> None:
    x, y = clusters(40, 1, 0.2)
    head = fit(rows(x), y, "space-a")
    tx, ty = clusters(20, 2, 0.2)
    got = [head.read("", v).said for v in tx]
    assert sum(g == t for g, t in zip(got, ty, strict=True)) / len(ty) > 0.95


def test_calibrated_floors_hold_the_precision_on_the_rows_they_were_set_on() -> None:
    x, y = clusters(60, 3, 0.9)  # overlapping: the argmax alone is often wrong
    head = fit(rows(x), y, "space-a")
    cx, cy = clusters(60, 4, 0.9)
    raw = [head.read("", v).said for v in cx]
    calibrated = with_floors(head, floors_for(head.probabilities(rows(cx)), cy, precision=0.95))
    got = [calibrated.read("", v).said for v in cx]
    for lab in LABELS[:-1]:
        called = [t for g, t in zip(got, cy, strict=True) if g == lab]
        assert not called or sum(t == lab for t in called) / len(called) >= 0.95, lab
    raw_pref = [t for g, t in zip(raw, cy, strict=True) if g == Said.PREFERENCE]
    assert sum(t == Said.PREFERENCE for t in raw_pref) / len(raw_pref) < 0.95  # it had work
    # and on rows they were not set on, the floors still raise the precision
    fx, fy = clusters(60, 6, 0.9)
    fresh = [calibrated.read("", v).said for v in fx]
    loose = [head.read("", v).said for v in fx]

    def precision(said: list[Said]) -> float:
        called = [t for g, t in zip(said, fy, strict=True) if g == Said.PREFERENCE]
        return sum(t == Said.PREFERENCE for t in called) / max(len(called), 1)

    assert precision(fresh) > precision(loose)
    assert float(calibrated.floors[-1]) == 0.0  # OTHER is what is left: no floor


def test_below_its_floor_a_label_reads_as_other_and_a_correction_keeps_its_kind() -> None:
    """A correction is a preference's when the head reads a preference in it (at least 0.2)
    more than a fact; "I restarted it twice, no change" read as a correction is not one."""
    w = np.zeros((DIM + BUCKETS, len(LABELS)), np.float32)
    w[:DIM] = np.eye(DIM, len(LABELS)) / 2
    head = SaidHead(w, np.zeros(4, np.float32), np.array([0.9, 0, 0, 0], np.float32), "s")
    assert head.dim == DIM
    v = np.zeros(DIM, np.float32)
    v[0] = 0.3  # a weak preference
    assert head.read("", v).said == Said.OTHER
    v[0] = 1.0
    assert head.read("", v).said == Said.PREFERENCE
    assert Reading(Said.CORRECTION, 0.5, (0.3, 0.1, 0.5, 0.1)).kept_as_preference()
    assert not Reading(Said.CORRECTION, 0.5, (0.1, 0.3, 0.5, 0.1)).kept_as_preference()
    assert not Reading(Said.CORRECTION, 0.85, (0.06, 0.01, 0.85, 0.08)).kept_as_preference()
    with pytest.raises(ValueError, match="weight columns"):
        SaidHead(np.zeros((DIM, 3), np.float32), np.zeros(4, np.float32), np.zeros(4), "s")


def test_the_head_round_trips_and_is_used_only_in_its_space(tmp_path: Path) -> None:
    x, y = clusters(10, 5, 0.2)
    head = fit(rows(x), y, "space-a")
    settings = msgspec.convert({"server": {"data_dir": str(tmp_path)}}, Settings)
    save_head(head, tmp_path / "agent" / "said.npz")
    back = read_head(tmp_path / "agent" / "said.npz")
    assert back.space == "space-a" and np.array_equal(back.weights, head.weights)
    loaded = load_said(settings, "space-a", DIM)
    assert loaded is not None and np.array_equal(loaded.floors, head.floors)
    assert load_said(settings, "space-b", DIM) is None  # nor the shipped one: another space


def test_words_count_beside_the_vector() -> None:
    """Two inputs with one vector differ by their words once a head has learnt them."""
    x = np.tile(np.eye(DIM, dtype=np.float32)[0], (40, 1))
    texts = ["please email me from now on"] * 20 + ["email the invoice this time"] * 20
    y = [Said.PREFERENCE] * 20 + [Said.OTHER] * 20
    head = fit(features(texts, x), y, "s")
    assert head.read("please email me from now on", x[0]).said == Said.PREFERENCE
    assert head.read("email the invoice this time", x[0]).said == Said.OTHER
