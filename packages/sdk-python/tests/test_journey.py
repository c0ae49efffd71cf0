"""A whole journey through the sync clients against the real service: catalog, account, usage to a 402 with its
offer, checkout at the PayPal stand-in, a cancel session with an account token, and webhook deliveries verified
as they arrived (by the SDK and by the reference Standard Webhooks library)."""

from __future__ import annotations

import json

import pytest
from standardwebhooks import Webhook

import offerkit
from offerkit import (
    Account,
    AccountTokenClient,
    LimitReachedError,
    PublishableClient,
    SecretClient,
    WebhookVerificationError,
)
from offerkit.types import (
    AccountCreatedEvent,
    CancelFlowCancelledEvent,
    CheckoutCompletedEvent,
    UsageLimitReachedEvent,
)

from .conftest import App, Delivery, Receiver, approve, connect_paypal, env, eventually


def test_journey(app: App, secret: SecretClient, pub: PublishableClient, receiver: Receiver, base_url: str) -> None:
    # Webhooks first, so every event of the journey is delivered.
    endpoint = secret.webhooks.create(url=receiver.url, events=["*"])
    assert endpoint.secret and endpoint.secret.startswith("whsec_")

    # Catalog.
    secret.entitlements.create(id="seats", type="usage", name="Seats", overage={"mode": "block"})
    secret.plans.create(id="free", name="Free", isFree=True, pricingCard={"monthlyPrice": 0})
    secret.plans.attach_entitlement("free", id="seats", max=1)
    secret.plans.create(id="pro", name="Pro", pricingCard={"monthlyPrice": 29, "currency": "USD"})
    secret.plans.attach_entitlement("pro", id="seats", max=5)
    cards = pub.plans.list_pricing_cards()
    assert [c.plan_id for c in cards] == ["free", "pro"]

    # An account, and its access read with the publishable key.
    alice: Account = secret.accounts.create(id="alice", name="Alice", plan="free")
    assert (alice.id, alice.plan, alice.name) == ("alice", "free", "Alice")
    access = pub.access.get("alice")
    assert access.plan.id == "free"
    seats = next(e for e in access.entitlements if e.id == "seats")
    assert (seats.max, seats.usage) == (1, 0)

    # The provider and an offer, so the 402 has something to sell.
    connect_paypal(secret)
    secret.offers.create(
        id="more_seats", name="More seats", plans=[{"plan": "pro", "prices": [{"interval": "month", "amount": 19}]}]
    )
    secret.offers.publish("more_seats")
    secret.entitlements.update("seats", overage={"mode": "block", "offer_id": "more_seats"})

    # Usage: the first seat fits, the second is a typed 402 with the upgrade offer.
    counted = pub.usage.add("alice", "seats")
    assert (counted.entitlement, counted.count) == ("seats", 1)
    with pytest.raises(LimitReachedError) as refused:
        pub.usage.add("alice", "seats")
    limit = refused.value
    assert isinstance(limit, offerkit.APIError) and limit.status == 402
    assert limit.body["error"] == "limit_reached"
    assert limit.message == limit.body["message"] and limit.message.startswith("Seats: 1 of 1 used. Upgrade to Pro")
    assert limit.entitlement.model_dump() == {"id": "seats", "name": "Seats", "usage": 1, "max": 1}
    offer = limit.offer
    assert offer is not None
    assert (offer.id, offer.price, offer.list_price, offer.new_limit, offer.interval) == (
        "more_seats",
        19,
        29,
        5,
        "month",
    )
    assert (offer.plan.id, offer.plan.name) == ("pro", "Pro")
    assert offer.checkout_url and offer.checkout_url.endswith("/open") and "/checkouts/chk_" in offer.checkout_url
    assert secret.usage.get("alice", "seats").count == 1, "the counter did not move"

    # Checkout through the offer, approved at the PayPal stand-in, completed through the SDK.
    checkout = pub.offers.checkout(
        "more_seats", plan="pro", interval="month", account="alice", return_url="https://shop.example/thanks"
    )
    assert isinstance(checkout, offerkit.Checkout) and checkout.status == "created"
    assert checkout.approve_url
    approve(checkout.approve_url)

    def completed() -> offerkit.Checkout | None:
        answer = pub.checkouts.complete(checkout.id)
        return answer if answer.status == "completed" else None

    done = eventually(completed)
    assert (done.offer, done.plan, done.account) == ("more_seats", "pro", "alice")
    assert pub.access.get("alice").plan.id == "pro"
    assert pub.usage.add("alice", "seats").count == 2, "paid: the second seat fits"

    # A cancel session in the browser, with an account token minted on the server.
    secret.cancel_flows.create(status="active")
    token = secret.accounts.create_token("alice", ttl_seconds=600).token
    with AccountTokenClient(account_token=token, base_url=base_url) as browser:
        assert browser.app_id == app.id, "the app comes from the token"
        assert browser.account_id == "alice"
        assert browser.access.get(browser.account_id).plan.id == "pro"
        session = browser.cancel_sessions.start()
        assert session.step.id == "reason"
        at_offer = browser.cancel_sessions.answer(session.id, step="reason", answer="not_using")
        assert at_offer.step.id == "offer"
        at_confirm = browser.cancel_sessions.decline(session.id)
        assert (at_confirm.step.id, at_confirm.step.type) == ("confirm", "confirm")
        assert browser.cancel_sessions.cancel(session.id).status == "cancelled"
        subscription = browser.subscriptions.get("alice")
        assert subscription.status == "cancelled"
        assert not hasattr(browser, "accounts"), "the token client has no secret-key namespaces"
    assert secret.accounts.get("alice").plan == "free"

    # Webhooks: every delivery verifies with the endpoint's secret (here and in the reference library) and its
    # model tells what `data` holds.
    wanted = {"account.created", "usage.limit_reached", "checkout.completed", "cancel_flow.cancelled"}

    def verified() -> list[tuple[Delivery, offerkit.WebhookEvent]] | None:
        pairs = [(d, offerkit.verify_webhook(d.body, d.headers, endpoint.secret or "")) for d in receiver.received]
        return pairs if wanted <= {e.type for _, e in pairs} else None

    reference = Webhook(endpoint.secret or "")
    for delivery, event in eventually(verified, 30):
        assert reference.verify(delivery.body, delivery.headers) == json.loads(delivery.body)
        assert event.app_id == app.id and event.id.startswith("evt_")
        assert delivery.headers["webhook-id"] == event.id
        if isinstance(event, AccountCreatedEvent):
            assert event.data.object.id == "alice"
        elif isinstance(event, UsageLimitReachedEvent):
            usage = event.data.object
            assert (usage.account_id, usage.entitlement_id, usage.usage, usage.max, usage.left) == (
                "alice",
                "seats",
                1,
                1,
                0,
            )
        elif isinstance(event, CheckoutCompletedEvent):
            assert event.data.object.id == checkout.id and event.data.account.plan == "pro"
        elif isinstance(event, CancelFlowCancelledEvent):
            assert event.data.object.id == session.id and event.data.object.status == "cancelled"
            assert event.data.account.plan == "free"

    # A delivery altered on the way, or checked with another secret, does not verify.
    first = receiver.received[0]
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        offerkit.verify_webhook(first.body.replace(b'"app_id"', b'"app_id" '), first.headers, endpoint.secret or "")
    other = secret.webhooks.regenerate_secret(endpoint.id)
    with pytest.raises(WebhookVerificationError):
        secret.webhooks.verify(first.body, first.headers, other.secret or "")
    assert env("OFFERKIT_STRICT_RESPONSES") == "1", "every answer above was checked against the models"
