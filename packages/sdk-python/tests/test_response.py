"""`with_response`: an answer's status, request id, idempotent replay and rate limit beside its body."""

from __future__ import annotations

import re

import pytest

from offerkit import APIResponse, AsyncSecretClient, NotFoundError, PublishableClient, SecretClient

from .conftest import App


def test_with_response_gives_status_request_id_replay_and_rate_limit(
    app: App, secret: SecretClient, pub: PublishableClient
) -> None:
    secret.entitlements.create(id="calls", type="usage", name="Calls")
    secret.plans.create(id="basic", name="Basic")
    secret.plans.attach_entitlement("basic", id="calls", max=None)
    # A POST answered for the first time, then replayed for the same idempotency key.
    first = secret.accounts.with_response.create(id="wr", plan="basic", idempotency_key="wr-create-1")
    assert isinstance(first, APIResponse)
    assert first.data.id == "wr"
    assert (first.response.status, first.response.replayed) == (201, False)
    assert first.response.request_id and re.fullmatch(r"[0-9a-f-]{36}", first.response.request_id)
    again = secret.accounts.with_response.create(id="wr", plan="basic", idempotency_key="wr-create-1")
    assert again.response.replayed is True
    assert again.data == first.data
    assert first.http_response.status_code == 201
    # The publishable key's answers carry its rate limit (the secret key's have none: it is not limited).
    added = pub.usage.with_response.add("wr", "calls")
    assert added.data.count == 1
    assert added.response.rate_limit is not None and added.response.rate_limit.limit == 100
    assert 0 <= added.response.rate_limit.remaining <= 99
    assert secret.accounts.with_response.get("wr").response.rate_limit is None
    # A list's first page, with its answer.
    listed = secret.accounts.with_response.list(per_page=1)
    assert listed.data.total == 1 and listed.response.status == 200
    # Errors carry the same view of their answer.
    with pytest.raises(NotFoundError) as missing:
        secret.accounts.with_response.get("nobody")
    assert missing.value.response.status == 404 and missing.value.response.request_id


def test_raw_requests_use_the_client_credential_and_errors(secret: SecretClient, app: App) -> None:
    answer = secret.request("GET", f"/apps/{app.id}")
    assert isinstance(answer, dict) and answer["id"] == app.id
    with pytest.raises(NotFoundError):
        secret.request("GET", f"/apps/{app.id}/plans/nope")


@pytest.mark.anyio
async def test_async_with_response(app: App, seeded: SecretClient, base_url: str) -> None:
    async with AsyncSecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url) as client:
        created = await client.accounts.with_response.create(id="ann", idempotency_key="ann-1")
        assert (created.data.id, created.response.status, created.response.replayed) == ("ann", 201, False)
        replay = await client.accounts.with_response.create(id="ann", idempotency_key="ann-1")
        assert replay.response.replayed is True
        page = await client.accounts.with_response.list(per_page=1)
        assert page.data.total == 1 and page.response.request_id
        assert (await client.request("GET", f"/apps/{app.id}/namespaces/ann")) == created.data.to_dict()
