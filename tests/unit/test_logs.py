"""The process's log set-up: records written by a thread of their own, whole."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from server import logs


@pytest.fixture
def restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    logs.stop()
    root.handlers[:], root.level = handlers, level


def test_a_queued_record_is_written_whole_with_its_fields_and_traceback(
    restored: None, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure("INFO", "json")
    log = logging.getLogger("pocketd.test")
    args = ["v1"]
    log.info("call %s", args, extra={"fields": {"ms": 1.5}})
    args.append("changed after the call")  # the line says what it said when it was logged
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed %d", 7)
    log.debug("below the level")
    logs.stop()  # what was queued is written
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines()]
    assert [x["msg"] for x in lines] == ["call ['v1']", "failed 7"]
    assert lines[0]["ms"] == 1.5 and lines[0]["level"] == "INFO"
    assert "ValueError: boom" in lines[1]["exc"]


def test_the_text_format_keeps_the_traceback(
    restored: None, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure("WARNING", "text")
    try:
        raise KeyError("k")
    except KeyError:
        logging.getLogger("pocketd.test").exception("lost %s", "it")
    logs.stop()
    err = capsys.readouterr().err
    assert "ERROR pocketd.test: lost it" in err and "KeyError: 'k'" in err


def test_after_stop_records_are_written_in_place_and_a_full_queue_drops_and_counts(
    restored: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs, "QUEUED", 1)
    logs.configure("INFO", "text")
    listener = logs._listener
    assert listener is not None
    listener.stop()  # nothing writes: the queue fills
    log = logging.getLogger("pocketd.test")
    log.info("first")  # waits in the queue
    log.info("second")  # dropped
    listener.start()
    logs.stop()
    log.info("third")  # in place
    err = capsys.readouterr().err
    assert "first" in err and "second" not in err and "third" in err
    assert "1 log records were dropped" in err
