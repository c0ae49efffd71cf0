"""Webhook verification: real deliveries from the service to a receiver on loopback, and compatibility with the
reference Standard Webhooks library (`standardwebhooks` on PyPI) in both directions."""

from __future__ import annotations

import base64
import json
import os
from datetime import datetime, timedelta, timezone

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as ReferenceRefused

import offerkit
from offerkit import SecretClient, WebhookVerificationError, sign_webhook, verify_webhook
from offerkit.types import UnknownWebhookEvent, UsageLimitReachedEvent

from .conftest import Receiver, eventually

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef01234567").decode()


def sample(event_type: str, event_id: str) -> str:
    """A delivery's body: the event catalog's sample of the type (test/sdk/python.test.ts writes them)."""
    with open(os.environ["OFFERKIT_EVENT_SAMPLES"]) as f:
        found = next(s for s in json.load(f) if s["type"] == event_type)
    return json.dumps({**found, "id": event_id}, separators=(",", ":"))


def test_verifies_what_the_reference_library_signs_and_the_reverse() -> None:
    body = sample("account.deleted", "evt_1")
    at = datetime.now(timezone.utc)
    signature = Webhook(SECRET).sign("evt_1", at, body)
    headers = {"webhook-id": "evt_1", "webhook-timestamp": str(int(at.timestamp()))}
    event = verify_webhook(body, {**headers, "webhook-signature": signature}, SECRET, tolerance=10**9)
    assert event.id == "evt_1" and event.type == "account.deleted"
    # Bytes, header names in any case, and several signatures (a rotated secret) work too.
    many = "v1," + base64.b64encode(b"not it").decode() + " " + signature
    mixed = {"Webhook-Id": "evt_1", "Webhook-Timestamp": headers["webhook-timestamp"], "Webhook-Signature": many}
    assert verify_webhook(body.encode(), mixed, SECRET).id == "evt_1"

    mine = sign_webhook(body, SECRET, id="evt_2")
    assert Webhook(SECRET).verify(body, mine) == json.loads(body)


def test_refuses_altered_bodies_other_secrets_missing_headers_and_stale_timestamps() -> None:
    body = sample("plan.deleted", "evt_3")
    signed = sign_webhook(body, SECRET, id="evt_3")

    def refused(match: str, payload: str, headers: dict[str, str], secret: str = SECRET) -> None:
        with pytest.raises(WebhookVerificationError, match=match):
            verify_webhook(payload, headers, secret)

    refused("No matching signature", body.replace("evt_3", "evt_4"), signed)
    refused("No matching signature", body, signed, "whsec_" + base64.b64encode(b"another secret, 24 bytes").decode())
    refused("No matching signature", body, {**signed, "webhook-id": "evt_4"})
    refused("Missing webhook headers", body, {"webhook-id": "evt_3"})
    refused("not whsec_", body, signed, "whsec_!!!")
    old = sign_webhook(body, SECRET, id="evt_3", timestamp=datetime.now(timezone.utc) - timedelta(seconds=301))
    refused("too old", body, old)
    new = sign_webhook(body, SECRET, id="evt_3", timestamp=datetime.now(timezone.utc) + timedelta(seconds=301))
    refused("too new", body, new)
    assert verify_webhook(body, old, SECRET, tolerance=400).id == "evt_3", "a wider tolerance"
    # The reference library refuses what the SDK refuses.
    with pytest.raises(ReferenceRefused):
        Webhook(SECRET).verify(body.replace("evt_3", "evt_4"), signed)


def test_an_event_type_this_version_does_not_know_still_verifies() -> None:
    body = json.dumps({"id": "evt_9", "type": "invoice.paid", "created_at": "x", "app_id": "a", "data": {"n": 1}})
    event = verify_webhook(body, sign_webhook(body, SECRET, id="evt_9"), SECRET)
    assert isinstance(event, UnknownWebhookEvent) and event.type == "invoice.paid" and event.data == {"n": 1}


def test_every_sample_of_the_event_catalog_fits_its_model() -> None:
    with open(os.environ["OFFERKIT_EVENT_SAMPLES"]) as f:
        samples = json.load(f)
    assert [s["type"] for s in samples] == list(offerkit.WEBHOOK_EVENT_TYPES)
    for sample in samples:
        body = json.dumps(sample)
        event = verify_webhook(body, sign_webhook(body, SECRET, id=sample["id"]), SECRET)
        assert type(event).__name__ != "UnknownWebhookEvent", sample["type"]
        assert event.type == sample["type"] and event.to_dict() == sample


def test_a_real_delivery_verifies_here_and_in_the_reference_library(seeded: SecretClient, receiver: Receiver) -> None:
    endpoint = seeded.webhooks.create(url=receiver.url, events=["usage.limit_reached"])
    assert endpoint.secret
    seeded.accounts.create(id="carol", plan="free")
    seeded.usage.add("carol", "seats")  # 1 of 1
    [delivery] = receiver.wait_for(1)
    event = seeded.webhooks.verify(delivery.body, delivery.headers, endpoint.secret)
    assert isinstance(event, UsageLimitReachedEvent)
    assert event.data.object.model_dump() == {
        "account_id": "carol",
        "entitlement_id": "seats",
        "entitlement_name": "Seats",
        "usage": 1,
        "max": 1,
        "left": 0,
        "percent": 100,
        "entity": None,  # the account's own counter (a per-entity one names its entity)
    }
    assert delivery.headers["webhook-id"] == event.id
    assert Webhook(endpoint.secret).verify(delivery.body, delivery.headers)["id"] == event.id
    tampered = delivery.body.replace(b'"usage":1', b'"usage":0')
    assert tampered != delivery.body
    with pytest.raises(WebhookVerificationError):
        verify_webhook(tampered, delivery.headers, endpoint.secret)
    with pytest.raises(ReferenceRefused):
        Webhook(endpoint.secret).verify(tampered, delivery.headers)

    # A test send is verified the same way and says so.
    seeded.webhooks.send_test(endpoint.id, type="usage.limit_reached")
    test = eventually(lambda: receiver.received[1] if len(receiver.received) > 1 else None)
    sample = verify_webhook(test.body, test.headers, endpoint.secret)
    assert sample.test is True
