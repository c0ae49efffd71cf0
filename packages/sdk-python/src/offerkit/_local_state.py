"""What the local evaluator keeps per account (its access, reserved amounts, acknowledged counts, a load in flight),
its counters, and the pool rule behind `can` for a feature that draws credits."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ._generated.models import Access, AccessEntitlementCredits


@dataclass
class LocalStats:
    """Counters for tests and benchmarks: events applied, reconnections, resyncs, account reads."""

    events: int = 0
    reconnects: int = 0
    resyncs: int = 0
    loads: int = 0


class Loading:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


class Known:
    """An account asked about: its access once read, reserved amounts, this process's last acknowledged counts."""

    def __init__(self) -> None:
        self.access: Access | None = None
        # Per entitlement: reserved amounts (from `usage` events; estimated from `left` until the first).
        self.held: dict[str, float] = {}
        # Per entitlement: (count, monotonic time) of this process's last acknowledged add.
        self.acked: dict[str, tuple[float, float]] = {}
        self.loading: Loading | None = None
        self.again = False  # a change arrived while loading: load again after
        self.timer: threading.Timer | None = None

    def apply_usage(self, data: Mapping[str, object], ack_window: float) -> bool:
        """Applies a `usage` event to the entry it names. False when the account must be read again instead: the entry
        or a count is missing, or the draw moved a pool's balance, which every feature drawing from it reads."""
        if self.loading is not None:
            self.again = True
        ent = data.get("entitlementId")
        entry = next((x for x in (self.access.entitlements if self.access else []) if x.id == ent), None)
        usage, held = data.get("usage"), data.get("held")
        if entry is None or not isinstance(usage, (int, float)) or not isinstance(held, (int, float)):
            return False
        # An event read before this process's own add was acknowledged carries a lower count: within the flush
        # window the acknowledged count stands (a later event carries the counter after that add).
        acked = self.acked.get(entry.id)
        fresh = acked[0] if acked is not None and time.monotonic() - acked[1] < ack_window else float("-inf")
        entry.usage = max(usage, fresh)
        self.held[entry.id] = held
        return entry.credits is None


def covered(access: Access, credits: AccessEntitlementCredits) -> bool:
    """Whether the account's pool covers one unit of a feature that draws from it (as the API's `can` says)."""
    pool = next((p for p in access.credits if p.id == credits.pool), None)
    return pool is not None and (pool.unlimited or (not pool.per_entity and pool.balance >= credits.cost))
