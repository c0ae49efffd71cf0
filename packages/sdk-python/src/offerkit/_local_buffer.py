"""The local evaluator's usage buffer: a usage add waiting to be sent, and the optional file that keeps the buffer
across restarts (one JSON line per add, the TypeScript SDK's format, so either SDK can send what the other left)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ._errors import OfferkitError


@dataclass(frozen=True)
class BufferedUsage:
    """A usage add waiting to be sent: its idempotency key makes resending it count once."""

    key: str
    account_id: str
    entitlement_id: str
    amount: int

    def to_json(self) -> str:
        # The TypeScript SDK's line, so either SDK can send what the other left in a buffer file.
        record = {"key": self.key, "accountId": self.account_id, "entitlementId": self.entitlement_id}
        return json.dumps({**record, "amount": self.amount}, separators=(",", ":"))

    @staticmethod
    def from_json(line: str) -> BufferedUsage:
        d = json.loads(line)
        return BufferedUsage(str(d["key"]), str(d["accountId"]), str(d["entitlementId"]), int(d["amount"]))


def write_buffer(path: str, items: list[BufferedUsage]) -> None:
    """Replaces the file with the buffer, atomically (a crash leaves the old file or the new one, never half)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(b.to_json() for b in items))
    os.replace(tmp, path)


def read_buffer(path: str) -> list[BufferedUsage]:
    """The adds a previous process left; none if there is no file. A line that is not one refuses to start."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return []
    items: list[BufferedUsage] = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                items.append(BufferedUsage.from_json(line))
            except (ValueError, KeyError, TypeError) as exc:
                # Refusing to start beats dropping usage that may not have been counted.
                raise OfferkitError(f"{path}:{n}: not a buffered usage add ({exc})") from None
    return items
