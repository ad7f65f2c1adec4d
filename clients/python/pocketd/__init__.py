"""pocketd's Python client.

from pocketd import Client
with Client("127.0.0.1:50051") as c:
    c.remember("alice", "Alice only uses Android phones", kind="preference")
    for hit in c.recall("alice", "which phone does she use?").hits:
        print(hit.score.final, hit.memory.text)
"""

from pocketd.budgets import task_budget
from pocketd.client import AsyncClient, Client
from pocketd.requests import Fact, InsecureTokenError, MemoryInput, Tls
from pocketd.tasks import AsyncTask, Task
from pocketd.types import (
    Blob,
    Hit,
    IndexStats,
    MaintainReport,
    MediaStats,
    Memory,
    NamespaceStats,
    Page,
    PlanStepReport,
    RecallResult,
    ReconcileDecision,
    ReconcileResult,
    RememberResult,
    Score,
    SessionEnd,
    Stats,
    Supersession,
)

__all__ = [
    "AsyncClient",
    "AsyncTask",
    "Blob",
    "Client",
    "Fact",
    "Hit",
    "IndexStats",
    "InsecureTokenError",
    "MaintainReport",
    "MediaStats",
    "Memory",
    "MemoryInput",
    "NamespaceStats",
    "Page",
    "PlanStepReport",
    "RecallResult",
    "ReconcileDecision",
    "ReconcileResult",
    "RememberResult",
    "Score",
    "SessionEnd",
    "Stats",
    "Supersession",
    "Task",
    "Tls",
    "task_budget",
]
