"""`Client` (blocking) and `AsyncClient` (asyncio) for pocketd's MemoryService.

Every call has a deadline (`timeout` seconds, default 5; a batch's and a reconciliation's grow
with their size, `maintain` waits up to `MAINTAIN_TIMEOUT`, and a write that waits for its
medium to be read up to `requests.MEDIA_WAIT_TIMEOUT`). Recall, Get and Stats are
retried by gRPC on UNAVAILABLE (see `requests.RETRY_SERVICE_CONFIG`); writes are not, since
repeating a write without a client-chosen `memory_id` could store it twice. Errors surface as
`grpc.RpcError` with the server's status and rich details.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from pocketd.requests import (
    Fact,
    MemoryInput,
    Tls,
    batch_timeout,
    explain_request,
    forget_request,
    get_request,
    image_recall_request,
    list_request,
    media_input,
    memory_filter,
    open_channel,
    recall_request,
    reconcile_request,
    write_timeout,
)
from pocketd.tasks import AsyncTask, Task
from pocketd.types import (
    MaintainReport,
    Memory,
    Page,
    RecallResult,
    ReconcileResult,
    RememberResult,
    SessionEnd,
    Stats,
)
from pocketd.v1 import ledger_service_pb2 as lpb
from pocketd.v1 import memory_service_pb2 as spb
from pocketd.v1 import memory_service_pb2_grpc as spb_grpc

DEFAULT_TIMEOUT = 5.0
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# A maintenance run may take a while: wait as long as the server lets a call run
# (`server.max_call_seconds`, 60 s by default) unless the client's timeout is longer.
MAINTAIN_TIMEOUT = 60.0


class Client:
    """A blocking client. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        target: str = "127.0.0.1:50051",
        timeout: float = DEFAULT_TIMEOUT,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        token: str | None = None,
        tls: Tls | None = None,
        allow_insecure_token: bool = False,
    ) -> None:
        """`token`: the bearer token (`auth.tokens` on the server); `tls`: connect over TLS.
        Without TLS a token would go in the clear, so it goes only to loopback
        (`InsecureTokenError`) unless `allow_insecure_token`."""
        self.timeout = timeout
        self._channel = open_channel(
            target,
            max_message_bytes,
            token,
            tls,
            sync=True,
            allow_insecure_token=allow_insecure_token,
        )
        self._stub = spb_grpc.MemoryServiceStub(self._channel)

    def remember(self, namespace: str, text: str = "", **fields: Any) -> RememberResult:
        """Store one memory; `fields` are those of `MemoryInput` (kind, vector, importance, …)."""
        return self._remember(MemoryInput(namespace=namespace, text=text, **fields))

    def remember_image(
        self,
        namespace: str,
        data: bytes,
        *,
        caption: str = "",
        kind: str | int = "observation",
        wait: bool = False,
        **fields: Any,
    ) -> RememberResult:
        """Store an image (PNG, JPEG, GIF, WebP or BMP bytes; a screenshot, a photo): pocketd
        keeps it, reads its text (OCR) and, with an image space, its vector. `caption` is kept
        as its description (without one, the OCR text is). The reply comes once the image is
        durable, `processing_state` "processing"; with `wait`, once it is read (up to
        `MEDIA_WAIT_TIMEOUT`), saying what the gate and the alignment check decided. `fields`
        are `MemoryInput`'s: session_id, speaker, occurred_at, tags, group_id, importance, …"""
        item = media_input(namespace, "image", data, caption, kind=kind, wait=wait, **fields)
        return self._remember(item)

    def remember_audio(
        self,
        namespace: str,
        data: bytes,
        *,
        caption: str = "",
        language: str = "",
        kind: str | int = "observation",
        wait: bool = False,
        **fields: Any,
    ) -> RememberResult:
        """Store a recording (WAV, FLAC, OGG, MP3 or M4A bytes; a voice note): pocketd keeps it
        and transcribes it. `language`: "en", "zh" or "auto" ("": the server's
        `media.speech.default_language`); `caption`: a caption or a transcript of your own;
        `wait` and `fields` as `remember_image`'s."""
        item = media_input(
            namespace, "audio", data, caption, kind=kind, wait=wait, language=language, **fields
        )
        return self._remember(item)

    def remember_table(
        self,
        namespace: str,
        data: bytes | str,
        *,
        caption: str = "",
        kind: str | int = "observation",
        wait: bool = False,
        **fields: Any,
    ) -> RememberResult:
        """Store a table (CSV, TSV or Markdown, as bytes or text): pocketd keeps it and
        linearises it into "column: value" rows, its column names as tags (rows past
        `media.table.max_rows` are counted in the reply's `warnings`); `caption`, `wait` and
        `fields` as `remember_image`'s."""
        item = media_input(namespace, "table", data, caption, kind=kind, wait=wait, **fields)
        return self._remember(item)

    def _remember(self, item: MemoryInput) -> RememberResult:
        timeout = write_timeout(self.timeout, [item])
        return RememberResult.from_pb(self._stub.Remember(item.to_pb(), timeout=timeout))

    def remember_batch(self, items: Sequence[MemoryInput]) -> list[RememberResult]:
        """Store many memories in one transaction; the deadline grows with the batch."""
        req = spb.RememberBatchRequest(items=[i.to_pb() for i in items])
        resp = self._stub.RememberBatch(
            req, timeout=write_timeout(batch_timeout(self.timeout, len(items)), items)
        )
        return [RememberResult.from_pb(r) for r in resp.results]

    def recall(self, namespace: str, text: str = "", **options: Any) -> RecallResult:
        """Hybrid search. `options`: vector, top_k, image, include_obsolete, include_expired,
        include_cold (the cold archive too), min_score (the relevance floor, None: the
        server's 0.1), as_of, context_turns, plan ((pocket, depth) steps), route_policy,
        space_vectors ({space: vector}), image_data or image_sha256 (see `recall_by_image`),
        and the filter fields of `requests.memory_filter`."""
        req = recall_request(namespace, text, **options)
        return RecallResult.from_pb(self._stub.Recall(req, timeout=self.timeout))

    def recall_by_image(
        self,
        namespace: str,
        data: bytes | None = None,
        *,
        sha256: str = "",
        query_text: str = "",
        **options: Any,
    ) -> RecallResult:
        """Recall by an image: its bytes, or `sha256` alone naming a blob pocketd holds (a
        Memory's `blob.sha256`). The server encodes it into its image space (FAILED_PRECONDITION
        without one) and weighs the vector channel as for an image query; `query_text` may add
        words. `options` as `recall`'s (top_k, min_score, filter fields, …)."""
        req = image_recall_request(namespace, data, sha256, query_text, **options)
        return RecallResult.from_pb(self._stub.Recall(req, timeout=self.timeout))

    def explain(
        self,
        namespace: str,
        text: str = "",
        policies: Sequence[str] = (),
        run: bool = False,
        **options: Any,
    ) -> spb.ExplainResponse:
        """The plan each routing policy would choose for this Recall (`options` as `recall`'s),
        with the route features; `run`: also each plan's result."""
        req = explain_request(namespace, text, policies, run, **options)
        resp: spb.ExplainResponse = self._stub.Explain(req, timeout=self.timeout)
        return resp

    def list(
        self, namespace: str, page_size: int | None = None, page_token: str = "", **filters: Any
    ) -> Page:
        """One page of List; `filters` are those of `requests.memory_filter`."""
        req = list_request(namespace, page_size, page_token, **filters)
        return Page.from_pb(self._stub.List(req, timeout=self.timeout))

    def get(
        self,
        namespace: str,
        memory_id: str,
        include_vector: bool = False,
        include_blob_data: bool = False,
    ) -> Memory:
        """One memory by id; `include_blob_data`: its medium's bytes too (in `blob.data`)."""
        req = get_request(namespace, memory_id, include_vector, include_blob_data)
        return Memory.from_pb(self._stub.Get(req, timeout=self.timeout).record)

    def forget(
        self,
        namespace: str,
        memory_id: str | None = None,
        *,
        all: bool = False,
        **filter_fields: Any,
    ) -> int:
        """Forget one memory by id, or every memory matching the filter (`all=True` for all)."""
        flt = None if memory_id is not None else memory_filter(**filter_fields)
        req = forget_request(namespace, memory_id, flt, all)
        return int(self._stub.Forget(req, timeout=self.timeout).forgotten_count)

    def stats(self, namespace: str = "") -> Stats:
        return Stats.from_pb(
            self._stub.Stats(spb.StatsRequest(namespace=namespace), timeout=self.timeout)
        )

    def reconcile(
        self, namespace: str, facts: Sequence[Fact | str], dry_run: bool = False
    ) -> ReconcileResult:
        """Store authoritative facts (`Fact`, or a plain text) and mark the current memories on
        their topic that they contradict obsolete (reason "reconcile"); `dry_run`: only say
        what would be marked."""
        req = reconcile_request(namespace, facts, dry_run)
        resp = self._stub.Reconcile(req, timeout=batch_timeout(self.timeout, len(facts)))
        return ReconcileResult.from_pb(resp)

    def unsupersede(self, namespace: str, memory_ids: Sequence[str]) -> tuple[str, ...]:
        """Make obsolete memories current again; returns the ids that were obsolete."""
        req = spb.UnsupersedeRequest(namespace=namespace, memory_ids=list(memory_ids))
        return tuple(self._stub.Unsupersede(req, timeout=self.timeout).restored)

    def end_session(self, namespace: str, session_id: str) -> SessionEnd:
        """End a session: its turns are summarised into warm memories and move to warm."""
        req = spb.EndSessionRequest(namespace=namespace, session_id=session_id)
        return SessionEnd.from_pb(self._stub.EndSession(req, timeout=self.timeout))

    def maintain(self, namespace: str = "") -> MaintainReport:
        """Run the lifecycle maintenance now, over one namespace or ("") every one the token
        sees (a token must grant every namespace to ask for all); it waits for a run already
        under way, then runs, for up to `MAINTAIN_TIMEOUT` or the client's timeout."""
        req = spb.MaintainRequest(namespace=namespace)
        wait = max(self.timeout, MAINTAIN_TIMEOUT)
        return MaintainReport.from_pb(self._stub.Maintain(req, timeout=wait))

    def task(
        self,
        task_id: str,
        budget: lpb.TaskBudget,
        namespace: str,
        goal: str = "",
        session_id: str = "",
    ) -> Task:
        """An agent task (`pocketd.tasks.Task`): its budget opened on entering the `with`
        block and closed (with its bill) on leaving it; `Task.step` runs its rounds."""
        return Task(self._channel, task_id, budget, namespace, session_id, self.timeout, goal=goal)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClient:
    """The asyncio client; same methods as `Client`, awaited. Use `async with`."""

    def __init__(
        self,
        target: str = "127.0.0.1:50051",
        timeout: float = DEFAULT_TIMEOUT,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        token: str | None = None,
        tls: Tls | None = None,
        allow_insecure_token: bool = False,
    ) -> None:
        """`token`: the bearer token (`auth.tokens` on the server); `tls`: connect over TLS.
        Without TLS a token would go in the clear, so it goes only to loopback
        (`InsecureTokenError`) unless `allow_insecure_token`."""
        self.timeout = timeout
        self._channel = open_channel(
            target,
            max_message_bytes,
            token,
            tls,
            sync=False,
            allow_insecure_token=allow_insecure_token,
        )
        self._stub = spb_grpc.MemoryServiceStub(self._channel)

    def task(
        self,
        task_id: str,
        budget: lpb.TaskBudget,
        namespace: str,
        goal: str = "",
        session_id: str = "",
    ) -> AsyncTask:
        """`Client.task` for asyncio: `async with client.task(...) as t: await t.step(...)`."""
        return AsyncTask(
            self._channel, task_id, budget, namespace, session_id, self.timeout, goal=goal
        )

    async def remember(self, namespace: str, text: str = "", **fields: Any) -> RememberResult:
        return await self._remember(MemoryInput(namespace=namespace, text=text, **fields))

    async def remember_image(
        self,
        namespace: str,
        data: bytes,
        *,
        caption: str = "",
        kind: str | int = "observation",
        wait: bool = False,
        **fields: Any,
    ) -> RememberResult:
        """As `Client.remember_image`."""
        item = media_input(namespace, "image", data, caption, kind=kind, wait=wait, **fields)
        return await self._remember(item)

    async def remember_audio(
        self,
        namespace: str,
        data: bytes,
        *,
        caption: str = "",
        language: str = "",
        kind: str | int = "observation",
        wait: bool = False,
        **fields: Any,
    ) -> RememberResult:
        """As `Client.remember_audio`."""
        item = media_input(
            namespace, "audio", data, caption, kind=kind, wait=wait, language=language, **fields
        )
        return await self._remember(item)

    async def remember_table(
        self,
        namespace: str,
        data: bytes | str,
        *,
        caption: str = "",
        kind: str | int = "observation",
        wait: bool = False,
        **fields: Any,
    ) -> RememberResult:
        """As `Client.remember_table`."""
        item = media_input(namespace, "table", data, caption, kind=kind, wait=wait, **fields)
        return await self._remember(item)

    async def _remember(self, item: MemoryInput) -> RememberResult:
        timeout = write_timeout(self.timeout, [item])
        return RememberResult.from_pb(await self._stub.Remember(item.to_pb(), timeout=timeout))

    async def remember_batch(self, items: Sequence[MemoryInput]) -> list[RememberResult]:
        """Store many memories in one transaction; the deadline grows with the batch."""
        req = spb.RememberBatchRequest(items=[i.to_pb() for i in items])
        resp = await self._stub.RememberBatch(
            req, timeout=write_timeout(batch_timeout(self.timeout, len(items)), items)
        )
        return [RememberResult.from_pb(r) for r in resp.results]

    async def recall(self, namespace: str, text: str = "", **options: Any) -> RecallResult:
        """As `Client.recall`."""
        req = recall_request(namespace, text, **options)
        return RecallResult.from_pb(await self._stub.Recall(req, timeout=self.timeout))

    async def recall_by_image(
        self,
        namespace: str,
        data: bytes | None = None,
        *,
        sha256: str = "",
        query_text: str = "",
        **options: Any,
    ) -> RecallResult:
        """As `Client.recall_by_image`."""
        req = image_recall_request(namespace, data, sha256, query_text, **options)
        return RecallResult.from_pb(await self._stub.Recall(req, timeout=self.timeout))

    async def explain(
        self,
        namespace: str,
        text: str = "",
        policies: Sequence[str] = (),
        run: bool = False,
        **options: Any,
    ) -> spb.ExplainResponse:
        """As `Client.explain`."""
        req = explain_request(namespace, text, policies, run, **options)
        resp: spb.ExplainResponse = await self._stub.Explain(req, timeout=self.timeout)
        return resp

    async def list(
        self, namespace: str, page_size: int | None = None, page_token: str = "", **filters: Any
    ) -> Page:
        """One page of List; `filters` are those of `requests.memory_filter`."""
        req = list_request(namespace, page_size, page_token, **filters)
        return Page.from_pb(await self._stub.List(req, timeout=self.timeout))

    async def get(
        self,
        namespace: str,
        memory_id: str,
        include_vector: bool = False,
        include_blob_data: bool = False,
    ) -> Memory:
        """As `Client.get`."""
        req = get_request(namespace, memory_id, include_vector, include_blob_data)
        return Memory.from_pb((await self._stub.Get(req, timeout=self.timeout)).record)

    async def forget(
        self,
        namespace: str,
        memory_id: str | None = None,
        *,
        all: bool = False,
        **filter_fields: Any,
    ) -> int:
        flt = None if memory_id is not None else memory_filter(**filter_fields)
        req = forget_request(namespace, memory_id, flt, all)
        return int((await self._stub.Forget(req, timeout=self.timeout)).forgotten_count)

    async def stats(self, namespace: str = "") -> Stats:
        resp = await self._stub.Stats(spb.StatsRequest(namespace=namespace), timeout=self.timeout)
        return Stats.from_pb(resp)

    async def reconcile(
        self, namespace: str, facts: Sequence[Fact | str], dry_run: bool = False
    ) -> ReconcileResult:
        """As `Client.reconcile`."""
        req = reconcile_request(namespace, facts, dry_run)
        resp = await self._stub.Reconcile(req, timeout=batch_timeout(self.timeout, len(facts)))
        return ReconcileResult.from_pb(resp)

    async def unsupersede(self, namespace: str, memory_ids: Sequence[str]) -> tuple[str, ...]:
        """As `Client.unsupersede`."""
        req = spb.UnsupersedeRequest(namespace=namespace, memory_ids=list(memory_ids))
        return tuple((await self._stub.Unsupersede(req, timeout=self.timeout)).restored)

    async def end_session(self, namespace: str, session_id: str) -> SessionEnd:
        """As `Client.end_session`."""
        req = spb.EndSessionRequest(namespace=namespace, session_id=session_id)
        return SessionEnd.from_pb(await self._stub.EndSession(req, timeout=self.timeout))

    async def maintain(self, namespace: str = "") -> MaintainReport:
        """As `Client.maintain`."""
        req = spb.MaintainRequest(namespace=namespace)
        wait = max(self.timeout, MAINTAIN_TIMEOUT)
        return MaintainReport.from_pb(await self._stub.Maintain(req, timeout=wait))

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
