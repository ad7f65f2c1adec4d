"""Session-end and topic summaries from an OpenAI-compatible chat-completions endpoint
(`memory.lifecycle.session_end.summariser: openai`), with the local extractive summary as the
fallback; and `build_summariser`, which the composition root calls to get the configured one.

The endpoint is optional and may be anything that speaks `POST {url}/chat/completions` (OpenAI, a
vLLM or llama.cpp server, a gateway): the request asks, at temperature 0, for at most N
standalone facts, one per line, in the passages' language. A line cannot be traced to the turn
it came from, so each candidate is derived from every passage. Any failure (a refused
connection, an HTTP error, the timeout, an answer that is not a chat completion, no lines) logs
one warning and returns the extractive summary instead: a session's end never loses its summary
to the network.

Only the standard library speaks HTTP here (`urllib.request`, which honours the usual proxy
variables), so the option costs no dependency.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from http.client import HTTPException

import msgspec

from server.core.memory.model import Vector
from server.core.memory.summarise import (
    Candidate,
    ExtractiveSummariser,
    Passage,
    Purpose,
    Summariser,
    in_time_order,
    shape,
)
from server.core.settings import SessionEndSettings

log = logging.getLogger(__name__)

# An answer longer than this is not a handful of facts.
MAX_ANSWER_BYTES = 1 << 20

_PROMPTS: dict[Purpose, str] = {
    "session": (
        "You turn a conversation into long-term memories. Write at most {n} standalone facts "
        "worth remembering from it: one per line, each understandable on its own (names, not "
        "pronouns), with no numbering, bullets, headings or commentary. Leave out greetings and "
        "small talk. Write in the language the conversation is written in."
    ),
    "topic": (
        "You summarise notes on one topic. Write at most {n} standalone sentences that keep the "
        "facts the notes state: one per line, with no numbering, bullets, headings or "
        "commentary. Write in the language the notes are written in."
    ),
}
# A list marker a model puts before a line despite being asked not to: "- ", "* ", "1. ", "2)",
# "（3）", "4、".
_MARKER = re.compile(r"^(?:[-*•·]+|\d{1,3}[.)、]|[(（]\d{1,3}[)）])\s*")


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class _Completion(msgspec.Struct):
    choices: list[_Choice]


class SummaryError(Exception):
    """The endpoint gave no usable summary (the reason in words)."""


class OpenAISummariser:
    """A `Summariser` over an OpenAI-compatible endpoint, falling back to `fallback`."""

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None,
        timeout_seconds: float,
        fallback: Summariser,
    ) -> None:
        """`url`: the API's base (…/v1); `api_key`: sent as a bearer token when given;
        `timeout_seconds`: the whole request's limit (connecting, waiting, reading)."""
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"the summary endpoint must be an http(s) URL, not {url!r}")
        self._endpoint = url.rstrip("/") + "/chat/completions"
        self._model = model
        self._key = api_key or None
        self._timeout = timeout_seconds
        self._fallback = fallback

    def summarise(
        self, passages: Sequence[Passage], max_sentences: int, purpose: Purpose
    ) -> list[Candidate]:
        if not passages or max_sentences < 1:
            return []
        ordered = in_time_order(passages)
        try:
            lines = self._ask(ordered, max_sentences, purpose)
        except SummaryError as e:
            log.warning(
                "summary endpoint %s failed (%s); the extractive summary is used instead",
                self._endpoint,
                e,
            )
            return self._fallback.summarise(passages, max_sentences, purpose)
        keys = tuple(dict.fromkeys(p.key for p in ordered))
        return shape(lines, [keys] * len(lines), ordered, purpose)

    def _ask(self, passages: Sequence[Passage], n: int, purpose: Purpose) -> list[str]:
        """The endpoint's lines (at most `n`), or `SummaryError`."""
        body = json.dumps(
            {
                "model": self._model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": _PROMPTS[purpose].format(n=n)},
                    {"role": "user", "content": transcript(passages)},
                ],
            },
            ensure_ascii=False,
        ).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self._endpoint, body, headers, method="POST")
        try:
            answer = self._post(request)
            completion = msgspec.json.decode(answer, type=_Completion)
        except urllib.error.HTTPError as e:
            e.close()
            raise SummaryError(f"HTTP {e.code}") from e
        except (OSError, HTTPException, ValueError) as e:  # timeouts, refusals, not JSON
            raise SummaryError(f"{type(e).__name__}: {e}") from e
        content = completion.choices[0].message.content if completion.choices else None
        lines = answer_lines(content or "")[:n]
        if not lines:
            raise SummaryError("no lines in the answer")
        return lines

    def _post(self, request: urllib.request.Request) -> bytes:
        """The answer's bytes, within the timeout: no socket operation waits longer, and an
        answer still trickling in when it has passed is given up."""
        deadline = time.monotonic() + self._timeout
        with urllib.request.urlopen(request, timeout=self._timeout) as response:
            out = bytearray()
            while chunk := response.read1(1 << 16):
                out += chunk
                if len(out) > MAX_ANSWER_BYTES:
                    raise ValueError(f"answer over {MAX_ANSWER_BYTES} bytes")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"answer not read in {self._timeout:g} s")
            return bytes(out)


def transcript(passages: Sequence[Passage]) -> str:
    """The passages as the request's text, one per line, after their speaker when named."""
    return "\n".join(f"{p.speaker}: {p.text}" if p.speaker else p.text for p in passages)


def answer_lines(content: str) -> list[str]:
    """An answer's non-empty lines, without the list markers a model may add."""
    return [line for raw in content.splitlines() if (line := _MARKER.sub("", raw.strip()))]


def build_summariser(
    settings: SessionEndSettings,
    encode: Callable[[Sequence[str]], Vector],
    environ: Mapping[str, str] = os.environ,
) -> Summariser:
    """The configured summariser: the extractive one over `encode` (the built-in encoder's), or
    the endpoint's with it as the fallback. The key is read from `environ` here, once."""
    extractive = ExtractiveSummariser(encode)
    if settings.summariser == "extractive":
        return extractive
    if not settings.openai_url:
        raise ValueError(
            "memory.lifecycle.session_end.openai_url is required with summariser: openai"
        )
    key = environ.get(settings.openai_key_env) if settings.openai_key_env else None
    return OpenAISummariser(
        settings.openai_url,
        settings.openai_model,
        key,
        settings.openai_timeout_seconds,
        extractive,
    )
