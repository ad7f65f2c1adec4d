"""The README's example, runnable.

Start `make run` in another terminal, then:

    .venv/bin/python clients/python/examples/quickstart.py [HOST:PORT]
"""

import sys

from pocketd import Client

target = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"
with Client(target) as pocket:
    pocket.remember("alice", "Alice only uses Android phones", kind="preference")
    pocket.remember(
        "alice", "Build failed with error E1234; fixed by raising the disk quota", kind="skill"
    )
    for hit in pocket.recall("alice", "E1234").hits:
        print(f"{hit.score.final:.2f} {hit.memory.kind} {hit.memory.text}")
    r = pocket.remember("alice", "thanks!", kind="episode")
    print(r.decision, r.reason)
