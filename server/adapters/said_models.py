"""The head that reads what a user's input says (`server.core.agent.said`): the one installed by
`pocketd models train-said` in `<data_dir>/agent/said.npz`, else the one shipped for the built-in
encoder (`server/prompts/said_head.npz`), used only with the encoder space it was fitted in."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from server.core.agent.said import SaidHead
from server.core.settings import Settings

log = logging.getLogger(__name__)
SHIPPED = Path(__file__).resolve().parent.parent / "prompts" / "said_head.npz"


def said_path(settings: Settings) -> Path:
    return Path(settings.server.data_dir) / "agent" / "said.npz"


def save_head(head: SaidHead, path: Path) -> None:
    """Written whole or not at all (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        np.savez(
            f,
            weights=head.weights,
            bias=head.bias,
            floors=head.floors,
            space=np.array(head.space),
        )
    tmp.replace(path)


def read_head(path: Path) -> SaidHead:
    with np.load(path, allow_pickle=False) as z:
        return SaidHead(
            z["weights"].astype(np.float32),
            z["bias"].astype(np.float32),
            z["floors"].astype(np.float32),
            str(z["space"]),
        )


def load_said(settings: Settings, space: str, dim: int) -> SaidHead | None:
    """The head for the encoder of `space`, or None (then a Step keeps every input as an
    episode and reads none as a preference, a fact or a correction; logged once)."""
    for path in (said_path(settings), SHIPPED):
        if not path.is_file():
            continue
        head = read_head(path)
        if head.space == space and head.dim == dim:
            return head
        log.warning(
            "%s was fitted in the encoder space %r (%d dimensions), not %r (%d): not used",
            path, head.space, head.dim, space, dim,
        )  # fmt: skip
    log.warning(
        "no head reads what users say in the encoder space %r (`pocketd models train-said`):"
        " every input is kept as an episode, none as a preference, fact or correction",
        space,
    )
    return None
