"""`python -m bench NAME [options]`; NAME is one of: memory, quality, costs, coarse, router,
router_fit, ledger, agent, bilingual, soak, loadtest, longmemeval, update, lifecycle, media, cues,
said.

Each bench is imported only when asked for: importing usearch and tantivy before onnxruntime
(as `costs` would) crashes onnxruntime's import in the same process.
"""

from __future__ import annotations

import importlib
import sys

BENCHES = (
    "memory", "quality", "costs", "coarse", "router", "router_fit", "ledger", "agent", "bilingual",
    "soak", "loadtest", "longmemeval", "update", "lifecycle", "media", "cues", "said",
)  # fmt: skip


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in BENCHES:
        print(f"usage: python -m bench {{{','.join(BENCHES)}}} [options]", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{sys.argv[1]}")
    code: int = module.main(sys.argv[2:])
    return code


if __name__ == "__main__":
    sys.exit(main())
