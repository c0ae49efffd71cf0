"""The transport: one request per call, with the client's credential, timeout, retries and errors.

Retries follow a connection failure, a timeout, or a 408, 429, 500, 502, 503 or 504, for calls that are safe to
repeat: GET, PUT and DELETE, and POSTs (or PATCHes) that carry an idempotency key; never a 503 whose body says
`outcome: "unknown"` (the change may have been applied). As the TypeScript SDK's `core.ts`.
"""

from __future__ import annotations

import json
import random
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import anyio
import httpx

from ._errors import APIConnectionError, APIError, APITimeoutError, OfferkitError
from ._models import parse
from ._operation import Operation
from ._pagination import AsyncCursorPage, AsyncPage, AsyncPaginator, CursorPage, Page
from ._response import record, response_info, seconds_of
from ._types import NotGiven, RequestOptions
from ._version import __version__

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
SAFE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
T = TypeVar("T")


@dataclass(frozen=True)
class ClientOptions:
    """Options every client takes (see each client's constructor)."""

    base_url: str
    timeout: float = 30.0
    max_retries: int = 2
    idempotency_keys: bool = True
    headers: Mapping[str, str] = field(default_factory=dict)
    strict_responses: bool = False


@dataclass(frozen=True)
class _Request:
    method: str
    url: str
    params: list[tuple[str, str | int | float | bool | None]]
    headers: dict[str, str]
    content: bytes | None
    timeout: float
    max_retries: int


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def backoff(attempt: int, retry_after: str | None) -> float:
    """0.5 s, 1 s, 2 s ... (at most 8 s) with jitter, or what `Retry-After` asks for (at most 60 s)."""
    if retry_after:
        seconds = seconds_of(retry_after)
        if seconds is not None and 0 <= seconds <= 60:
            return seconds
    base: float = min(0.5 * 2**attempt, 8.0)
    return base * (0.75 + random.random() * 0.25)


def _body_of(response: httpx.Response) -> Any:
    text = response.text
    if not text:
        return None
    if "json" in response.headers.get("content-type", ""):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _outcome_unknown(response: httpx.Response, body: Any) -> bool:
    # The database stopped answering while it committed the change: it may be applied. Not retried, so the caller
    # sees that answer rather than a later, plainer one.
    return response.status_code == 503 and isinstance(body, dict) and body.get("outcome") == "unknown"


class BaseCore:
    def __init__(self, credential: str, app_id: str, options: ClientOptions) -> None:
        if not options.base_url:
            raise OfferkitError("base_url is required")
        if not credential:
            raise OfferkitError("a credential is required")
        if not app_id:
            raise OfferkitError("app_id is required")
        self.credential = credential
        self.app_id = app_id
        self.base_url = options.base_url.rstrip("/")
        self.options = options

    def path_of(self, op: Operation, args: Sequence[str]) -> str:
        """The operation's path with the app id and the method's path arguments filled in."""
        path = op.path.replace("{appId}", quote(self.app_id, safe=""))
        for name, value in zip(op.params, args, strict=True):
            if not isinstance(value, str) or not value:
                python_name = re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name)
                raise OfferkitError(f"{op.python_name}: {python_name} is required")
            path = path.replace("{" + name + "}", quote(value, safe=""))
        return path

    def build(
        self,
        method: str,
        path: str,
        body: object,
        query: Mapping[str, object] | None,
        options: RequestOptions,
    ) -> _Request:
        params: list[tuple[str, str | int | float | bool | None]] = [
            (k, _query_value(v)) for k, v in (query or {}).items() if v is not None and not isinstance(v, NotGiven)
        ]
        headers = {
            "Accept": "application/json",
            "Authorization": f"Bearer {self.credential}",
            "User-Agent": f"offerkit-python/{__version__}",
            **self.options.headers,
            **(options.extra_headers or {}),
        }
        content = None
        if body is not None:
            if isinstance(body, Mapping):
                body = {k: v for k, v in body.items() if not isinstance(v, NotGiven)}
            content = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        key = options.idempotency_key
        if not key and method == "POST" and self.options.idempotency_keys:
            key = f"sdk_{uuid.uuid4()}"
        if key:
            headers["Idempotency-Key"] = key
        retryable = method in SAFE_METHODS or bool(key)
        max_retries = options.max_retries if options.max_retries is not None else self.options.max_retries
        return _Request(
            method=method,
            url=self.base_url + path,
            params=params,
            headers=headers,
            content=content,
            timeout=options.timeout if options.timeout is not None else self.options.timeout,
            max_retries=max_retries if retryable else 0,
        )

    def answer(self, response: httpx.Response, cast_to: object) -> object:
        body = _body_of(response)
        record(response_info(response.status_code, response.headers), response)
        if cast_to is object or body is None:
            return body
        return parse(cast_to, body, strict=self.options.strict_responses)

    def error(self, response: httpx.Response, body: Any) -> APIError:
        return APIError.from_response(
            response.status_code, body, response.headers, strict=self.options.strict_responses
        )


def _transport_error(exc: httpx.TransportError, timeout: float) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(timeout)
    return APIConnectionError(f"Connection error: {exc}")


class SyncCore(BaseCore):
    def __init__(
        self, credential: str, app_id: str, options: ClientOptions, http_client: httpx.Client | None = None
    ) -> None:
        super().__init__(credential, app_id, options)
        self.http = http_client or httpx.Client(follow_redirects=False)
        self._owns_http = http_client is None

    def close(self) -> None:
        if self._owns_http:
            self.http.close()

    def request(
        self,
        op: Operation,
        args: Sequence[str],
        *,
        body: object,
        query: Mapping[str, object] | None,
        cast_to: object,
        options: RequestOptions,
    ) -> object:
        return self.send(op.method, self.path_of(op, args), body, query, cast_to, options)

    def send(
        self,
        method: str,
        path: str,
        body: object,
        query: Mapping[str, object] | None,
        cast_to: object,
        options: RequestOptions,
    ) -> object:
        req = self.build(method, path, body, query, options)
        attempt = 0
        while True:
            try:
                response = self.http.request(
                    req.method,
                    req.url,
                    params=req.params,
                    headers=req.headers,
                    content=req.content,
                    timeout=req.timeout,
                )
            except httpx.TransportError as exc:
                if attempt < req.max_retries:
                    time.sleep(backoff(attempt, None))
                    attempt += 1
                    continue
                raise _transport_error(exc, req.timeout) from exc
            if response.is_success:
                return self.answer(response, cast_to)
            error_body = _body_of(response)
            if (
                attempt < req.max_retries
                and response.status_code in RETRY_STATUSES
                and not _outcome_unknown(response, error_body)
            ):
                time.sleep(backoff(attempt, response.headers.get("retry-after")))
                attempt += 1
                continue
            raise self.error(response, error_body)

    def page_list(
        self,
        op: Operation,
        args: Sequence[str],
        *,
        query: Mapping[str, object],
        item: type[T],
        page: type[Any],
        options: RequestOptions,
    ) -> Page[T]:
        def fetch(number: object) -> Page[T]:
            model: Any = self.request(
                op, args, body=None, query={**query, "page": number}, cast_to=page, options=options
            )
            return Page(list(model.data), model.total, model.page, model.per_page, fetch)

        return fetch(query.get("page"))

    def cursor_list(
        self,
        op: Operation,
        args: Sequence[str],
        *,
        query: Mapping[str, object],
        item: type[T],
        page: type[Any],
        options: RequestOptions,
    ) -> CursorPage[T]:
        def fetch(cursor: object) -> CursorPage[T]:
            q = {**query, "cursor": cursor}
            model: Any = self.request(op, args, body=None, query=q, cast_to=page, options=options)
            return CursorPage(list(model.data), model.next_cursor, fetch)

        return fetch(query.get("cursor"))


class AsyncCore(BaseCore):
    def __init__(
        self, credential: str, app_id: str, options: ClientOptions, http_client: httpx.AsyncClient | None = None
    ) -> None:
        super().__init__(credential, app_id, options)
        self.http = http_client or httpx.AsyncClient(follow_redirects=False)
        self._owns_http = http_client is None

    async def close(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def request(
        self,
        op: Operation,
        args: Sequence[str],
        *,
        body: object,
        query: Mapping[str, object] | None,
        cast_to: object,
        options: RequestOptions,
    ) -> object:
        return await self.send(op.method, self.path_of(op, args), body, query, cast_to, options)

    async def send(
        self,
        method: str,
        path: str,
        body: object,
        query: Mapping[str, object] | None,
        cast_to: object,
        options: RequestOptions,
    ) -> object:
        req = self.build(method, path, body, query, options)
        attempt = 0
        while True:
            try:
                response = await self.http.request(
                    req.method,
                    req.url,
                    params=req.params,
                    headers=req.headers,
                    content=req.content,
                    timeout=req.timeout,
                )
            except httpx.TransportError as exc:
                if attempt < req.max_retries:
                    await anyio.sleep(backoff(attempt, None))
                    attempt += 1
                    continue
                raise _transport_error(exc, req.timeout) from exc
            if response.is_success:
                return self.answer(response, cast_to)
            error_body = _body_of(response)
            if (
                attempt < req.max_retries
                and response.status_code in RETRY_STATUSES
                and not _outcome_unknown(response, error_body)
            ):
                await anyio.sleep(backoff(attempt, response.headers.get("retry-after")))
                attempt += 1
                continue
            raise self.error(response, error_body)

    def page_list(
        self,
        op: Operation,
        args: Sequence[str],
        *,
        query: Mapping[str, object],
        item: type[T],
        page: type[Any],
        options: RequestOptions,
    ) -> AsyncPaginator[AsyncPage[T], T]:
        async def fetch(number: object) -> AsyncPage[T]:
            q = {**query, "page": number}
            model: Any = await self.request(op, args, body=None, query=q, cast_to=page, options=options)
            return AsyncPage(list(model.data), model.total, model.page, model.per_page, fetch)

        return AsyncPaginator(lambda: fetch(query.get("page")))

    def cursor_list(
        self,
        op: Operation,
        args: Sequence[str],
        *,
        query: Mapping[str, object],
        item: type[T],
        page: type[Any],
        options: RequestOptions,
    ) -> AsyncPaginator[AsyncCursorPage[T], T]:
        async def fetch(cursor: object) -> AsyncCursorPage[T]:
            q = {**query, "cursor": cursor}
            model: Any = await self.request(op, args, body=None, query=q, cast_to=page, options=options)
            return AsyncCursorPage(list(model.data), model.next_cursor, fetch)

        return AsyncPaginator(lambda: fetch(query.get("cursor")))
