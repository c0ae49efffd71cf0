"""What an answer said besides its body (`with_response`), and how a call's answer is captured for it."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Generic, TypeVar

import httpx
from typing_extensions import ParamSpec

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class RateLimit:
    """`RateLimit-*`: the publishable key's per-client limit, for example."""

    limit: int
    remaining: int
    reset_seconds: int


@dataclass(frozen=True)
class ResponseInfo:
    """What an answer's status and headers say."""

    status: int
    headers: httpx.Headers
    request_id: str | None
    """`X-Request-Id`: the id the service logged the request under (quote it in a support request)."""
    replayed: bool
    """`Idempotent-Replayed: true`: the first answer of an earlier call with the same idempotency key."""
    rate_limit: RateLimit | None
    """`RateLimit-*`, when the service sent them."""
    retry_after: float | None
    """`Retry-After` in seconds (on a 429 or 503, for example), when the service sent it."""


def response_info(status: int, headers: httpx.Headers) -> ResponseInfo:
    limit = headers.get("ratelimit-limit")
    retry_after = headers.get("retry-after")
    return ResponseInfo(
        status=status,
        headers=headers,
        request_id=headers.get("x-request-id"),
        replayed=headers.get("idempotent-replayed") == "true",
        rate_limit=None
        if limit is None
        else RateLimit(
            limit=_int(limit),
            remaining=_int(headers.get("ratelimit-remaining")),
            reset_seconds=_int(headers.get("ratelimit-reset")),
        ),
        retry_after=None if retry_after is None else seconds_of(retry_after),
    )


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def seconds_of(value: str) -> float | None:
    """`Retry-After` as seconds: a number of seconds, or an HTTP date."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return max(0.0, (at - datetime.now(timezone.utc)).total_seconds())


T = TypeVar("T")


@dataclass(frozen=True)
class APIResponse(Generic[T]):
    """A call's parsed body (`data`), what its headers say (`response`) and the answer itself (`http_response`)."""

    data: T
    response: ResponseInfo
    http_response: httpx.Response


@dataclass(frozen=True)
class _Answer:
    info: ResponseInfo
    http: httpx.Response


# The answer of the call `with_response` wraps: set around the call, filled by the transport with the first answer
# (a list's first page), in the caller's context (threads and asyncio tasks each have their own).
_capture: contextvars.ContextVar[list[_Answer] | None] = contextvars.ContextVar("offerkit_capture", default=None)


def record(info: ResponseInfo, http: httpx.Response) -> None:
    box = _capture.get()
    if box is not None and not box:
        box.append(_Answer(info, http))


def with_response(fn: Callable[P, R]) -> Callable[P, APIResponse[R]]:
    """The method `fn`, answering an `APIResponse` instead of its body alone (the call is made once)."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> APIResponse[R]:
        box: list[_Answer] = []
        token = _capture.set(box)
        try:
            data = fn(*args, **kwargs)
        finally:
            _capture.reset(token)
        return APIResponse(data, box[0].info, box[0].http)

    return call


def async_with_response(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[APIResponse[R]]]:
    """The async method `fn`, answering an `APIResponse` instead of its body alone (the call is made once)."""

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> APIResponse[R]:
        box: list[_Answer] = []
        token = _capture.set(box)
        try:
            data = await fn(*args, **kwargs)
        finally:
            _capture.reset(token)
        return APIResponse(data, box[0].info, box[0].http)

    return call
