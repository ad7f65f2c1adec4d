"""The README's agent loop runs against a real server and prints what the README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.e2e.conftest import Proc, spawn

EXAMPLE = ROOT / "clients" / "python" / "examples" / "agent_loop.py"


def test_the_agent_loop_example(tmp_path: Path, procs: list[Proc]) -> None:
    p = spawn(procs, tmp_path / "data")
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), p.target], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    first, spent = out.stdout.strip().splitlines()
    assert first == "Your order shipped on Monday. | tier: simple | rounds: 2"
    readme = (ROOT / "README.md").read_text()
    assert first in readme
    assert spent.startswith("spent: ") and int(spent.split()[1]) > 0
    assert f"{first}\nspent: <micros> micros" in readme  # the README shows both lines
