"""`pocketd models train-said`: fit the head that reads what a user's input says
(`server.core.agent.said`: a preference, a fact, a correction, or other) on labelled wordings in
Chinese and English (the shipped set, `server/prompts/said.json`) and a labelled sample of
MemoryBank's user utterances (`said_memorybank.json`: ids into `../shared/data/memorybank/`, read
when that folder is there), in the configured encoder's space; calibrate each label's floor to a
precision of 0.95 on out-of-fold probabilities (five heads, each fitted without one fifth, the
folds by a hash of the text so the split never changes), which the figures report; and write the
head fitted on every example (`--out`, default `<data_dir>/agent/said.npz`,
where the server loads it at start in place of the shipped one).

The shipped head is made by `make said-head` (this command, `--out server/prompts/said_head.npz`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from server.adapters.onnx_encoder import OnnxTextEncoder
from server.adapters.said_models import said_path, save_head
from server.config import model_dir
from server.core.agent.said import (
    LABELS,
    Said,
    believed,
    features,
    fit,
    floors_for,
    precision_recall,
    with_floors,
)
from server.core.settings import Settings

PROMPTS = Path(__file__).resolve().parent / "prompts"
DEFAULT_DATA = PROMPTS / "said.json"
MEMORYBANK_LABELS = PROMPTS / "said_memorybank.json"
DEFAULT_MEMORYBANK = Path(__file__).resolve().parent.parent.parent / "shared/data/memorybank"
MEMORYBANK_FILES = {"en": "en/memory_bank_en.json", "cn": "cn/memory_bank_cn.json"}


@dataclass(frozen=True)
class Example:
    text: str
    said: Said
    source: str  # "set" or "memorybank"


def load_set(path: Path) -> list[Example]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [Example(str(i["text"]), Said(i["label"]), "set") for i in doc["items"]]


def load_memorybank(labels: Path, root: Path, required: bool = False) -> list[Example]:
    """The labelled MemoryBank utterances, or none when the data is not there (an error when
    it is `required`)."""
    if not root.is_dir():
        if required:
            raise FileNotFoundError(f"{root}: no MemoryBank data (../shared/data/memorybank)")
        return []
    files = {
        k: json.loads((root / v).read_text(encoding="utf-8")) for k, v in MEMORYBANK_FILES.items()
    }
    out = []
    for i in json.loads(labels.read_text(encoding="utf-8"))["items"]:
        day = files[i["lang"]][i["user"]]["history"][i["day"]]
        out.append(Example(str(day[int(i["index"])]["query"]), Said(i["label"]), "memorybank"))
    return out


def fold(text: str, folds: int) -> int:
    """The text's fold, by a hash of it (so the split never changes)."""
    h = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    return h % folds


@dataclass(frozen=True)
class Figures:
    precision: dict[str, float | None]
    recall: dict[str, float]
    n: int


def figures(probs: np.ndarray, floors: np.ndarray, truth: Sequence[Said]) -> Figures:
    """Precision and recall per label of a head's reading, given its out-of-fold `probs`."""
    said = believed(probs, floors)
    by = {lab.value: precision_recall(said, truth, lab) for lab in LABELS}
    return Figures(
        {k: p for k, (p, _) in by.items()}, {k: r for k, (_, r) in by.items()}, len(truth)
    )


def out_of_fold(
    rows: np.ndarray, truth: Sequence[Said], folds: Sequence[int], space: str
) -> np.ndarray:
    """Each example's probabilities from the head fitted on the other folds."""
    probs = np.zeros((len(truth), len(LABELS)), dtype=np.float32)
    for k in sorted(set(folds)):
        inside = [i for i, f in enumerate(folds) if f != k]
        out = [i for i, f in enumerate(folds) if f == k]
        head = fit(rows[inside], [truth[i] for i in inside], space)
        probs[out] = head.probabilities(rows[out])
    return probs


def train_said(
    settings: Settings,
    data: Path,
    memorybank: Path,
    out: Path,
    folds: int,
    log: Callable[[str], None],
    required: bool = False,
) -> Figures:
    """Fit on every example; the floors from the out-of-fold probabilities of `folds` heads,
    each fitted on the other folds, which are also what the figures report."""
    examples = load_set(data) + load_memorybank(MEMORYBANK_LABELS, memorybank, required)
    n_mb = sum(e.source == "memorybank" for e in examples)
    log(f"{len(examples)} examples ({n_mb} from MemoryBank), {folds} folds")
    if folds < 2 or len(examples) < folds:
        raise ValueError(f"{len(examples)} examples in {folds} folds: need 2 folds or more")
    encoder = OnnxTextEncoder(
        model_dir(settings), settings.encoder.threads, settings.encoder.batch_size, 256
    )
    texts, truth = [e.text for e in examples], [e.said for e in examples]
    rows = features(texts, encoder.encode(texts))
    probs = out_of_fold(rows, truth, [fold(t, folds) for t in texts], encoder.space)
    floors = floors_for(probs, truth)
    head = with_floors(fit(rows, truth, encoder.space), floors)
    log(
        "floors: "
        + ", ".join(f"{lab.value} {f:.3f}" for lab, f in zip(LABELS, floors, strict=True))
    )
    save_head(head, out)
    log(
        f"written to {out} (the server loads {said_path(settings)} at start, else the shipped head)"
    )
    return figures(probs, floors, truth)


def train_said_main(
    settings: Settings, data: Path | None, memorybank: Path | None, out: Path | None, folds: int
) -> int:
    def say(msg: str) -> None:
        print(f"pocketd models train-said: {msg}", file=sys.stderr, flush=True)

    try:
        got = train_said(
            settings,
            data or DEFAULT_DATA,
            memorybank or DEFAULT_MEMORYBANK,
            out or said_path(settings),
            folds,
            say,
            required=memorybank is not None,  # named: it must be there
        )
    except (OSError, ValueError, KeyError) as e:
        print(f"pocketd: {e}", file=sys.stderr)
        return 2
    print(f"out of fold ({got.n} examples), by label: precision / recall")
    for lab in LABELS:
        p = got.precision[lab.value]
        print(
            f"  {lab.value:<11} {'n/a' if p is None else f'{p:.3f}'} / {got.recall[lab.value]:.3f}"
        )
    return 0
