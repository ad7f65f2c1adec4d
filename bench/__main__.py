"""`python -m bench NAME [options]`; NAME is one of: memory, quality."""

from __future__ import annotations

import sys

from bench import memory, quality

BENCHES = {"memory": memory.main, "quality": quality.main}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in BENCHES:
        print(f"usage: python -m bench {{{','.join(BENCHES)}}} [options]", file=sys.stderr)
        return 2
    return BENCHES[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
