"""pocketd: the memory-routing sidecar server.

Layers (enforced by import-linter): `server.api` (gRPC, validation) → `server.core` (domain logic,
transport-free) → small interfaces in `server.core.memory.ports` that `server.adapters` implement.
`server.app` is the composition root that wires them; `server.cli` is the entry point and the only
place that reads the environment.
"""
