"""The OpenAI-compatible summariser (server/adapters/openai_summariser.py) against a stand-in
endpoint that the test starts (http.server on a free loopback port, in a thread): the request it
sends, the candidates it makes of the answer, and the extractive fallback, with one warning, on
an HTTP error, a timeout, a refused connection and answers that are not chat completions."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from server.adapters.openai_summariser import (
    OpenAISummariser,
    answer_lines,
    build_summariser,
)
from server.core.memory.model import Vector
from server.core.memory.summarise import Candidate, ExtractiveSummariser, Passage, Purpose
from server.core.settings import SessionEndSettings

T0 = 1_800_000_000.0
PASSAGES = [
    Passage(12, "My flight to Tokyo is on March 3.", "user", T0 + 60),
    Passage(11, "Hi! How can I help?", "assistant", T0),
    Passage(13, "我对海鲜过敏。", "user", T0 + 120),
]
KEYS = (11, 12, 13)  # in time order
FALLBACK = [Candidate("from the fallback", (12,), 3)]
Answer = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class StandIn:
    """What the stand-in endpoint was sent, and how it answers (`answer`, set by the test)."""

    answer: Answer
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""


def completion(content: str | None) -> Answer:
    """An answer in the chat-completions format, holding `content`."""
    body = json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "stand-in",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()
    return raw(200, body, "application/json")


def raw(status: int, body: bytes, kind: str = "text/plain") -> Answer:
    def send(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", kind)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return send


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    state = StandIn(completion("unused"))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.requests.append(
                {
                    "path": self.path,
                    "headers": dict(self.headers.items()),
                    "body": json.loads(self.rfile.read(length)),
                }
            )
            with contextlib.suppress(OSError):  # the client gave up (the timeout test)
                state.answer(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=60)


class RecordingFallback:
    """A stand-in for the extractive summariser: what it was asked, and a fixed answer."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Passage], int, Purpose]] = []

    def summarise(
        self, passages: Sequence[Passage], max_sentences: int, purpose: Purpose
    ) -> list[Candidate]:
        self.calls.append((list(passages), max_sentences, purpose))
        return FALLBACK


def summariser(
    url: str, fallback: RecordingFallback, timeout: float = 30.0, key: str | None = "sk-test"
) -> OpenAISummariser:
    return OpenAISummariser(url, "stand-in-model", key, timeout, fallback)


def test_the_request_and_the_candidates(stand_in: StandIn) -> None:
    stand_in.answer = completion("- Flight to Tokyo on March 3.\n2. 对海鲜过敏。\n\n  \n")
    fallback = RecordingFallback()
    got = summariser(stand_in.url + "/", fallback).summarise(PASSAGES, 3, "session")
    assert got == [
        Candidate("Flight to Tokyo on March 3.", KEYS, 4),
        Candidate("对海鲜过敏。", KEYS, 3),
    ]
    assert not fallback.calls
    (sent,) = stand_in.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    assert sent["headers"]["Content-Type"] == "application/json"
    body = sent["body"]
    assert body["model"] == "stand-in-model"
    assert body["temperature"] == 0
    system, user = body["messages"]
    assert system["role"] == "system" and "at most 3 standalone facts" in system["content"]
    assert "one per line" in system["content"] and "language" in system["content"]
    assert user == {
        "role": "user",
        "content": "assistant: Hi! How can I help?\n"
        "user: My flight to Tokyo is on March 3.\n"
        "user: 我对海鲜过敏。",
    }


def test_no_more_lines_than_asked_and_a_topic_is_one_record(stand_in: StandIn) -> None:
    stand_in.answer = completion("One fact.\nTwo facts.\nThree facts.\nFour facts.")
    s = summariser(stand_in.url, RecordingFallback())
    assert [c.text for c in s.summarise(PASSAGES, 2, "session")] == ["One fact.", "Two facts."]
    assert s.summarise(PASSAGES, 3, "topic") == [
        Candidate("One fact. Two facts. Three facts.", KEYS, 3)
    ]
    assert "one topic" in stand_in.requests[-1]["body"]["messages"][0]["content"]


def test_without_a_key_no_authorization_is_sent(stand_in: StandIn) -> None:
    stand_in.answer = completion("A fact.")
    summariser(stand_in.url, RecordingFallback(), key=None).summarise(PASSAGES, 2, "session")
    assert "Authorization" not in stand_in.requests[0]["headers"]


def assert_fell_back(
    s: OpenAISummariser,
    fallback: RecordingFallback,
    caplog: pytest.LogCaptureFixture,
    reason: str,
) -> None:
    with caplog.at_level(logging.WARNING, logger="server.adapters.openai_summariser"):
        assert s.summarise(PASSAGES, 3, "session") == FALLBACK
    assert fallback.calls == [(PASSAGES, 3, "session")]
    (warning,) = caplog.records
    assert warning.levelno == logging.WARNING and reason in warning.getMessage()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (raw(500, b"internal error"), "HTTP 500"),
        (raw(200, b"<html>not json</html>", "text/html"), "DecodeError"),
        (raw(200, b'{"error": {"message": "overloaded"}}', "application/json"), "Validation"),
        (completion(None), "no lines"),
        (completion("\n - \n"), "no lines"),
        (raw(200, b'{"choices": []}', "application/json"), "no lines"),
    ],
    ids=["500", "html", "not-a-completion", "null-content", "blank-lines", "no-choices"],
)
def test_an_unusable_answer_falls_back(
    stand_in: StandIn, caplog: pytest.LogCaptureFixture, answer: Answer, reason: str
) -> None:
    stand_in.answer = answer
    fallback = RecordingFallback()
    assert_fell_back(summariser(stand_in.url, fallback), fallback, caplog, reason)


def test_a_slow_endpoint_falls_back_at_the_timeout(
    stand_in: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()

    def wait_then_answer(h: BaseHTTPRequestHandler) -> None:
        release.wait(timeout=120)
        completion("Too late.")(h)

    stand_in.answer = wait_then_answer
    fallback = RecordingFallback()
    try:
        assert_fell_back(summariser(stand_in.url, fallback, timeout=0.2), fallback, caplog, "")
        assert "timed out" in caplog.records[0].getMessage().lower()
    finally:
        release.set()


def test_a_refused_connection_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:  # a loopback port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    fallback = RecordingFallback()
    assert_fell_back(
        summariser(f"http://127.0.0.1:{port}/v1", fallback), fallback, caplog, "URLError"
    )


def test_no_passages_ask_nothing(stand_in: StandIn) -> None:
    fallback = RecordingFallback()
    assert summariser(stand_in.url, fallback).summarise([], 3, "session") == []
    assert summariser(stand_in.url, fallback).summarise(PASSAGES, 0, "topic") == []
    assert not stand_in.requests and not fallback.calls


def test_answer_lines_drop_list_markers() -> None:
    content = "1. 一\n2) two\n（3）三\n4、四\n* five\n• six\n- \nseven 7.5"
    assert answer_lines(content) == ["一", "two", "三", "四", "five", "six", "seven 7.5"]


def one_vector(texts: Sequence[str]) -> Vector:
    return np.tile(np.eye(1, 4, dtype=np.float32), (len(texts), 1))


def test_the_configured_summariser(stand_in: StandIn) -> None:
    assert isinstance(build_summariser(SessionEndSettings(), one_vector), ExtractiveSummariser)
    settings = SessionEndSettings(
        summariser="openai",
        openai_url=stand_in.url,
        openai_model="m-1",
        openai_key_env="STAND_IN_KEY",
        openai_timeout_seconds=5.0,
    )
    stand_in.answer = completion("A fact.")
    s = build_summariser(settings, one_vector, {"STAND_IN_KEY": "sk-env"})
    assert s.summarise(PASSAGES, 2, "session") == [Candidate("A fact.", KEYS, 3)]
    assert stand_in.requests[0]["headers"]["Authorization"] == "Bearer sk-env"
    assert stand_in.requests[0]["body"]["model"] == "m-1"
    # The key's variable unset: no key.
    build_summariser(settings, one_vector, {}).summarise(PASSAGES, 2, "session")
    assert "Authorization" not in stand_in.requests[1]["headers"]
    # A failing endpoint falls back to the extractive summary over the same encoder.
    stand_in.answer = raw(503, b"")
    got = build_summariser(settings, one_vector, {}).summarise(PASSAGES, 2, "session")
    assert got == [Candidate("assistant: How can I help?", (11,), 3)]  # one vector: the first


def test_a_bad_endpoint_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="openai_url"):
        build_summariser(SessionEndSettings(summariser="openai"), one_vector, {})
    with pytest.raises(ValueError, match="http"):
        OpenAISummariser("file:///etc/passwd", "m", None, 1.0, RecordingFallback())
