"""The decision log on disk (server/adapters/decision_log.py): order, rotation within its bound,
a frame cut short by a crash, and the CLI that prints it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.adapters.decision_log import NAME, FileDecisionLog, read_log
from server.cli import main
from server.core.routing.record import DecisionRecord, LoggedStep


def record(i: int) -> DecisionRecord:
    return DecisionRecord(
        at=1_800_000_000.0 + i,
        namespace="ns",
        features=f"{i:016x}",
        flags=["time"],
        rules=["time_window"],
        policy="heuristic",
        widened="",
        steps=[LoggedStep("fact/warm/text", 16, 0.9, 100.0, "exact", 100.0, 0.8)],
        cost_units=150.0,
        full_cost_units=900.0,
        hits=3,
        took_micros=1200,
    )


def test_records_read_back_in_order_across_rotations_within_the_bound(tmp_path: Path) -> None:
    log = FileDecisionLog(tmp_path, max_bytes=4096, files=2)
    for i in range(400):
        log.write(record(i))
    log.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [NAME, f"{NAME}.1", f"{NAME}.2"]  # the oldest ones were deleted
    assert all(p.stat().st_size < 4096 + 512 for p in tmp_path.iterdir())
    got = [r.at for r in read_log(tmp_path)]
    assert got == sorted(got) and got[-1] == record(399).at and len(got) < 400
    assert log.dropped == 0


def torn_log(root: Path, n: int) -> None:
    """A log of `n` records whose last write a crash cut short."""
    log = FileDecisionLog(root, max_bytes=1 << 20, files=1)
    for i in range(n):
        log.write(record(i))
    log.close()
    path = root / NAME
    path.write_bytes(path.read_bytes()[:-5])


def test_a_frame_cut_short_ends_its_file(tmp_path: Path) -> None:
    torn_log(tmp_path, 3)
    assert [r.at for r in read_log(tmp_path)] == [record(0).at, record(1).at]


def test_pocketd_router_log_prints_the_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = FileDecisionLog(tmp_path / "router", max_bytes=1 << 20, files=1)
    for i in range(3):
        log.write(record(i))
    log.close()
    assert main(["router", "log", "--data-dir", str(tmp_path), "--last", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "heuristic" in lines[0] and "fact/warm/text:16:exact" in lines[0]
    assert main(["router", "log", "--data-dir", str(tmp_path), "--json"]) == 0
    objs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [o["features"] for o in objs] == [f"{i:016x}" for i in range(3)]
    assert main(["router", "log", "--data-dir", str(tmp_path / "nowhere")]) == 2


def test_a_torn_frame_is_cut_off_when_the_log_opens_again(tmp_path: Path) -> None:
    torn_log(tmp_path, 3)
    log = FileDecisionLog(tmp_path, max_bytes=1 << 20, files=1)  # the restart
    log.write(record(9))
    log.close()
    assert [r.at for r in read_log(tmp_path)] == [record(i).at for i in (0, 1, 9)]


def test_a_dead_writer_drops_records_and_never_blocks_close(tmp_path: Path) -> None:
    log = FileDecisionLog(tmp_path, max_bytes=1 << 20, files=1)
    log.close()  # the writer is gone, as after a failure
    for i in range(5000):  # more than the queue holds
        log.write(record(i))
    log.close(timeout=1.0)
    assert log.dropped == 5000


def test_train_takes_the_data_directory_from_the_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "pocketd.yaml"
    cfg.write_text(f"server:\n  data_dir: {tmp_path / 'elsewhere'}\n")
    assert main(["router", "train", "--config", str(cfg)]) == 2
    assert f"no decision log in {tmp_path / 'elsewhere' / 'router'}" in capsys.readouterr().err
