"""The README's example runs against a real server and prints what the README says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.conftest import Proc

pytestmark = pytest.mark.e2e
EXAMPLE = ROOT / "clients" / "python" / "examples" / "quickstart.py"


def readme_blocks() -> tuple[str, str]:
    """The README's Python example and the output block that follows it."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"```python\n(.*?)```\n\nprints[^\n]*\n\n```\n(.*?)```", text, re.S)
    assert m, "README lost its example or its expected output"
    return m.group(1), m.group(2)


def test_the_readme_example_prints_its_expected_output(tmp_path: Path) -> None:
    code, expected = readme_blocks()
    # The runnable copy has the same calls (it only takes the address from the command line).
    for line in code.splitlines():
        call = line.strip().split("(", 1)[0]
        if call.startswith(("pocket.", "for hit", "print")):
            assert call in EXAMPLE.read_text(), call
    p = Proc(tmp_path / "data")
    try:
        p.wait_serving()
        out = subprocess.run(
            [sys.executable, str(EXAMPLE), p.target],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    finally:
        p.close()
    assert out.stdout == expected
