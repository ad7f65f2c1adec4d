"""Who a call acts for: bearer tokens in metadata, checked by an interceptor.

`authorization: Bearer <token>`: the token's SHA-256 is looked up among `auth.tokens` (stored
hashed, compared in constant time), which names its tenant and the namespaces it may use. Without
a valid token a pocketd call is UNAUTHENTICATED before its handler runs; health and reflection
answer anyone (probes and tooling carry no token). With no tokens configured every call acts for
the default tenant (allowed only on loopback unless `server.allow_unauthenticated`).

The tenant reaches the handler explicitly, as an attribute of the context it is given
(`TenantContext`): a contextvar set here would not reach a handler that runs in an executor
(grpc #37881). Which namespace a request may use is checked by the handler
(`Handler._call`), which knows the request's namespaces: PERMISSION_DENIED.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from server.api.guard import behaviour_slot
from server.api.observe import call_info
from server.core.settings import AuthSettings
from server.core.tenancy import ANONYMOUS, Tenant

PROTECTED_PREFIX = "/pocketd."
_BEARER = "bearer "


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Authenticator:
    """The configured tokens, by hash."""

    def __init__(self, settings: AuthSettings) -> None:
        self._tokens = {
            t.sha256: Tenant(t.tenant, tuple(t.namespaces), t.admin) for t in settings.tokens
        }

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def tenant(self, metadata: Any) -> Tenant | None:
        """The caller's tenant from its metadata, or None when it has no valid token."""
        if not self._tokens:
            return ANONYMOUS
        header = ""
        for key, value in metadata or ():
            if key == "authorization":
                header = value if isinstance(value, str) else ""
                break
        if header[: len(_BEARER)].lower() != _BEARER:
            return None
        digest = token_sha256(header[len(_BEARER) :].strip())
        found = None
        for known, tenant in self._tokens.items():  # every entry: no timing of which one
            if hmac.compare_digest(known, digest):
                found = tenant
        return found


class TenantContext:
    """The servicer context, carrying the caller's `tenant`."""

    def __init__(self, context: Any, tenant: Tenant) -> None:
        self._context = context
        self.tenant = tenant
        info = call_info(context)
        if info is not None:  # the metrics and the log line name the tenant
            info.tenant = tenant.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def call_tenant(context: Any) -> Tenant:
    """The tenant `AuthGuard` attached to this call's context."""
    tenant = getattr(context, "tenant", None)
    if not isinstance(tenant, Tenant):
        raise RuntimeError("the call did not pass AuthGuard")  # a wiring bug, never the client's
    return tenant


async def _unauthenticated(context: Any) -> None:
    await context.abort(
        grpc.StatusCode.UNAUTHENTICATED,
        "a valid token is required: send metadata 'authorization: Bearer <token>'",
    )


class AuthGuard(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Authenticates every pocketd call and hands its tenant to the handler."""

    def __init__(self, auth: Authenticator) -> None:
        self._auth = auth

    async def intercept_service(
        self, continuation: Callable[[Any], Awaitable[Any]], details: Any
    ) -> Any:
        handler = await continuation(details)
        if handler is None or not details.method.startswith(PROTECTED_PREFIX):
            return handler
        tenant = self._auth.tenant(details.invocation_metadata)
        slot = behaviour_slot(handler)
        if tenant is None:  # refused before its bytes are even parsed
            return handler._replace(
                request_deserializer=_unparsed, **{slot: _with_tenant(getattr(handler, slot), None)}
            )
        return handler._replace(**{slot: _with_tenant(getattr(handler, slot), tenant)})


def _unparsed(data: bytes) -> None:
    return None


def _with_tenant(behaviour: Callable[..., Any], tenant: Tenant | None) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(behaviour):

        async def stream_out(request: Any, context: Any) -> AsyncIterator[Any]:
            if tenant is None:
                await _unauthenticated(context)
            async for r in behaviour(request, TenantContext(context, tenant)):  # type: ignore[arg-type]
                yield r

        return stream_out

    async def unary_out(request: Any, context: Any) -> Any:
        if tenant is None:
            await _unauthenticated(context)
        out = behaviour(request, TenantContext(context, tenant))  # type: ignore[arg-type]
        return await out if inspect.isawaitable(out) else out

    return unary_out
