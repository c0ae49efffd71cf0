"""Access checks from memory (docs/sdk.md, "Local evaluation"), as the TypeScript SDK's `local.ts` does them.

The accounts asked about are read once (their effective access with private meta), then kept fresh by the change
stream; `can` answers without a request. `track` sends usage with an idempotency key, in order, buffering while the
API is unreachable (optionally in a file). Threads, not asyncio: a check is a dictionary read under a lock, so the same
object serves sync code, threads and (through `AsyncLocalEvaluator`) event loops. Threads: one reads the stream, one
sends the buffer, eight read accounts again when the stream says they changed (the TypeScript SDK's "8 at a time").
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from types import TracebackType
from typing import Protocol, TypeAlias

from typing_extensions import Self

from ._core import SyncCore
from ._errors import APIConnectionError, APIError, NotFoundError, OfferkitError
from ._generated.models import Access, AccessEntitlement
from ._generated.resources.access import AccessResource
from ._generated.resources.usage import UsageResource
from ._local_buffer import BufferedUsage, read_buffer, write_buffer
from ._local_state import Known, Loading, LocalStats, covered
from ._stream import ChangeEvent, ChangeStream, stream_changes


class LocalClient(Protocol):
    """What the evaluator uses of its client (a `SecretClient`), declared here so that this file, which the client
    imports, does not import the client back."""

    @property
    def access(self) -> AccessResource: ...

    @property
    def usage(self) -> UsageResource: ...

    @property
    def _core(self) -> SyncCore: ...

    def close(self) -> None: ...


UnknownPolicy: TypeAlias = bool | Mapping[str, bool]
"""For accounts never seen: `True` (fail-open), `False` (fail-closed), or per entitlement id with `"default"`."""

ACK_WINDOW = 1.5
"""Seconds an acknowledged count outranks a lower `usage` event (several usage flushes, 250 ms each)."""
LOADERS = 8
RETRY_STATUSES = frozenset({408, 429})
_log = logging.getLogger("offerkit")


_MISSING = object()


class LocalEvaluator:
    """Access checks from memory, kept fresh by the change stream; usage buffered while the API is unreachable.

    Made by `SecretClient.local(...)`: `local.can("ada", "api_calls")`, `local.access("ada")`,
    `local.track("ada", "api_calls")`, `local.close()` (or `with client.local() as local:`).
    """

    def __init__(
        self,
        client: LocalClient,
        *,
        unknown: UnknownPolicy = False,
        max_buffer: int = 10_000,
        buffer_file: str | os.PathLike[str] | None = None,
        heartbeat_timeout: float = 45.0,
        on_dropped: Callable[[BufferedUsage, APIError], None] | None = None,
        owns_client: bool = False,
    ) -> None:
        self._client = client
        self._owns_client = owns_client
        self._unknown = unknown
        self._max_buffer = max_buffer
        self._file = os.fspath(buffer_file) if buffer_file is not None else None
        self._heartbeat = heartbeat_timeout
        self._on_dropped = on_dropped
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._file_lock = threading.Lock()
        self._accounts: dict[str, Known | None] = {}
        self._buffer: deque[BufferedUsage] = deque()
        self._queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._queued: set[str] = set()
        self._stop = threading.Event()
        self._connected = threading.Event()
        self._closed = False
        self._stream: ChangeStream | None = None
        self._last_event_id: str | None = None
        self._last_byte: float | None = None
        self.stats = LocalStats()
        self.on_change: Callable[[ChangeEvent], None] | None = None
        """Called (on the stream's thread) after each applied change: when a change became visible here."""
        self._restore()
        self._threads = [
            threading.Thread(target=self._run, name="offerkit-local-stream", daemon=True),
            threading.Thread(target=self._send_all, name="offerkit-local-send", daemon=True),
        ]
        self._threads += [
            threading.Thread(target=self._load_worker, name=f"offerkit-local-load-{i}", daemon=True)
            for i in range(LOADERS)
        ]
        for t in self._threads:
            t.start()

    # The public surface -------------------------------------------------------------------------------------------

    def ready(self, timeout: float = 10.0) -> None:
        """Returns once the stream is connected; raises `OfferkitError` after `timeout` seconds."""
        if not self._connected.wait(timeout):
            raise OfferkitError("the change stream did not connect")

    def staleness(self) -> float:
        """Seconds since the stream last proved it is connected: 0 while it is, infinity before it ever was."""
        if self._connected.is_set():
            return 0.0
        last = self._last_byte
        return float("inf") if last is None else time.monotonic() - last

    @property
    def pending(self) -> int:
        """Usage adds not yet acknowledged by the API."""
        return len(self._buffer)

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    def load(self, account_id: str) -> Access | None:
        """Reads an account (or waits for its reading) and returns its effective access; None when it does not exist.
        Raises what the API call raised when the account cannot be read and nothing is known of it."""
        with self._lock:
            k = self._accounts.get(account_id, _MISSING)
            if k is _MISSING:
                k = self._accounts[account_id] = Known()
        if isinstance(k, Known) and (k.access is None or k.loading is not None):
            self._fetch(account_id, k, wait=True)
        return self.access(account_id)

    def access(self, account_id: str) -> Access | None:
        """The account's effective access from memory (as `access.get_private` answers); None when unknown or
        missing."""
        with self._lock:
            k = self._accounts.get(account_id)
            if k is None or k.access is None:
                return None
            entries = [self._entry(account_id, k, e) for e in k.access.entitlements]
            return k.access.model_copy(update={"entitlements": entries}, deep=True)

    def can(self, account_id: str, entitlement_id: str) -> bool:
        """Whether the account may use the entitlement now, from memory. An account never seen is answered by the
        `unknown` policy (and read in the background for the next call); one that does not exist: False."""
        with self._lock:
            k = self._accounts.get(account_id, _MISSING)
            if k is None:
                return False
            if not isinstance(k, Known) or k.access is None:
                if k is _MISSING and not self._closed:
                    self._accounts[account_id] = Known()
                    self._queue_reload(account_id)
                return self._unknown_policy(entitlement_id)
            e = next((x for x in k.access.entitlements if x.id == entitlement_id), None)
            if e is None:
                return False
            return self._numbers(account_id, k, e)[2] if e.type == "usage" else e.can

    def track(self, account_id: str, entitlement_id: str, amount: int = 1) -> None:
        """Adds usage: sent at once (on the sending thread) with an idempotency key; while the API is unreachable kept
        (in order, bounded, in `buffer_file` when given) and sent when it is back, each counted once. Returns once
        it is queued (and written to the file); raises `OfferkitError` when the buffer is full."""
        if not account_id or not entitlement_id:
            raise OfferkitError("track: account_id and entitlement_id are required")
        item = BufferedUsage(f"local-{uuid.uuid4()}", account_id, entitlement_id, amount)
        with self._cond:
            if self._closed:
                raise OfferkitError("the local evaluator is closed")
            if len(self._buffer) >= self._max_buffer:
                raise OfferkitError("the usage buffer is full (the API has been unreachable for long)")
            self._buffer.append(item)
        self._persist()
        with self._cond:
            self._cond.notify_all()

    def flush(self, timeout: float = 30.0) -> None:
        """Returns when every buffered add is acknowledged; raises `OfferkitError` after `timeout` seconds."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._buffer:
                left = end - time.monotonic()
                if left <= 0 or self._closed:
                    raise OfferkitError(f"{len(self._buffer)} usage adds not sent yet")
                self._cond.wait(min(left, 0.5))

    def close(self) -> None:
        """Stops the stream, the reads and the sending, and returns once they have ended (an add or a read in flight
        finishes; the reads still queued are not made; the buffer stays in `buffer_file`)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            for k in self._accounts.values():
                if k is not None and k.timer is not None:
                    k.timer.cancel()
            self._cond.notify_all()
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        for _ in range(LOADERS):
            self._queue.put(None)
        # Every thread, the loaders too: a read in flight ends before `close` returns, so a client closed next never
        # has a request of ours under way (its connection would be left to the garbage collector, unclosed).
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=60)
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # Answers from memory -----------------------------------------------------------------------------------------

    def _unknown_policy(self, entitlement_id: str) -> bool:
        u = self._unknown
        if isinstance(u, bool):
            return u
        answer = u.get(entitlement_id)
        if answer is None:
            answer = u.get("default")
        return bool(answer)

    def _entry(self, account_id: str, k: Known, e: AccessEntitlement) -> AccessEntitlement:
        """An entry with this process's unacknowledged adds counted in (as the API will once they arrive)."""
        if e.type != "usage":
            return e.model_copy()
        usage, left, can = self._numbers(account_id, k, e)
        return e.model_copy(update={"usage": usage, "left": left, "can": can})

    def _numbers(self, account_id: str, k: Known, e: AccessEntitlement) -> tuple[float, float | None, bool]:
        """A usage entry's usage, left and can, as `accessEntry` of the service computes them."""
        usage = e.usage
        for b in self._buffer:
            if b.account_id == account_id and b.entitlement_id == e.id:
                usage += b.amount
        usage = max(0, usage)
        taken = usage + k.held.get(e.id, 0)
        can = e.max is None or taken < e.max
        if e.credits is not None and k.access is not None:
            can = can and covered(k.access, e.credits)
        left = None if e.max is None else max(0, e.max - taken)
        return usage, left, can

    # Sending -----------------------------------------------------------------------------------------------------

    def _send_all(self) -> None:
        delay = 0.1
        while True:
            with self._cond:
                while not self._buffer and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                item = self._buffer[0]
            try:
                answer = self._client.usage.add_amount(
                    item.account_id, item.entitlement_id, amount=item.amount, idempotency_key=item.key, max_retries=0
                )
            except APIError as err:
                if err.status < 500 and err.status not in RETRY_STATUSES:
                    # Refused (400, 402, 404): it can never be counted.
                    self._acknowledged(item, None)
                    if self._on_dropped is not None:
                        self._on_dropped(item, err)
                    continue
            except APIConnectionError:
                pass
            except Exception:  # an answer that does not fit the models: sent again with the same key
                _log.exception("offerkit: sending buffered usage failed")
            else:
                self._acknowledged(item, answer.count)
                delay = 0.1
                continue
            self._stop.wait(delay)
            delay = min(delay * 2, 2.0)

    def _acknowledged(self, item: BufferedUsage, count: float | None) -> None:
        with self._cond:
            if self._buffer and self._buffer[0] is item:
                self._buffer.popleft()
            k = self._accounts.get(item.account_id)
            if count is not None and k is not None:
                e = next((x for x in (k.access.entitlements if k.access else []) if x.id == item.entitlement_id), None)
                if e is not None:
                    e.usage = count
                k.acked[item.entitlement_id] = (count, time.monotonic())
            self._cond.notify_all()
        self._persist()

    def _persist(self) -> None:
        if self._file is None:
            return
        # The snapshot is taken inside the file lock, so the last write holds the latest buffer.
        with self._file_lock:
            with self._lock:
                items = list(self._buffer)
            write_buffer(self._file, items)

    def _restore(self) -> None:
        if self._file is not None:
            self._buffer.extend(read_buffer(self._file))

    # Reading accounts --------------------------------------------------------------------------------------------

    def _fetch(self, account_id: str, k: Known, *, wait: bool) -> None:
        """Reads an account's effective access; a change announced meanwhile reads it again."""
        with self._lock:
            running = k.loading
            if running is None:
                mine = k.loading = Loading()
            else:
                k.again = True
        if running is not None:
            if wait:
                running.done.wait()
                if running.error is not None:
                    raise running.error
            return
        try:
            while True:
                with self._lock:
                    k.again = False
                    self.stats.loads += 1
                try:
                    answer = self._client.access.get_private(account_id)
                except NotFoundError:
                    with self._lock:
                        if self._accounts.get(account_id) is k:
                            self._accounts[account_id] = None
                        if k.timer is not None:
                            k.timer.cancel()
                    return
                except BaseException:
                    # Unreachable: keep what is known (or nothing: the unknown policy answers).
                    with self._lock:
                        if k.access is None and self._accounts.get(account_id) is k:
                            del self._accounts[account_id]
                    raise
                with self._lock:
                    k.access = answer
                    k.held = {
                        e.id: max(0, e.max - e.usage - e.left)
                        for e in answer.entitlements
                        if e.max is not None and e.left is not None and e.left > 0
                    }
                    self._schedule(account_id, k, answer.changes_at)
                    if not k.again:
                        return
        except BaseException as exc:
            mine.error = exc
            raise
        finally:
            with self._lock:
                k.loading = None
            mine.done.set()

    def _schedule(self, account_id: str, k: Known, at: str | None) -> None:
        """Reads the account again when its answer changes by time alone (an incentive ending)."""
        if k.timer is not None:
            k.timer.cancel()
        k.timer = None
        if not at or self._closed:
            return
        try:
            when = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            return
        seconds = max(0.0, (when - datetime.now(timezone.utc)).total_seconds()) + 0.05
        k.timer = threading.Timer(min(seconds, 7 * 86_400), self._queue_reload, (account_id,))
        k.timer.daemon = True
        k.timer.start()

    def _queue_reload(self, account_id: str) -> None:
        with self._lock:
            if account_id in self._queued or self._closed:
                return
            self._queued.add(account_id)
        self._queue.put(account_id)

    def _load_worker(self) -> None:
        while True:
            account_id = self._queue.get()
            # Closed: the reads still queued are not made (the client may be closed right after `close`).
            if account_id is None or self._stop.is_set():
                return
            with self._lock:
                self._queued.discard(account_id)
                k = self._accounts.get(account_id, _MISSING)
                if k is None:  # said missing: maybe created since
                    k = self._accounts[account_id] = Known()
            try:
                if isinstance(k, Known):
                    self._fetch(account_id, k, wait=False)
            except Exception:
                pass  # unreachable: what is known stays; the next change or `can` asks again

    def _reload_all(self) -> None:
        with self._lock:
            ids = list(self._accounts)
        for account_id in ids:
            self._queue_reload(account_id)

    # The stream --------------------------------------------------------------------------------------------------

    def _apply(self, e: ChangeEvent) -> None:
        if e.type == "keep-alive":
            return
        if e.id:
            self._last_event_id = e.id
        if e.type == "ready":
            return
        self.stats.events += 1
        account_id = str(e.data.get("accountId", ""))
        if e.type == "catalog":
            self._reload_all()
        elif e.type == "resync":
            self.stats.resyncs += 1
            self._reload_all()
        elif e.type in ("account", "credits"):
            # A pool's balance moved (a grant, an expiry, a refund): reading the account again keeps its pools right.
            if account_id in self._accounts:
                self._queue_reload(account_id)
        elif e.type == "usage":
            self._apply_usage(account_id, e.data)
        if self.on_change is not None:
            try:
                self.on_change(e)
            except Exception:
                _log.exception("offerkit: on_change raised")

    def _apply_usage(self, account_id: str, data: Mapping[str, object]) -> None:
        with self._lock:
            k = self._accounts.get(account_id)
            if k is not None and not k.apply_usage(data, ACK_WINDOW):
                self._queue_reload(account_id)

    def _run(self) -> None:
        """The stream, reconnected with the last id after any failure (backoff to 5 s), until `close`."""
        delay = 0.1
        core = self._client._core
        while not self._stop.is_set():
            try:
                stream = stream_changes(
                    base_url=core.base_url,
                    app_id=core.app_id,
                    credential=core.credential,
                    last_event_id=self._last_event_id,
                    read_timeout=self._heartbeat,
                    http_client=core.http,
                )
                self._stream = stream
                if self._stop.is_set():  # closed while connecting: `close` may not have seen this stream
                    stream.close()
                with stream:
                    self._last_byte = time.monotonic()
                    for event in stream:
                        self._last_byte = time.monotonic()
                        if not self._connected.is_set():
                            self._connected.set()
                            delay = 0.1
                        self._apply(event)
            except Exception as exc:
                _log.debug("offerkit: the change stream ended: %s", exc)
            finally:
                self._stream = None
                if self._connected.is_set():
                    self._last_byte = time.monotonic()
                self._connected.clear()
            if self._stop.is_set():
                return
            self.stats.reconnects += 1
            self._stop.wait(delay)
            delay = min(delay * 2, 5.0)
