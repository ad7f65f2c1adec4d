"""What each of pocketd's ranking mechanisms adds: pocketd served again from the same stored
memories with one mechanism turned off (a setting at its off value), one row each.

A row `−name` below the `pocketd` row is what pocketd scores without `name`; the difference is
what `name` added on that workload, everything else equal (the same import, the same
questions)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.quality_data import Ranker
from bench.quality_retrievers import Pocketd
from server.config import ENV_PREFIX

# (row, the settings that turn its mechanism off)
ABLATIONS: list[tuple[str, dict[str, str]]] = [
    ("−role", {"memory.hybrid_search.role_boost": "0"}),
    ("−across scripts", {"memory.hybrid_search.across_scripts_share": "0"}),
    ("−keyword gate", {"memory.hybrid_search.keyword_gate": "0"}),
    ("−time cues", {"memory.hybrid_search.time_cue_boost": "0"}),
]


def env_name(key: str) -> str:
    """`memory.hybrid_search.top_k` → `POCKETD__MEMORY__HYBRID_SEARCH__TOP_K`."""
    return ENV_PREFIX + "__".join(part.upper() for part in key.split("."))


def settings_env(pairs: list[str]) -> dict[str, str]:
    """`SECTION.KEY=VALUE` pairs (a bench's `--set`) as the server's environment variables."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set {pair!r}: expected SECTION.KEY=VALUE")
        out[env_name(key)] = value
    return out


def ablation_env(off: dict[str, str]) -> dict[str, str]:
    return {env_name(k): v for k, v in off.items()}


@dataclass(frozen=True)
class Workload:
    """A labelled set of questions already imported into a `Pocketd`, and how its figures
    (at least "r5" and "r10") are computed from a ranker."""

    label: str
    figures: Callable[[Ranker], dict[str, float]]


def ablate(pd: Pocketd, workloads: list[Workload]) -> dict[str, dict[str, dict[str, float]]]:
    """Per ablation, per workload, pocketd's figures with that mechanism off (the same stored
    memories served again; `pd` is left serving the last ablation's settings)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, off in ABLATIONS:
        pd.reopen(ablation_env(off))
        out[name] = {w.label: w.figures(pd.ranker(w.label)) for w in workloads}
    return out
