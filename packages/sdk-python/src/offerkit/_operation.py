"""One SDK operation: how a method maps onto its route (the generated table lists them all)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Operation:
    name: str
    """The route's SDK name, as the TypeScript SDK has it: `plans.attachEntitlement`."""
    python_name: str
    """The Python method: `plans.attach_entitlement`."""
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    """The OpenAPI path, `/apps/{appId}/plans/{planId}/entitlements`."""
    params: tuple[str, ...]
    """Path parameters after the app id, in the order the method takes them."""
    body: bool
    query: bool
    paginated: Literal["page", "cursor"] | None
    """A list: `page` (`page` / `per_page`) or `cursor` (`limit` / `cursor`)."""
    auth: tuple[Literal["S", "P", "T"], ...]
    """Credentials that may call it: S secret key, P publishable key, T account token."""
