"""`client.local()`: access checks from memory kept fresh by the change stream, against the real service.

The TypeScript SDK's test/sdk/local.test.ts, the same cases with the same seeded generator (so a seed makes the same
catalogs, accounts and changes in both), plus the stream reader itself, lost answers and refused adds. The API
stopped and the client restarted with its buffer file: test/sdk/python-local.test.ts (real processes).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import anyio
import pytest

from offerkit import (
    APIError,
    AsyncSecretClient,
    AuthenticationError,
    BufferedUsage,
    ChangeEvent,
    LocalEvaluator,
    OfferkitError,
    SecretClient,
    stream_changes,
)

from .conftest import App, Fault, Proxy, Seen, eventually

SEED = int(os.environ.get("LOCAL_SEED", "44"))
ENTS = ["u1", "u2", "u3", "b1", "b2"]
M32 = 0xFFFFFFFF
T = TypeVar("T")


class Rng:
    """mulberry32, as test/sdk/local.test.ts has it (bit for bit: the same seed, the same draws)."""

    def __init__(self, seed: int) -> None:
        self.a = seed & M32

    def next(self) -> float:
        self.a = (self.a + 0x6D2B79F5) & M32
        t = self.a
        t = ((t ^ (t >> 15)) * (t | 1)) & M32
        t ^= (t + (((t ^ (t >> 7)) * (t | 61)) & M32)) & M32
        return ((t ^ (t >> 14)) & M32) / 4294967296

    def int(self, n: int) -> int:
        return int(self.next() * n)

    def pick(self, xs: Sequence[T]) -> T:
        return xs[int(self.next() * len(xs))]

    def chance(self, p: float) -> bool:
        return self.next() < p


def test_rng_draws_as_the_typescript_test() -> None:
    # The first draws of the TypeScript test's rng(44), `Math.floor(next() * 1e6)`, as node prints them.
    r = Rng(44)
    assert [r.int(1_000_000) for _ in range(6)] == [836180, 159714, 83130, 800959, 636328, 495520]


@pytest.fixture
def local(secret: SecretClient) -> Iterator[LocalEvaluator]:
    with secret.local() as evaluator:
        evaluator.ready()
        yield evaluator


def attempt(call: Callable[..., object], *args: object, **kwargs: object) -> None:
    """A random change the API may refuse (a limit on an entitlement the plan lacks): refused is fine."""
    with contextlib.suppress(APIError):
        call(*args, **kwargs)


def agree(client: SecretClient, local: LocalEvaluator, accounts: list[str]) -> None:
    """Every account's access and every check, from memory and from the API, until they agree (or 10 s)."""
    last = [""]

    def same() -> bool:
        for account_id in accounts:
            api = client.access.get_private(account_id)
            mine = local.access(account_id)
            if mine is None or mine.model_dump() != api.model_dump():
                last[0] = f"{account_id}: {mine and mine.model_dump()} != {api.model_dump()}"
                return False
            for e in ENTS:
                can = next((x.can for x in api.entitlements if x.id == e), False)
                if local.can(account_id, e) != can:
                    last[0] = f"{account_id} {e}: can {not can}"
                    return False
        return True

    try:
        eventually(same, 10)
    except AssertionError:
        raise AssertionError(f"local and API differ (seed {SEED}): {last[0]}") from None


def test_answers_as_the_api_over_random_catalogs_accounts_and_changes(
    secret: SecretClient, local: LocalEvaluator
) -> None:
    r = Rng(SEED)
    client = secret
    for e in ENTS:
        client.entitlements.create(id=e, type="usage" if e.startswith("u") else "boolean", name=e.upper())
    for a in ["x1", "x2"]:
        client.addons.create(id=a, name=a)
    plans = ["p1", "p2", "p3"]
    for p in plans:
        client.plans.create(id=p, name=p, isFree=p == "p1")
        for e in ENTS:
            if r.chance(0.6):
                client.plans.attach_entitlement(p, id=e, max=None if r.chance(0.2) else r.int(8))
        if r.chance(0.5):
            client.plans.attach_addon(p, id=r.pick(["x1", "x2"]))
    for i in ["i1", "i2"]:
        client.incentives.create(id=i, name=i)
        for e in ENTS:
            if r.chance(0.4):
                client.incentives.attach_entitlement(i, id=e, max=r.int(12))
    accounts = [f"acc{n}" for n in range(10)]
    for account_id in accounts:
        plan = r.pick(plans)
        if r.chance(0.3):
            client.accounts.create(id=account_id, plan=plan, incentive=r.pick(["i1", "i2"]))
        else:
            client.accounts.create(id=account_id, plan=plan)
        for e in ["u1", "u2", "u3"]:
            if r.chance(0.5):
                attempt(client.usage.add_amount, account_id, e, amount=r.int(9))
    for account_id in accounts:
        local.load(account_id)
    agree(client, local, accounts)
    # Changes through every kind of record, then the same comparison.
    for _ in range(25):
        account_id, op, e = r.pick(accounts), r.int(7), r.pick(ENTS)
        if op == 0:
            client.accounts.update(account_id, plan=r.pick(plans))
        elif op == 1:
            attempt(client.usage.add_amount, account_id, r.pick(["u1", "u2", "u3"]), amount=r.int(5))
        elif op == 2:
            attempt(client.plans.set_entitlement_limit, r.pick(plans), e, max=r.int(10))
        elif op == 3:
            if r.chance(0.5):
                client.accounts.update(account_id, incentive=r.pick(["i1", "i2"]))
            else:
                attempt(client.accounts.remove_incentive, account_id)
        elif op == 4:
            attempt(client.accounts.grant_addon, account_id, id=r.pick(["x1", "x2"]))
        elif op == 5:
            attempt(client.plans.attach_entitlement, r.pick(plans), id=e, max=r.int(6))
        else:
            attempt(client.usage.add_amount, account_id, r.pick(["u1", "u2", "u3"]), amount=-r.int(3))
    agree(client, local, accounts)
    assert local.stats.events > 0


def calls_catalog(client: SecretClient, limit: int) -> None:
    client.entitlements.create(id="calls", type="usage", name="Calls")
    client.plans.create(id="free", name="Free", isFree=True)
    client.plans.attach_entitlement("free", id="calls", max=limit)


def test_counts_its_own_tracked_usage_at_once_and_each_add_once_on_the_api(
    secret: SecretClient, local: LocalEvaluator
) -> None:
    calls_catalog(secret, 3)
    secret.accounts.create(id="ada")
    local.load("ada")
    assert local.can("ada", "calls") is True
    for _ in range(3):
        local.track("ada", "calls")
    # Counted here before the API answers.
    assert local.can("ada", "calls") is False
    local.flush()
    assert local.pending == 0
    assert secret.usage.get("ada", "calls").count == 3
    entry = local.access("ada")
    assert entry is not None
    assert (entry.entitlements[0].usage, entry.entitlements[0].left, entry.entitlements[0].can) == (3, 0, False)


def test_reserved_amounts_count_against_the_limit_as_on_the_api(secret: SecretClient, local: LocalEvaluator) -> None:
    calls_catalog(secret, 10)
    secret.accounts.create(id="ada")
    first = secret.reservations.create("ada", "calls", amount=6)
    local.load("ada")  # held estimated from `left` until the counter's first event

    def same() -> bool:
        mine = local.access("ada")
        return mine is not None and mine.model_dump() == secret.access.get_private("ada").model_dump()

    assert same() and local.can("ada", "calls") is True
    for _ in range(4):
        local.track("ada", "calls")
    assert local.can("ada", "calls") is False  # 4 used and 6 held of 10
    local.flush()
    secret.reservations.release("ada", first.id)
    eventually(lambda: local.can("ada", "calls") is True)
    eventually(same)
    secret.reservations.create("ada", "calls", amount=6)  # a `usage` event carries the held amount
    eventually(lambda: local.can("ada", "calls") is False)
    eventually(same)


def test_an_account_never_seen_is_answered_by_the_per_entitlement_policy_then_from_memory(
    secret: SecretClient,
) -> None:
    calls_catalog(secret, 5)
    secret.entitlements.create(id="sso", type="boolean", name="SSO")
    secret.plans.detach_entitlement("free", "calls")
    secret.accounts.create(id="bob")
    with secret.local(unknown={"calls": True, "default": False}) as local:
        local.ready()
        assert local.can("bob", "calls") is True
        assert local.can("bob", "sso") is False
        # Read in the background by that first question: now the plan (without `calls`) answers.
        eventually(lambda: local.access("bob") is not None)
        assert local.can("bob", "calls") is False
        # An account that does not exist: the policy first, then refused.
        assert local.can("nobody", "calls") is True
        eventually(lambda: local.can("nobody", "calls") is False)
        assert local.load("nobody") is None
    # Fail-open for everything, fail-closed (the default) for everything.
    with secret.local(unknown=True) as open_, secret.local() as closed:
        assert (open_.can("carol", "sso"), closed.can("carol", "sso")) == (True, False)


def test_a_change_through_the_api_is_seen_through_the_stream(secret: SecretClient, local: LocalEvaluator) -> None:
    calls_catalog(secret, 10)
    secret.accounts.create(id="ada")
    local.load("ada")
    seen: list[ChangeEvent] = []
    local.on_change = seen.append
    assert local.staleness() == 0.0
    loads = local.stats.loads
    # Usage added by another process: a `usage` event updates the counter in place (no read of the account).
    secret.usage.add_amount("ada", "calls", amount=9)
    eventually(lambda: (local.access("ada") or secret.access.get_private("x")).entitlements[0].usage == 9)
    assert local.stats.loads == loads
    assert local.can("ada", "calls") is True
    # A limit lowered on the plan: a `catalog` event, the account read again.
    secret.plans.set_entitlement_limit("free", "calls", max=9)
    eventually(lambda: local.can("ada", "calls") is False)
    assert local.stats.loads > loads
    kinds = {e.type for e in seen}
    assert {"usage", "catalog"} <= kinds, kinds


def test_stream_changes_resumes_after_an_id_and_resyncs_past_one_it_does_not_know(
    app: App, base_url: str, secret: SecretClient
) -> None:
    with stream_changes(base_url=base_url, app_id=app.id, credential=app.api_key) as events:
        first = next(iter(events))
    assert first.type == "ready" and first.id
    secret.entitlements.create(id="calls", type="usage", name="Calls")
    secret.plans.create(id="free", name="Free", isFree=True)
    # Resumed after `ready`: the changes made since, in order, with increasing ids.
    with stream_changes(base_url=base_url, app_id=app.id, credential=app.api_key, last_event_id=first.id) as events:
        got: list[ChangeEvent] = []
        for e in events:
            if e.type != "keep-alive":
                got.append(e)
            if len([x for x in got if x.type == "catalog"]) >= 2:
                break
    assert got[0].type == "ready" and got[0].id == first.id
    tables = [e.data["table"] for e in got if e.type == "catalog"]
    assert len(tables) == 2, got
    with stream_changes(
        base_url=base_url, app_id=app.id, credential=app.api_key, last_event_id="not-a-position"
    ) as events:
        resync = next(iter(events))
    assert resync.type == "resync" and resync.data["reason"]
    with pytest.raises(AuthenticationError):
        stream_changes(base_url=base_url, app_id=app.id, credential=app.public_key)


def test_an_add_whose_answer_was_lost_is_counted_once(app: App, proxy: Proxy, secret: SecretClient) -> None:
    calls_catalog(secret, 100)
    secret.accounts.create(id="ada")
    posts = [0]

    def fault(n: int, seen: Seen) -> Fault | None:
        if seen.path.endswith("/stream"):
            return Fault(503)  # the stream is not proxied here (the proxy does not pass a stream through)
        if seen.method == "POST":
            posts[0] += 1
            # The first add reaches the API and its answer is lost; the next is refused before it.
            if posts[0] == 1:
                return Fault(503, after=True)
            if posts[0] == 2:
                return Fault(503)
        return None

    proxy.fault = fault
    via = SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url)
    with via.local() as local:
        local.load("ada")
        local.track("ada", "calls", 4)
        local.track("ada", "calls", 1)
        local.flush()
    keys = [s.headers.get("idempotency-key") for s in proxy.seen if s.method == "POST"]
    assert len(keys) == 4 and keys[0] == keys[1] == keys[2] != keys[3], keys
    assert secret.usage.get("ada", "calls").count == 5
    via.close()


def test_an_add_the_api_refuses_is_dropped_and_reported(secret: SecretClient, local: LocalEvaluator) -> None:
    calls_catalog(secret, 100)
    secret.accounts.create(id="ada")
    dropped: list[tuple[BufferedUsage, APIError]] = []
    done = threading.Event()

    def on_dropped(item: BufferedUsage, err: APIError) -> None:
        dropped.append((item, err))
        done.set()

    with secret.local(on_dropped=on_dropped) as mine:
        mine.track("ada", "nothing_like_it")
        mine.track("ada", "calls", 2)
        mine.flush()
        assert done.wait(5)
    assert [(d.entitlement_id, e.status) for d, e in dropped] == [("nothing_like_it", 404)]
    assert secret.usage.get("ada", "calls").count == 2


def test_the_buffer_file_is_the_typescript_sdks_and_a_new_evaluator_sends_it(
    secret: SecretClient, tmp_path: object
) -> None:
    calls_catalog(secret, 100)
    secret.accounts.create(id="ada")
    file = os.path.join(str(tmp_path), "usage.jsonl")
    # As the TypeScript evaluator writes it: one JSON object per line, the same key twice (sent once). The sender
    # starts at once, so `pending` may already be down when read: the count says every line was read and sent once.
    line = json.dumps({"key": "local-ts-1", "accountId": "ada", "entitlementId": "calls", "amount": 3})
    other = json.dumps({"key": "local-ts-2", "accountId": "ada", "entitlementId": "calls", "amount": 4})
    with open(file, "w", encoding="utf-8") as f:
        f.write(f"{line}\n{line}\n{other}")
    with secret.local(buffer_file=file) as local:
        assert local.pending <= 3
        local.flush()
        assert local.pending == 0
    assert secret.usage.get("ada", "calls").count == 7
    with open(file, encoding="utf-8") as f:
        assert f.read() == ""
    with open(file, "w", encoding="utf-8") as f:
        f.write("not json\n")
    with pytest.raises(OfferkitError, match=r"usage\.jsonl:1"):
        secret.local(buffer_file=file)


def test_track_past_the_bound_raises(app: App, proxy: Proxy) -> None:
    proxy.fault = lambda n, seen: Fault(503)
    via = SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url)
    with via, via.local(max_buffer=2) as local:
        local.track("ada", "calls")
        local.track("ada", "calls")
        with pytest.raises(OfferkitError, match="full"):
            local.track("ada", "calls")
        with pytest.raises(OfferkitError, match="2 usage adds not sent"):
            local.flush(timeout=0.3)
        # Unreachable and never seen: the policy (closed by default) answers, and the account is not remembered
        # as missing: each question after a failed read asks the API again.
        assert local.can("ada", "calls") is False
        eventually(lambda: local.can("ada", "calls") is False and local.stats.loads >= 2, 15)
        assert local.access("ada") is None


def test_close_ends_every_thread_of_the_evaluator_a_read_in_flight_included(
    app: App, proxy: Proxy, secret: SecretClient
) -> None:
    """`close` returns with none of the evaluator's threads left: a read of an account under way has ended, so the
    client closed right after has no request of the evaluator in flight (its connection would be left to the garbage
    collector, unclosed)."""
    calls_catalog(secret, 1)
    secret.accounts.create(id="ada")

    def reads(s: Seen) -> bool:
        return s.method == "GET" and "/namespaces/" in s.path and "/stream" not in s.path

    # The reads answer after 1 s; the stream is refused (it would wait on the proxy for its first byte).
    proxy.fault = lambda n, seen: Fault(delay=1.0) if reads(seen) else Fault(503) if "/stream" in seen.path else None
    before = set(threading.enumerate())
    with SecretClient(secret_key=app.api_key, app_id=app.id, base_url=proxy.url) as via:
        local = via.local()
        local.can("ada", "calls")  # not known yet: a loader reads it (1 s at the proxy)
        eventually(lambda: any(reads(s) for s in proxy.seen))
        local.close()
        left = [t.name for t in threading.enumerate() if t not in before and t.name.startswith("offerkit-local")]
        assert left == []


@pytest.mark.anyio
async def test_the_async_client_has_the_same_evaluator(app: App, base_url: str, secret: SecretClient) -> None:
    calls_catalog(secret, 2)
    secret.accounts.create(id="ada")
    aclient = AsyncSecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url)
    async with aclient, aclient.local(unknown={"calls": True}) as local:
        await local.ready()
        assert local.can("eve", "calls") is True
        access = await local.load("ada")
        assert access is not None and access.entitlements[0].can is True
        await local.track("ada", "calls", 2)
        assert local.can("ada", "calls") is False
        await local.flush()
        assert local.pending == 0
        with anyio.fail_after(10):
            while (local.access("ada") or access).entitlements[0].usage != 2:
                await anyio.sleep(0.05)
    assert secret.usage.get("ada", "calls").count == 2
