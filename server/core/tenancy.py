"""Tenants: who a call acts for, and the names its state is kept under.

A tenant owns namespaces and tasks. The core keeps every namespace and task id under its tenant's
scope (`Tenant.scope`): the `default` tenant's names as they are (a server without
authentication, and the data it kept before tenants existed), another tenant's as
`<tenant>~<name>`. `~` is not allowed in a namespace or a task id on the wire, so no name of one
tenant can be spelt as a name of another. So every piece of state keyed by a namespace or a task
(records, pockets, keyword statistics, router models, the ledger's tasks and their idempotency
keys, the agent loop's sessions) is partitioned by tenant, and the caches that are keyed by
text alone are partitioned by `tenant_of` (`memo.Partitioned`).

The tenant is passed explicitly, in the scoped names: a contextvar set in an aio interceptor does
not reach a handler that runs in an executor (grpc #37881).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

DEFAULT = "default"
SEP = "~"
TENANT_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
TENANT_RULE = "must be 1-32 characters of [a-z0-9_-], starting with a letter or digit"


@dataclass(frozen=True)
class Tenant:
    """One caller's tenant and what its credential grants: the namespaces it may use (globs,
    `*` matching any run of characters, `/` included) and whether it may see the server's own
    figures (`admin`, a token for the operator: Stats' index revisions and pending count, which
    count every tenant's writes)."""

    name: str = DEFAULT
    grants: tuple[str, ...] = ("*",)
    admin: bool = True

    def scope(self, name: str) -> str:
        """A wire namespace or task id as the core keeps it."""
        return name if self.name == DEFAULT else f"{self.name}{SEP}{name}"

    def unscope(self, scoped: str) -> str | None:
        """A kept name as this tenant spells it; None when it is another tenant's."""
        if self.name == DEFAULT:
            return None if SEP in scoped else scoped
        head, sep, rest = scoped.partition(SEP)
        return rest if sep and head == self.name else None

    def may_use(self, namespace: str) -> bool:
        """Whether the credential grants this (wire) namespace."""
        return any(fnmatchcase(namespace, g) for g in self.grants)

    def sees(self, scoped: str) -> bool:
        """Whether a kept namespace is this tenant's and granted to the credential."""
        name = self.unscope(scoped)
        return name is not None and self.may_use(name)


ANONYMOUS = Tenant()


_SCOPED = re.compile(r"(?<![A-Za-z0-9_.:/@+=-])[a-z0-9][a-z0-9_-]{0,31}" + SEP)


def unscoped_text(text: str) -> str:
    """A message as the caller spells its names: every kept name's tenant prefix dropped (no
    wire name holds `~`, so only a kept name can)."""
    return _SCOPED.sub("", text) if SEP in text else text


def tenant_of(scoped: str) -> str:
    """The tenant a kept namespace or task id belongs to."""
    head, sep, _ = scoped.partition(SEP)
    return head if sep else DEFAULT


def tenant_wide(scoped: str) -> str:
    """The name that stands for a kept namespace's whole tenant (its router model's scope):
    "" for the default tenant, `<tenant>~` for another."""
    return Tenant(tenant_of(scoped)).scope("")


def in_target(scoped: str, target: str) -> bool:
    """Whether a kept namespace is `target`: that namespace, or (a `tenant_wide` name) any of
    that tenant's namespaces."""
    if target == tenant_wide(target):
        return tenant_wide(scoped) == target
    return scoped == target
