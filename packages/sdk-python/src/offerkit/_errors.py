"""The errors the SDK raises: one class per status, as the TypeScript SDK's (`OfferkitError` is the base of all)."""

from __future__ import annotations

from typing import Any, cast

import httpx

from ._generated.models import LimitReachedBody, LimitReachedEntitlement, LimitReachedOffer
from ._models import parse
from ._response import ResponseInfo, response_info


class OfferkitError(Exception):
    """Every error the SDK raises is an OfferkitError."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class APIError(OfferkitError):
    """The service answered with a status outside 2xx.

    `status`, `message` (the body's `error`, or its plain-language `message` when `error` is a code such as
    `limit_reached`) and the parsed `body` are always there; `response` is what the headers say, as
    `with_response` gives it.
    """

    status: int
    body: Any
    """The answer's JSON (`{"error": ..., ...}` for every error of the service), or its text when it is not JSON."""
    headers: httpx.Headers
    request_id: str | None
    """The `X-Request-Id` the service logged the request under, when it sent one."""
    response: ResponseInfo

    def __init__(self, status: int, body: Any, headers: httpx.Headers, *, strict: bool = False) -> None:
        super().__init__(_message(status, body))
        self.status = status
        self.body = body
        self.headers = headers
        self.response = response_info(status, headers)
        self.request_id = self.response.request_id

    @staticmethod
    def from_response(status: int, body: Any, headers: httpx.Headers, *, strict: bool = False) -> APIError:
        """The subclass for a status: `except NotFoundError: ...`."""
        cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else APIError)
        return cls(status, body, headers, strict=strict)


def _message(status: int, body: Any) -> str:
    if isinstance(body, dict):
        for key in ("message", "error"):
            value = body.get(key)
            if isinstance(value, str) and value:
                return value
    if isinstance(body, str) and body:
        return f"{status}: {body[:200]}"
    return f"HTTP {status}"


class BadRequestError(APIError):
    """400: invalid JSON or an invalid field (`<field>: <message>`)."""


class AuthenticationError(APIError):
    """401: no credential, a wrong one, or one this route does not take."""


class PermissionDeniedError(APIError):
    """403: not allowed for this credential."""


class NotFoundError(APIError):
    """404: a record in the path (or named by the body) does not exist."""


class ConflictError(APIError):
    """409: conflicts with the current state; offers that cannot be bought add `reason`."""

    @property
    def reason(self) -> str | None:
        """Why the offer cannot be bought (the body's `reason`), when the service says."""
        value = self.body.get("reason") if isinstance(self.body, dict) else None
        return value if isinstance(value, str) else None


class RateLimitError(APIError):
    """429: too many requests."""

    @property
    def retry_after(self) -> float | None:
        """The seconds the service asks to wait (`Retry-After`), when it says."""
        return self.response.retry_after


class InternalServerError(APIError):
    """5xx: the service failed. A 503 whose `body["outcome"]` is `"unknown"` may have applied the change."""


class ProviderError(InternalServerError):
    """502: the payment provider returned an error (the message starts with its name)."""


class LimitReachedError(APIError):
    """402: the call would pass a blocking usage limit; the counter did not move.

    `offer` is the upgrade to show (None when there is none), with its `checkout_url`.
    """

    limit: LimitReachedBody
    """The body, typed."""

    def __init__(self, status: int, body: Any, headers: httpx.Headers, *, strict: bool = False) -> None:
        super().__init__(status, body, headers, strict=strict)
        self.limit = cast(LimitReachedBody, parse(LimitReachedBody, body, strict=strict))

    @property
    def entitlement(self) -> LimitReachedEntitlement:
        """`id`, `name`, `usage` and `max` of the limit that would be passed."""
        return self.limit.entitlement

    @property
    def offer(self) -> LimitReachedOffer | None:
        """The upgrade to offer (`plan`, `price`, `new_limit`, `checkout_url`, ...), or None."""
        return self.limit.offer

    @property
    def retry_after_purchase(self) -> bool:
        """Whether retrying the call after the purchase will succeed."""
        return self.limit.retry_after_purchase


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    402: LimitReachedError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
    502: ProviderError,
}


class APIConnectionError(OfferkitError):
    """No answer: the connection failed (refused, reset, DNS)."""


class APITimeoutError(APIConnectionError):
    """No answer within the timeout."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"Request timed out after {timeout:g} s")
        self.timeout = timeout


class WebhookVerificationError(OfferkitError):
    """A webhook delivery failed verification (forged, altered, too old, or signed with another secret)."""
