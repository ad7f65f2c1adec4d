"""A media memory's passages: the windows its read text is cut into, and the passages space's
index, which holds several vectors a key (saved, restored, replaced, forgotten)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from server.adapters.space_index import SpaceIndexes
from server.core.media.passages import MAX_PASSAGES, passages_of, units, windows
from server.core.memory.model import PASSAGES, Kind, Modality, Record, SpaceVector


def test_a_short_text_has_no_passages() -> None:
    assert windows("") == [] and windows("one line") == [] and windows("a\nb") == []
    assert windows("One sentence. Two sentences.") == []


def test_each_line_is_centred_in_a_window_of_three() -> None:
    got = windows("t\na\nb\nc\nd")
    assert got == ["t\na", "t\na\nb", "a\nb\nc", "b\nc\nd", "c\nd"]


def test_a_transcript_is_cut_at_its_sentences_in_either_language() -> None:
    assert units("I park on level 3. Row G! Near the lifts? Yes.") == [
        "I park on level 3.",
        "Row G!",
        "Near the lifts?",
        "Yes.",
    ]
    assert units("车停在三楼。G排！靠近电梯。") == ["车停在三楼。", "G排！", "靠近电梯。"]


def test_a_long_table_is_covered_from_its_first_row_to_its_last_within_the_cap() -> None:
    rows = [f"row {i}: value {i}" for i in range(500)]
    got = windows("\n".join(rows))
    assert len(got) == MAX_PASSAGES
    assert got[0].startswith("row 0:") and got[-1].endswith("row 499: value 499")


def test_only_media_memories_have_passages() -> None:
    text = "Order delivered\nCourier: Andre Whitfield\nTotal: $31.40\nTip: $5"
    rec = Record(memory_id="m", namespace="n", kind=Kind.OBSERVATION, text=text)
    assert passages_of(rec) == []
    for m in (Modality.IMAGE, Modality.AUDIO, Modality.TABLE):
        assert (
            len(
                passages_of(
                    Record(
                        memory_id="m", namespace="n", kind=Kind.OBSERVATION, text=text, modality=m
                    )
                )
            )
            == 4
        )


def _unit(rng: np.random.Generator, dim: int = 8) -> np.ndarray:
    v = rng.normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_the_passages_index_keeps_every_passage_of_a_key_across_a_restart(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    a = [_unit(rng) for _ in range(3)]
    b = [_unit(rng) for _ in range(2)]
    clip = _unit(rng, 4)
    idx = SpaceIndexes(tmp_path, 0)
    puts = [
        (1, "p", (*tuple(SpaceVector.of(PASSAGES, v) for v in a), SpaceVector.of("clip", clip))),
        (2, "p", tuple(SpaceVector.of(PASSAGES, v) for v in b)),
    ]
    idx.apply("ns", [], puts)
    idx.save(5)
    again = SpaceIndexes(tmp_path, 0)
    for got in (idx, again):
        rows = got.get("ns", PASSAGES, [1, 2])
        assert rows[1].shape == (3, 8) and rows[2].shape == (2, 8)
        assert np.allclose(sorted(map(tuple, rows[1])), sorted(map(tuple, a)), atol=1e-6)
        assert got.get("ns", "clip", [1])[1].shape == (1, 4)
        keys, sims = got.search("ns", PASSAGES, None, a[2], 3)
        assert keys[0] == 1 and sims[0] > 0.999  # found by its third passage
    # An upsert with fewer passages replaces them all; a Forget takes them out.
    again.apply("ns", [], [(1, "p", (SpaceVector.of(PASSAGES, a[0]),))])
    assert again.get("ns", PASSAGES, [1])[1].shape == (1, 8)
    assert again.get("ns", "clip", [1]) == {}
    again.apply("ns", [2], [])
    assert again.get("ns", PASSAGES, [2]) == {} and again.size("ns", PASSAGES) == 1
