"""The shape of the SDK, from its operation table: every operation is a method of the clients whose credential
may call it (and of no other), named as the TypeScript SDK's in snake_case, with its route in its docstring, keyword
arguments for its body and query, and `idempotency_key` on every write."""

from __future__ import annotations

import inspect
import re
import time
from typing import Any

import pytest

import offerkit
from offerkit import (
    OPERATIONS,
    AccountTokenClient,
    AsyncAccountTokenClient,
    AsyncPublishableClient,
    AsyncSecretClient,
    OfferkitError,
    PublishableClient,
    SecretClient,
    decode_account_token,
)

from .conftest import App


def snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name)


@pytest.fixture
def clients(app: App, secret: SecretClient, base_url: str) -> dict[str, list[Any]]:
    secret.plans.create(id="free", name="Free", isFree=True)
    secret.accounts.create(id="someone")
    act = secret.accounts.create_token("someone").token
    # Only inspected, never called: no connection is opened.
    return {
        "S": [
            SecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url),
            AsyncSecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url),
        ],
        "P": [
            PublishableClient(publishable_key=app.public_key, app_id=app.id, base_url=base_url),
            AsyncPublishableClient(publishable_key=app.public_key, app_id=app.id, base_url=base_url),
        ],
        "T": [
            AccountTokenClient(account_token=act, base_url=base_url),
            AsyncAccountTokenClient(account_token=act, base_url=base_url, app_id=app.id),
        ],
    }


def test_every_operation_is_a_method_of_exactly_the_clients_that_may_call_it(clients: dict[str, list[Any]]) -> None:
    assert len(OPERATIONS) > 100
    for op in OPERATIONS:
        ns, method = op.name.split(".")
        assert op.python_name == f"{snake(ns)}.{snake(method)}"
        for cred, pair in clients.items():
            for client in pair:
                resource = getattr(client, snake(ns), None)
                fn = getattr(resource, snake(method), None) if resource is not None else None
                if cred in op.auth:
                    assert callable(fn), f"{type(client).__name__}.{op.python_name}"
                else:
                    assert fn is None, f"{type(client).__name__} must not have {op.python_name}"


def test_methods_take_path_arguments_then_keywords_and_name_their_route(clients: dict[str, list[Any]]) -> None:
    sync, async_ = clients["S"]
    for op in OPERATIONS:
        ns, method = op.python_name.split(".")
        for client in (sync, async_):
            fn = getattr(getattr(client, ns), method)
            params = list(inspect.signature(fn).parameters.values())
            positional = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY]
            assert positional == [snake(p) for p in op.params], op.name
            keywords = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
            assert {"timeout", "max_retries", "extra_headers"} <= keywords
            assert ("idempotency_key" in keywords) == (op.method != "GET"), op.name
            doc = inspect.getdoc(fn) or ""
            assert f"`{op.method} {op.path}`" in doc, f"{op.name} docstring names its route"
            assert inspect.iscoroutinefunction(fn) == (client is async_ and not op.paginated), op.name


def test_body_and_query_fields_are_keyword_arguments() -> None:
    client = SecretClient(secret_key="key_x", app_id="app_x", base_url="http://127.0.0.1:9")
    create = inspect.signature(client.plans.create).parameters
    assert create["id"].kind is inspect.Parameter.KEYWORD_ONLY
    assert create["id"].default is inspect.Parameter.empty, "required"
    assert create["isFree"].default is offerkit.NOT_GIVEN, "optional: left out unless given"
    assert {"plan", "page", "per_page", "q"} <= set(inspect.signature(client.accounts.list).parameters)


def test_account_tokens_name_their_app_and_account(app: App, seeded: SecretClient) -> None:
    seeded.accounts.create(id="zed")
    token = seeded.accounts.create_token("zed", ttl_seconds=120).token
    base_url = seeded.base_url
    info = decode_account_token(token)
    assert (info.app_id, info.account_id) == (app.id, "zed")
    assert 100 < info.expires_at.timestamp() - time.time() <= 120
    with pytest.raises(OfferkitError, match="not app_other"):
        AccountTokenClient(account_token=token, base_url=base_url, app_id="app_other")
    with pytest.raises(OfferkitError, match="Not an account token"):
        decode_account_token("key_abc")
