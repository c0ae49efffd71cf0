"""Errors, timeouts and retries against the real service. Faults (a 503, a stalled answer) come from a real HTTP
proxy on loopback in front of it (conftest.Proxy), which forwards everything else untouched."""

from __future__ import annotations

import socket

import pytest

from offerkit import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AsyncSecretClient,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    OfferkitError,
    PermissionDeniedError,
    PublishableClient,
    RateLimitError,
    SecretClient,
)

from .conftest import App, Fault, Proxy


def test_every_non_2xx_is_an_api_error_of_the_class_of_its_status(
    app: App, seeded: SecretClient, base_url: str
) -> None:
    seeded.accounts.create(id="bob", plan="free")
    with pytest.raises(NotFoundError) as missing:
        seeded.accounts.get("nobody")
    assert isinstance(missing.value, APIError) and isinstance(missing.value, OfferkitError)
    assert (missing.value.status, missing.value.message) == (404, "Account nobody not found")
    assert missing.value.body == {"error": "Account nobody not found"}
    assert str(missing.value) == "Account nobody not found"
    assert missing.value.request_id and missing.value.request_id == missing.value.response.request_id

    with pytest.raises(BadRequestError) as invalid:
        seeded.accounts.create(id="")
    assert invalid.value.status == 400 and invalid.value.message.startswith("id: ")

    with pytest.raises(ConflictError) as clash:
        seeded.accounts.create(id="bob")
    assert clash.value.status == 409 and clash.value.reason is None

    with (
        SecretClient(secret_key="key_wrong", app_id=app.id, base_url=base_url) as wrong,
        pytest.raises(AuthenticationError) as denied,
    ):
        wrong.apps.get()
    assert (denied.value.status, denied.value.message) == (401, "Unauthorized")

    with (
        PublishableClient(publishable_key=app.public_key, app_id=app.id, base_url=base_url) as pub,
        pytest.raises(PermissionDeniedError) as negative,
    ):
        pub.usage.add_amount("bob", "api_calls", amount=-1)
    assert negative.value.status == 403
    assert negative.value.body == {"error": "The publishable key cannot subtract usage"}


def test_a_conflict_says_why_an_offer_cannot_be_bought(seeded: SecretClient) -> None:
    seeded.accounts.create(id="carol", plan="free")
    seeded.offers.create(
        id="spring", name="Spring", plans=[{"plan": "pro", "prices": [{"interval": "month", "amount": 19}]}]
    )
    with pytest.raises(ConflictError) as refused:
        seeded.offers.checkout("spring", plan="pro", interval="month", account="carol")
    assert refused.value.status == 409
    assert refused.value.reason == refused.value.body.get("reason")
    assert isinstance(refused.value.reason, str) and refused.value.reason


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_network_failures_and_timeouts_are_their_own_errors(app: App, proxy: Proxy) -> None:
    closed = SecretClient(
        secret_key=app.api_key, app_id=app.id, base_url=f"http://127.0.0.1:{free_port()}", max_retries=0
    )
    with closed, pytest.raises(APIConnectionError) as refused:
        closed.apps.get()
    assert not isinstance(refused.value, (APITimeoutError, APIError))
    assert "refused" in refused.value.message.lower()

    proxy.fault = lambda n, seen: Fault(delay=1.5)
    with SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url, max_retries=0) as slow:
        with pytest.raises(APITimeoutError) as timed_out:
            slow.apps.get(timeout=0.3)
        assert isinstance(timed_out.value, APIConnectionError) and timed_out.value.timeout == 0.3
        assert str(timed_out.value) == "Request timed out after 0.3 s"
        # With a longer timeout the same slow answer arrives.
        assert slow.apps.get(timeout=5).id == app.id


def test_retries_gets_after_a_503_and_posts_with_the_same_idempotency_key(
    app: App, seeded: SecretClient, proxy: Proxy
) -> None:
    seeded.accounts.create(id="bob", plan="free")
    client = SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url, max_retries=2)
    no_keys = SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url, idempotency_keys=False)
    with client, no_keys:
        retries(seeded, client, no_keys, proxy)


def retries(seeded: SecretClient, client: SecretClient, no_keys: SecretClient, proxy: Proxy) -> None:
    proxy.fail(2)
    assert client.accounts.get("bob").id == "bob"
    assert [s.method for s in proxy.seen] == ["GET", "GET", "GET"]

    proxy.seen.clear()
    proxy.fail(1)
    assert client.usage.add("bob", "api_calls").count == 1
    assert len(proxy.seen) == 2
    first, second = (s.headers.get("idempotency-key") for s in proxy.seen)
    assert first and first.startswith("sdk_") and second == first, "the same key on the retry"
    proxy.seen.clear()
    client.usage.add("bob", "api_calls")
    assert proxy.seen[0].headers.get("idempotency-key") != first, "a new key per call"

    proxy.seen.clear()
    proxy.fail(1)
    with pytest.raises(InternalServerError) as once:
        client.accounts.update("bob", name="Bob")
    assert (once.value.status, once.value.message) == (503, "injected 503")
    assert len(proxy.seen) == 1, "PATCH without an idempotency key is not retried"

    proxy.seen.clear()
    proxy.fail(1)
    client.accounts.update("bob", name="Bob", idempotency_key="rename-bob-1")
    assert [s.headers.get("idempotency-key") for s in proxy.seen] == ["rename-bob-1", "rename-bob-1"]

    proxy.seen.clear()
    proxy.fail(1)
    with pytest.raises(InternalServerError):
        no_keys.usage.add("bob", "api_calls")
    assert len(proxy.seen) == 1, "without a key a POST is sent once"
    assert "idempotency-key" not in proxy.seen[0].headers
    assert seeded.usage.get("bob", "api_calls").count == 2, "each call counted once"

    proxy.seen.clear()
    proxy.fail(5)
    with pytest.raises(InternalServerError):
        client.accounts.get("bob", max_retries=1)
    assert len(proxy.seen) == 2, "max_retries per call"


def test_a_503_saying_the_outcome_is_unknown_is_not_retried(app: App, proxy: Proxy) -> None:
    unknown = {
        "error": "Service unavailable: the database stopped answering while it committed this change, ...",
        "outcome": "unknown",
    }
    proxy.fault = lambda n, seen: Fault(503, body=unknown)
    client = SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url, max_retries=2)
    with client, pytest.raises(InternalServerError) as err:
        client.accounts.create(id="maybe")
    assert err.value.status == 503 and err.value.body == unknown
    assert len(proxy.seen) == 1, "sent once, though POSTs with a key are retried"


def test_a_429_is_a_rate_limit_error_with_retry_after_and_is_retried_when_it_says(app: App, proxy: Proxy) -> None:
    # The shape of the service's 429 (src/security/admission.ts); the real one (100 a second per client address) is
    # met with the TypeScript SDK in test/sdk/response-headers.test.ts, which lowers the limit in the server's process.
    limited_headers = {"retry-after": "7", "ratelimit-limit": "100", "ratelimit-remaining": "0", "ratelimit-reset": "7"}
    proxy.fault = lambda n, seen: Fault(429, body={"error": "Rate limit exceeded"}, headers=limited_headers)
    client = SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url, max_retries=0)
    with client, pytest.raises(RateLimitError) as limited:
        client.apps.get()
    err = limited.value
    assert (err.status, err.message, err.retry_after) == (429, "Rate limit exceeded", 7)
    assert err.response.rate_limit is not None
    assert (err.response.rate_limit.limit, err.response.rate_limit.remaining) == (100, 0)

    # A 429 asking to wait 0 seconds is retried at once, and the call succeeds.
    proxy.seen.clear()
    proxy.fault = lambda n, seen: Fault(429, headers={"retry-after": "0"}) if n == 0 else None
    with SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url, max_retries=1) as retrying:
        assert retrying.apps.get().id == app.id
    assert len(proxy.seen) == 2


def test_constructors_check_their_credential(app: App, base_url: str) -> None:
    with pytest.raises(OfferkitError, match="secret key"):
        SecretClient(secret_key=app.public_key, app_id=app.id, base_url=base_url)
    with pytest.raises(OfferkitError, match="pub_"):
        PublishableClient(publishable_key=app.api_key, app_id=app.id, base_url=base_url)
    with pytest.raises(OfferkitError, match="app_id is required"):
        SecretClient(secret_key=app.api_key, app_id="", base_url=base_url)
    with (
        SecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url) as client,
        pytest.raises(OfferkitError, match="account_id is required"),
    ):
        client.accounts.get("")


@pytest.mark.anyio
async def test_async_errors_and_retries(app: App, seeded: SecretClient, proxy: Proxy) -> None:
    async with AsyncSecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url) as client:
        with pytest.raises(NotFoundError):
            await client.accounts.get("nobody")
        proxy.seen.clear()
        proxy.fail(1)
        created = await client.accounts.create(id="dora")
        assert created.id == "dora"
        assert (
            len(proxy.seen) == 2
            and proxy.seen[0].headers["idempotency-key"] == proxy.seen[1].headers["idempotency-key"]
        )
        proxy.fault = lambda n, seen: Fault(delay=1.5)
        with pytest.raises(APITimeoutError):
            await client.apps.get(timeout=0.3, max_retries=0)
