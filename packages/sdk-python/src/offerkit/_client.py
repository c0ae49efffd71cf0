"""The clients: one per credential, each with only the namespaces and methods its credential may call."""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from types import TracebackType
from typing import Literal

import httpx
from typing_extensions import Self

from ._core import AsyncCore, ClientOptions, SyncCore
from ._errors import APIError, OfferkitError
from ._generated.clients import (
    AccountTokenResources,
    AsyncAccountTokenResources,
    AsyncPublishableResources,
    AsyncSecretResources,
    PublishableResources,
    SecretResources,
)
from ._local import LocalEvaluator, UnknownPolicy
from ._local_async import AsyncLocalEvaluator
from ._local_buffer import BufferedUsage
from ._models import strict_default
from ._types import RequestOptions

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]


def _options(
    base_url: str,
    timeout: float,
    max_retries: int,
    idempotency_keys: bool,
    headers: Mapping[str, str] | None,
    strict_responses: bool | None,
) -> ClientOptions:
    return ClientOptions(
        base_url=base_url,
        timeout=timeout,
        max_retries=max_retries,
        idempotency_keys=idempotency_keys,
        headers=dict(headers or {}),
        strict_responses=strict_default() if strict_responses is None else strict_responses,
    )


class _SyncClient:
    def __init__(self, core: SyncCore) -> None:
        self._core = core

    @property
    def app_id(self) -> str:
        """The app every call goes to."""
        return self._core.app_id

    @property
    def base_url(self) -> str:
        """The service's address."""
        return self._core.base_url

    def request(
        self,
        method: Method,
        path: str,
        *,
        body: object = None,
        query: Mapping[str, object] | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> object:
        """Any route, with this client's credential, timeout, retries and errors: `request("GET", "/event-types")`.

        The path is taken as is (fill in the app id yourself); the answer is its JSON, unparsed.
        """
        options = RequestOptions(timeout, max_retries, extra_headers, idempotency_key)
        return self._core.send(method, path, body, query, object, options)

    def close(self) -> None:
        """Closes the connections (not a client you passed as `http_client`)."""
        self._core.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _AsyncClient:
    def __init__(self, core: AsyncCore) -> None:
        self._core = core

    @property
    def app_id(self) -> str:
        """The app every call goes to."""
        return self._core.app_id

    @property
    def base_url(self) -> str:
        """The service's address."""
        return self._core.base_url

    async def request(
        self,
        method: Method,
        path: str,
        *,
        body: object = None,
        query: Mapping[str, object] | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> object:
        """Any route, with this client's credential, timeout, retries and errors (see the sync client's)."""
        options = RequestOptions(timeout, max_retries, extra_headers, idempotency_key)
        return await self._core.send(method, path, body, query, object, options)

    async def close(self) -> None:
        """Closes the connections (not a client you passed as `http_client`)."""
        await self._core.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _check_secret(secret_key: str) -> None:
    if secret_key.startswith(("pub_", "act_")):
        raise OfferkitError("SecretClient takes the secret key; use PublishableClient or AccountTokenClient")


def _check_publishable(publishable_key: str) -> None:
    if publishable_key and not publishable_key.startswith("pub_"):
        raise OfferkitError("PublishableClient takes the publishable key (pub_...)")


class SecretClient(_SyncClient, SecretResources):
    """Server side, with the app's secret key (`key_...`, or the admin key): every route of the app.

    `client.accounts.create(id="alice")`, `client.usage.add("alice", "api_calls")`,
    `for account in client.accounts.list(): ...`. Never ship the secret key to a browser.
    """

    def __init__(
        self,
        *,
        secret_key: str,
        app_id: str,
        base_url: str,
        timeout: float = 30.0,
        max_retries: int = 2,
        idempotency_keys: bool = True,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        strict_responses: bool | None = None,
    ) -> None:
        """
        Args:
            secret_key: The app's secret key, `key_...`.
            app_id: The app the key belongs to, `app_...`.
            base_url: The service's address, e.g. `https://api.example.com`.
            timeout: Seconds to wait for each attempt (connecting, sending, each read); default 30.
            max_retries: Retries of calls that are safe to repeat (see the README); default 2.
            idempotency_keys: Send a generated `Idempotency-Key` with every POST (the same on each retry), which
                also makes POSTs retryable. With False, POSTs are sent once unless a call passes `idempotency_key`.
            headers: Headers sent with every request.
            http_client: An `httpx.Client` of your own (proxies, certificates, transports); you close it.
            strict_responses: Raise pydantic's `ValidationError` when an answer does not fit the SDK's models
                (default: keep what fits; `OFFERKIT_STRICT_RESPONSES=1` turns it on).
        """
        _check_secret(secret_key)
        options = _options(base_url, timeout, max_retries, idempotency_keys, headers, strict_responses)
        core = SyncCore(secret_key, app_id, options, http_client)
        super().__init__(core)
        self._init_resources(core)

    def local(
        self,
        *,
        unknown: UnknownPolicy = False,
        max_buffer: int = 10_000,
        buffer_file: str | os.PathLike[str] | None = None,
        heartbeat_timeout: float = 45.0,
        on_dropped: Callable[[BufferedUsage, APIError], None] | None = None,
    ) -> LocalEvaluator:
        """Access checks from memory, kept fresh by the change stream; usage buffered while the API is unreachable
        (docs/sdk.md, "Local evaluation"). Its threads use this client (its connections, timeout and headers).

        Args:
            unknown: For an account never seen (not read yet, or the API unreachable when it was asked about): allow
                (`True`, fail-open) or refuse (`False`, fail-closed, the default); or per entitlement id,
                `{"api_calls": True, "default": False}` (those not named: `"default"`, else closed).
            max_buffer: Usage adds kept while the API is unreachable (default 10,000); `track` raises past it.
            buffer_file: A file the buffer is kept in (JSON lines), so a restarted process sends what was not sent.
            heartbeat_timeout: Seconds without a byte from the stream (keep-alives come every 15 s) before
                reconnecting (default 45).
            on_dropped: Called (on the sending thread) with a usage add the API refused (400, 402, 404): it can
                never be counted, so it is dropped.
        """
        return LocalEvaluator(
            self,
            unknown=unknown,
            max_buffer=max_buffer,
            buffer_file=buffer_file,
            heartbeat_timeout=heartbeat_timeout,
            on_dropped=on_dropped,
        )


class AsyncSecretClient(_AsyncClient, AsyncSecretResources):
    """`SecretClient` for asyncio (and trio): the same namespaces, methods to await, lists to `async for`."""

    def __init__(
        self,
        *,
        secret_key: str,
        app_id: str,
        base_url: str,
        timeout: float = 30.0,
        max_retries: int = 2,
        idempotency_keys: bool = True,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        strict_responses: bool | None = None,
    ) -> None:
        _check_secret(secret_key)
        options = _options(base_url, timeout, max_retries, idempotency_keys, headers, strict_responses)
        core = AsyncCore(secret_key, app_id, options, http_client)
        super().__init__(core)
        self._init_resources(core)

    def local(
        self,
        *,
        unknown: UnknownPolicy = False,
        max_buffer: int = 10_000,
        buffer_file: str | os.PathLike[str] | None = None,
        heartbeat_timeout: float = 45.0,
        on_dropped: Callable[[BufferedUsage, APIError], None] | None = None,
    ) -> AsyncLocalEvaluator:
        """`SecretClient.local` for event loops: the same evaluator (its threads use a sync client of its own, with
        this client's key, timeout, retries and headers); checks are plain calls, the rest is awaited."""
        options = self._core.options
        sync = SecretClient(
            secret_key=self._core.credential,
            app_id=self._core.app_id,
            base_url=self._core.base_url,
            timeout=options.timeout,
            max_retries=options.max_retries,
            idempotency_keys=options.idempotency_keys,
            headers=options.headers,
            strict_responses=options.strict_responses,
        )
        try:
            local = LocalEvaluator(
                sync,
                unknown=unknown,
                max_buffer=max_buffer,
                buffer_file=buffer_file,
                heartbeat_timeout=heartbeat_timeout,
                on_dropped=on_dropped,
                owns_client=True,
            )
        except BaseException:
            sync.close()  # an unreadable buffer file
            raise
        return AsyncLocalEvaluator(local)


class PublishableClient(_SyncClient, PublishableResources):
    """Browser-safe, with the app's publishable key (`pub_...`): access reads, adding usage, pricing cards, public
    offers and checkouts. Only those namespaces and methods exist on it."""

    def __init__(
        self,
        *,
        publishable_key: str,
        app_id: str,
        base_url: str,
        timeout: float = 30.0,
        max_retries: int = 2,
        idempotency_keys: bool = True,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        strict_responses: bool | None = None,
    ) -> None:
        _check_publishable(publishable_key)
        options = _options(base_url, timeout, max_retries, idempotency_keys, headers, strict_responses)
        core = SyncCore(publishable_key, app_id, options, http_client)
        super().__init__(core)
        self._init_resources(core)


class AsyncPublishableClient(_AsyncClient, AsyncPublishableResources):
    """`PublishableClient` for asyncio (and trio)."""

    def __init__(
        self,
        *,
        publishable_key: str,
        app_id: str,
        base_url: str,
        timeout: float = 30.0,
        max_retries: int = 2,
        idempotency_keys: bool = True,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        strict_responses: bool | None = None,
    ) -> None:
        _check_publishable(publishable_key)
        options = _options(base_url, timeout, max_retries, idempotency_keys, headers, strict_responses)
        core = AsyncCore(publishable_key, app_id, options, http_client)
        super().__init__(core)
        self._init_resources(core)


@dataclass(frozen=True)
class AccountTokenInfo:
    """What an account token says about itself (readable by anyone; only the service can check it)."""

    app_id: str
    account_id: str
    expires_at: datetime


def decode_account_token(token: str) -> AccountTokenInfo:
    """Reads an account token's app, account and expiry, without verifying it."""
    prefix, _, rest = (token or "").partition("_")
    payload, dot, signature = rest.partition(".")
    if prefix != "act" or not dot or not payload or not signature:
        raise OfferkitError("Not an account token (act_<payload>.<signature>)")
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        app_id, account_id, expires = data["a"], data["n"], data["e"]
        if not isinstance(app_id, str) or not isinstance(account_id, str) or not isinstance(expires, (int, float)):
            raise ValueError("fields")
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise OfferkitError("Not an account token (unreadable payload)") from None
    return AccountTokenInfo(app_id, account_id, datetime.fromtimestamp(expires, timezone.utc))


def _token_app(account_token: str, app_id: str | None) -> AccountTokenInfo:
    info = decode_account_token(account_token)
    if app_id and app_id != info.app_id:
        raise OfferkitError(f"The account token is for app {info.app_id}, not {app_id}")
    return info


class AccountTokenClient(_SyncClient, AccountTokenResources):
    """Browser side, with an account token (`act_...`, minted on your server with `accounts.create_token`): that
    account's access reads and subscription, and its cancel sessions. The app comes from the token."""

    account_id: str
    """The account the token is for."""
    expires_at: datetime

    def __init__(
        self,
        *,
        account_token: str,
        base_url: str,
        app_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        idempotency_keys: bool = True,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
        strict_responses: bool | None = None,
    ) -> None:
        info = _token_app(account_token, app_id)
        options = _options(base_url, timeout, max_retries, idempotency_keys, headers, strict_responses)
        core = SyncCore(account_token, info.app_id, options, http_client)
        super().__init__(core)
        self._init_resources(core)
        self.account_id = info.account_id
        self.expires_at = info.expires_at


class AsyncAccountTokenClient(_AsyncClient, AsyncAccountTokenResources):
    """`AccountTokenClient` for asyncio (and trio)."""

    account_id: str
    expires_at: datetime

    def __init__(
        self,
        *,
        account_token: str,
        base_url: str,
        app_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        idempotency_keys: bool = True,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        strict_responses: bool | None = None,
    ) -> None:
        info = _token_app(account_token, app_id)
        options = _options(base_url, timeout, max_retries, idempotency_keys, headers, strict_responses)
        core = AsyncCore(account_token, info.app_id, options, http_client)
        super().__init__(core)
        self._init_resources(core)
        self.account_id = info.account_id
        self.expires_at = info.expires_at
