"""A data directory remembers the vector space its memories were encoded in: a server with an
encoder of another space refuses it, naming both, and `pocketd reembed` moves it to the new one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pocketd import Client
from tests.conftest import ROOT
from tests.e2e.conftest import Proc, spawn
from tests.e2e.test_startup import one_line_exit_2, serve

pytestmark = pytest.mark.e2e


def reembed(data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", "reembed", "--data-dir", str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_new_data_directory_records_the_encoders_space(tmp_path: Path, procs: list[Proc]) -> None:
    p = spawn(procs, tmp_path / "data")
    p.stop()
    marker = json.loads((tmp_path / "data" / "encoder.json").read_text())
    manifest = json.loads((ROOT / "models" / "use-m3" / "manifest.json").read_text())
    assert marker["space"] == manifest["space"] and marker["dim"] == 512


def test_another_space_is_refused_then_reembedded(tmp_path: Path, procs: list[Proc]) -> None:
    data = tmp_path / "data"
    p = spawn(procs, data)
    with Client(p.target, timeout=60) as c:
        c.remember("ns", "The deploy key rotates every Tuesday at 10:00", kind="fact")
        c.remember("ns", "用户只使用安卓手机", kind="preference")
    p.stop()
    # Pretend the memories were written in another space (another encoder's vectors).
    (data / "encoder.json").write_text(json.dumps({"space": "some-other-model", "dim": 512}))
    out = serve(tmp_path)
    one_line_exit_2(out, "'some-other-model'", "use-multilingual-v3", "pocketd reembed")
    done = reembed(data)
    assert done.returncode == 0, done.stderr
    assert "re-embedding 2 memories" in done.stderr and "done: 2 memories" in done.stderr
    assert json.loads((data / "encoder.json").read_text())["space"].startswith("use-multilingual")
    assert not (data / "vectors").exists()  # rebuilt from the store by the next start
    p = spawn(procs, data)
    with Client(p.target, timeout=60) as c:
        hits = c.recall("ns", "the user only uses Android phones", min_score=0.0).hits
        assert hits and hits[0].memory.text == "用户只使用安卓手机"  # found across languages
        assert hits[0].score.vector > 0.5
    p.stop()
    again = reembed(data)  # in the same space: nothing is lost, the memories are re-encoded
    assert again.returncode == 0, again.stderr


def test_an_interrupted_reembed_keeps_every_server_off_until_it_is_run_again(
    tmp_path: Path, procs: list[Proc]
) -> None:
    data = tmp_path / "data"
    p = spawn(procs, data)
    with Client(p.target, timeout=60) as c:
        c.remember("ns", "The deploy key rotates every Tuesday", kind="fact")
    p.stop()
    space = json.loads((data / "encoder.json").read_text())["space"]
    # What `pocketd reembed` leaves behind when it is killed halfway.
    (data / "encoder.json").write_text(json.dumps({"space": f"reembedding to {space}"}))
    one_line_exit_2(serve(tmp_path), "half re-embedded", "pocketd reembed")
    assert reembed(data).returncode == 0
    p = spawn(procs, data)
    p.stop()


def test_client_vectors_are_a_space_of_their_own(tmp_path: Path, procs: list[Proc]) -> None:
    """A directory written with encoder.text: none holds the clients' vectors: the built-in
    encoder's queries cannot be compared with them."""
    data = tmp_path / "data"
    p = spawn(procs, data, env={"POCKETD__ENCODER__TEXT": "none"})
    with Client(p.target, timeout=60) as c:
        c.remember("ns", "a fact", kind="fact", vector=[1.0] + [0.0] * 511)
    p.stop()
    assert json.loads((data / "encoder.json").read_text())["space"] == (
        "client vectors of 512 dimensions"
    )
    one_line_exit_2(serve(tmp_path), "client vectors of 512 dimensions", "use-multilingual-v3")


def test_reembed_without_a_store_exits_2(tmp_path: Path) -> None:
    out = reembed(tmp_path / "empty")
    assert out.returncode == 2 and "no record store" in out.stderr
