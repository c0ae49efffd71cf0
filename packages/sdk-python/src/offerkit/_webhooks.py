"""Webhook deliveries: Standard Webhooks signatures (https://www.standardwebhooks.com/), checked and made.

HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64 part of the `whsec_` secret,
compared in constant time with each `v1,<signature>` of `webhook-signature`, and a timestamp within the tolerance.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol, TypeAlias, cast

from ._errors import WebhookVerificationError
from ._generated.models import WEBHOOK_EVENT_MODELS, UnknownWebhookEvent, WebhookEvent
from ._models import parse, strict_default


class SupportsItems(Protocol):
    """Request headers as frameworks give them: a dict, Django's `request.headers`, Flask's, Starlette's, httpx's."""

    def items(self) -> Iterable[tuple[str, Any]]: ...


HeadersLike: TypeAlias = Mapping[str, str] | SupportsItems


def _header(headers: HeadersLike, name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            if isinstance(value, (list, tuple)):
                return " ".join(str(v) for v in value)
            return str(value)
    return None


def _key(secret: str) -> bytes:
    if not secret:
        raise WebhookVerificationError("The webhook secret is empty")
    raw = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("The webhook secret is not whsec_<base64>") from None


def _sign(key: bytes, msg_id: str, timestamp: str, body: bytes) -> bytes:
    return hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()


def _seconds(at: datetime | float | None) -> int:
    if at is None:
        return int(time.time())
    if isinstance(at, datetime):
        return int(at.timestamp())
    return int(at)


def verify_webhook(
    payload: str | bytes | bytearray | memoryview,
    headers: HeadersLike,
    secret: str,
    *,
    tolerance: int = 300,
    now: datetime | float | None = None,
) -> WebhookEvent:
    """Verifies a delivery and returns its event, a model per `type` (`isinstance(event, UsageLimitReachedEvent)`).

    Pass the body exactly as received (`request.body`, `await request.body()`, `request.get_data()`), never a
    re-serialized object, the request's headers, and the endpoint's `whsec_...` secret. `tolerance`: seconds the
    `webhook-timestamp` may differ from `now` (default 300, as the reference verifier). Raises
    `WebhookVerificationError` when anything does not match.
    """
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError("Missing webhook headers")
    if not timestamp.isdigit():
        raise WebhookVerificationError("Invalid webhook-timestamp")
    sent_at, current = int(timestamp), _seconds(now)
    if sent_at < current - tolerance:
        raise WebhookVerificationError("Message timestamp too old")
    if sent_at > current + tolerance:
        raise WebhookVerificationError("Message timestamp too new")
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    expected = _sign(_key(secret), msg_id, timestamp, body)
    verified = False
    for entry in signatures.split(" "):
        version, _, given = entry.partition(",")
        if version != "v1" or not given:
            continue
        try:
            candidate = base64.b64decode(given, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(candidate, expected):
            verified = True
            break
    if not verified:
        raise WebhookVerificationError("No matching signature found")
    try:
        data = json.loads(body)
    except ValueError:
        raise WebhookVerificationError("The body is not JSON") from None
    if not isinstance(data, dict):
        raise WebhookVerificationError("The body is not an event")
    model = WEBHOOK_EVENT_MODELS.get(str(data.get("type")), UnknownWebhookEvent)
    return cast(WebhookEvent, parse(model, data, strict=strict_default()))


def sign_webhook(
    payload: str | bytes, secret: str, *, id: str, timestamp: datetime | float | None = None
) -> dict[str, str]:
    """Signs a payload as the service does (to test your own handler): the three headers to send with it."""
    at = str(_seconds(timestamp))
    body = payload.encode() if isinstance(payload, str) else payload
    signature = base64.b64encode(_sign(_key(secret), id, at, body)).decode()
    return {"webhook-id": id, "webhook-timestamp": at, "webhook-signature": f"v1,{signature}"}


class VerifyWebhookMixin:
    """The secret key's `webhooks` namespace also verifies deliveries: `client.webhooks.verify(...)`."""

    @staticmethod
    def verify(
        payload: str | bytes | bytearray | memoryview,
        headers: HeadersLike,
        secret: str,
        *,
        tolerance: int = 300,
        now: datetime | float | None = None,
    ) -> WebhookEvent:
        """`offerkit.verify_webhook`: verifies a delivery and returns its event."""
        return verify_webhook(payload, headers, secret, tolerance=tolerance, now=now)
