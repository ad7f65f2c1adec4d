"""A runnable example.

Start `make run` in another terminal, then:

    .venv/bin/python clients/python/examples/quickstart.py
"""

from pocketd import Client

with Client("127.0.0.1:50051") as client:
    print(client.remember("alice", "Alice only uses Android phones", kind="preference"))
    print(
        client.remember(
            "alice", "Build failed with error E1234, fixed by raising the disk quota", kind="skill"
        )
    )
    for hit in client.recall("alice", "E1234").hits:
        print(f"{hit.score.final:.3f} {hit.memory.kind:<10} {hit.memory.text}")
    print(client.stats("alice"))
