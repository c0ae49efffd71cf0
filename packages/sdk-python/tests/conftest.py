"""Fixtures for the SDK's tests, which run against a real offerkit service.

test/sdk/python.test.ts runs them on the suite's servers and sets the environment: OFFERKIT_BASE_URL and
OFFERKIT_ADMIN_KEY (to create a fresh app per test), OFFERKIT_PAYPAL_URL and PAYPAL_CLIENT_ID / PAYPAL_CLIENT_SECRET
(the local PayPal stand-in, to approve checkouts as a buyer does), OFFERKIT_STRICT_RESPONSES=1 (every answer must fit
the models) and OFFERKIT_EVENT_SAMPLES (the event catalog's samples).
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import pytest

from offerkit import PublishableClient, SecretClient


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through test/sdk/python.test.ts (npm test)")
    return value


@dataclass(frozen=True)
class App:
    id: str
    api_key: str
    public_key: str


@pytest.fixture(scope="session")
def base_url() -> str:
    return env("OFFERKIT_BASE_URL")


def create_app(name: str) -> App:
    answer = httpx.post(
        f"{env('OFFERKIT_BASE_URL')}/apps",
        json={"name": name},
        headers={"Authorization": f"Bearer {env('OFFERKIT_ADMIN_KEY')}"},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return App(body["id"], body["api_key"], body["public_key"])


@pytest.fixture
def app(request: pytest.FixtureRequest) -> App:
    """A fresh app (tenant) per test, so tests never see each other's records."""
    return create_app(f"Python SDK {request.node.name}"[:100])


@pytest.fixture
def secret(app: App, base_url: str) -> Iterator[SecretClient]:
    with SecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url) as client:
        yield client


@pytest.fixture
def pub(app: App, base_url: str) -> Iterator[PublishableClient]:
    with PublishableClient(publishable_key=app.public_key, app_id=app.id, base_url=base_url) as client:
        yield client


def seed_catalog(client: SecretClient) -> None:
    """api_calls (usage), seats (usage, blocking); free (100 calls, 1 seat) and pro ($29: 1,000 calls, 5 seats)."""
    client.entitlements.create(id="api_calls", type="usage", name="API calls")
    client.entitlements.create(id="seats", type="usage", name="Seats", overage={"mode": "block"})
    client.plans.create(id="free", name="Free", isFree=True, pricingCard={"title": "Free", "monthlyPrice": 0})
    client.plans.attach_entitlement("free", id="api_calls", max=100)
    client.plans.attach_entitlement("free", id="seats", max=1)
    client.plans.create(id="pro", name="Pro", pricingCard={"monthlyPrice": 29, "currency": "USD"})
    client.plans.attach_entitlement("pro", id="api_calls", max=1000)
    client.plans.attach_entitlement("pro", id="seats", max=5)


@pytest.fixture
def seeded(secret: SecretClient) -> SecretClient:
    seed_catalog(secret)
    return secret


def connect_paypal(client: SecretClient) -> None:
    client.payments.connect(client_id=env("PAYPAL_CLIENT_ID"), client_secret=env("PAYPAL_CLIENT_SECRET"), env="sandbox")


def approve(approve_url: str) -> None:
    """Approves a checkout at the PayPal stand-in, as the buyer's click does."""
    query = httpx.URL(approve_url).params
    token = query.get("ba_token") or query.get("token") or ""
    answer = httpx.post(
        f"{env('OFFERKIT_PAYPAL_URL')}/checkoutnow/decision",
        data={"token": token, "decision": "approve"},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text


T = TypeVar("T")


def eventually(check: Callable[[], T | None], timeout: float = 20.0) -> T:
    """Polls `check` until it returns something truthy."""
    end = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > end:
            raise AssertionError(f"not within {timeout} s")
        time.sleep(0.2)


@dataclass
class Delivery:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook receiver on loopback that records every delivery and answers 200."""

    url: str
    received: list[Delivery] = field(default_factory=list)

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Delivery]:
        return eventually(lambda: self.received if len(self.received) >= count else None, timeout)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    deliveries: list[Delivery] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            deliveries.append(Delivery({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Receiver(f"http://127.0.0.1:{server.server_address[1]}/hooks", deliveries)
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Fault:
    status: int | None = None
    delay: float = 0.0
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    after: bool = False
    """Forward the request first, then answer the fault: the service applied it and its answer was lost."""


@dataclass
class Proxy:
    """An HTTP proxy on loopback in front of the service: answers with a fault when `fault` says so, forwards
    everything else untouched, and records every request."""

    url: str
    seen: list[Seen]
    fault: Callable[[int, Seen], Fault | None] = lambda n, seen: None

    def fail(self, count: int, status: int = 503, body: Any = None) -> None:
        """The next `count` requests get `status`."""
        start = len(self.seen)
        self.fault = lambda n, seen: Fault(status, body=body) if n < start + count else None


@pytest.fixture
def proxy(base_url: str) -> Iterator[Proxy]:
    upstream = httpx.Client(base_url=base_url, timeout=30)
    state = Proxy("", [])

    class Handler(http.server.BaseHTTPRequestHandler):
        def handle_one(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
            fault = state.fault(len(state.seen), seen)
            state.seen.append(seen)
            if fault and fault.delay:
                time.sleep(fault.delay)
            if fault and fault.status and fault.after:
                headers = {
                    k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")
                }
                upstream.request(self.command, self.path, headers=headers, content=body or None)
            if fault and fault.status:
                payload = json.dumps(fault.body or {"error": f"injected {fault.status}"}).encode()
                self.answer(fault.status, "application/json", payload, fault.headers)
                return
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")
            }
            up = upstream.request(self.command, self.path, headers=headers, content=body or None)
            self.answer(up.status_code, up.headers.get("content-type", "text/plain"), up.content, up.headers)

        def answer(self, status: int, content_type: str, payload: bytes, extra: Any = None) -> None:
            try:
                self.send_response(status)
                self.send_header("content-type", content_type)
                for name in ("x-request-id", "retry-after", "idempotent-replayed", "ratelimit-limit"):
                    if extra is not None and name in extra:
                        self.send_header(name, extra[name])
                for name in ("ratelimit-remaining", "ratelimit-reset"):
                    if extra is not None and name in extra:
                        self.send_header(name, extra[name])
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        upstream.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
