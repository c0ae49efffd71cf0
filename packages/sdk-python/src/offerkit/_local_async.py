"""`AsyncSecretClient.local()`: the same evaluator for event loops (asyncio or trio).

Checks (`can`, `access`) read memory and are plain calls, as on the sync evaluator; what waits on the network or a
file is awaited: `load`, `track` and `close` in a worker thread, `ready` and `flush` by polling (so they can be
cancelled).
The evaluator's threads use a sync client of its own with the async client's key and options (a user's
`httpx.AsyncClient` cannot serve a thread).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

import anyio
import anyio.to_thread
from typing_extensions import Self

from ._errors import OfferkitError
from ._generated.models import Access
from ._local import LocalEvaluator
from ._local_state import LocalStats
from ._stream import ChangeEvent


class AsyncLocalEvaluator:
    """`LocalEvaluator` for asyncio (and trio): `local.can(...)` from memory; `await local.track(...)`,
    `await local.load(...)`, `await local.flush()`, `await local.close()` (or `async with aclient.local() as local:`).
    """

    def __init__(self, local: LocalEvaluator) -> None:
        self._local = local

    @property
    def stats(self) -> LocalStats:
        """Counters for tests and benchmarks: events applied, reconnections, resyncs, account reads."""
        return self._local.stats

    @property
    def on_change(self) -> Callable[[ChangeEvent], None] | None:
        """Called (on the stream's thread, not the event loop's) after each applied change."""
        return self._local.on_change

    @on_change.setter
    def on_change(self, callback: Callable[[ChangeEvent], None] | None) -> None:
        self._local.on_change = callback

    @property
    def pending(self) -> int:
        """Usage adds not yet acknowledged by the API."""
        return self._local.pending

    def staleness(self) -> float:
        """Seconds since the stream last proved it is connected: 0 while it is, infinity before it ever was."""
        return self._local.staleness()

    def can(self, account_id: str, entitlement_id: str) -> bool:
        """Whether the account may use the entitlement now, from memory (see `LocalEvaluator.can`)."""
        return self._local.can(account_id, entitlement_id)

    def access(self, account_id: str) -> Access | None:
        """The account's effective access from memory, None when unknown or missing."""
        return self._local.access(account_id)

    async def ready(self, timeout: float = 10.0) -> None:
        """Returns once the stream is connected; raises `OfferkitError` after `timeout` seconds."""
        end = time.monotonic() + timeout
        while self._local.staleness() != 0.0:
            if time.monotonic() > end:
                raise OfferkitError("the change stream did not connect")
            await anyio.sleep(0.02)

    async def load(self, account_id: str) -> Access | None:
        """Reads an account (or waits for its reading) and returns its effective access; None when it does not exist."""
        return await anyio.to_thread.run_sync(self._local.load, account_id)

    async def track(self, account_id: str, entitlement_id: str, amount: int = 1) -> None:
        """Adds usage with an idempotency key, buffered while the API is unreachable (see `LocalEvaluator.track`)."""
        await anyio.to_thread.run_sync(self._local.track, account_id, entitlement_id, amount)

    async def flush(self, timeout: float = 30.0) -> None:
        """Returns when every buffered add is acknowledged; raises `OfferkitError` after `timeout` seconds."""
        end = time.monotonic() + timeout
        while self._local.pending:
            if time.monotonic() > end or self._local.closed:
                raise OfferkitError(f"{self._local.pending} usage adds not sent yet")
            await anyio.sleep(0.02)

    async def close(self) -> None:
        """Stops the stream and the sending (the buffer stays in `buffer_file`) and closes its own client."""
        await anyio.to_thread.run_sync(self._local.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
