"""The async clients against the real service: the same namespaces as the sync ones, methods to await."""

from __future__ import annotations

import pytest

from offerkit import (
    AsyncAccountTokenClient,
    AsyncPublishableClient,
    AsyncSecretClient,
    LimitReachedError,
)

from .conftest import App


@pytest.mark.anyio
async def test_an_async_journey(app: App, base_url: str) -> None:
    async with (
        AsyncSecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url) as secret,
        AsyncPublishableClient(publishable_key=app.public_key, app_id=app.id, base_url=base_url) as pub,
    ):
        await secret.entitlements.create(id="api_calls", type="usage", name="API calls", overage={"mode": "block"})
        await secret.plans.create(id="free", name="Free", isFree=True)
        await secret.plans.attach_entitlement("free", id="api_calls", max=2)
        await secret.accounts.create(id="alice")
        counts = [(await pub.usage.add("alice", "api_calls")).count for _ in range(2)]
        assert counts == [1, 2]
        with pytest.raises(LimitReachedError) as refused:
            await pub.usage.add("alice", "api_calls")
        assert (refused.value.entitlement.usage, refused.value.entitlement.max) == (2, 2)
        assert refused.value.offer is None, "nothing to sell: no paid plan"
        assert (await pub.usage.add_amount("alice", "api_calls", amount=0)).count == 2

        await secret.cancel_flows.create(status="active")
        token = (await secret.accounts.create_token("alice")).token
        async with AsyncAccountTokenClient(account_token=token, base_url=base_url) as browser:
            assert browser.account_id == "alice"
            session = await browser.cancel_sessions.start()
            assert session.step.id == "reason"
            access = await browser.access.get("alice")
            assert access.plan.id == "free"
