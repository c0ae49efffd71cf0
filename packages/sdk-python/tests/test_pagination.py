"""Lists: a call gives the first page; iterating it gives every item of every page (sync and async), for page
lists (`page` / `per_page`) and cursor lists (`limit` / `cursor`)."""

from __future__ import annotations

import pytest

from offerkit import AsyncPage, AsyncSecretClient, Page, SecretClient

from .conftest import App


def make_accounts(client: SecretClient, count: int) -> None:
    for i in range(count):
        client.accounts.create(id=f"p{i:02d}")


def test_a_page_list_iterates_every_item_of_every_page(seeded: SecretClient) -> None:
    make_accounts(seeded, 23)
    page = seeded.accounts.list(per_page=10, q="p")
    assert isinstance(page, Page)
    assert (page.total, page.page, page.per_page, len(page.data)) == (23, 1, 10, 10)
    ids = [a.id for a in seeded.accounts.list(per_page=10, q="p")]
    assert len(ids) == 23 and len(set(ids)) == 23
    assert [len(p.data) for p in seeded.accounts.list(per_page=10, q="p").pages()] == [10, 10, 3]
    assert len(list(seeded.accounts.list(per_page=10, page=3, q="p"))) == 3, "from the page asked for"
    assert seeded.accounts.list(per_page=10, page=3, q="p").next_page() is None


def test_a_cursor_list_iterates_every_item(seeded: SecretClient) -> None:
    make_accounts(seeded, 7)
    first = seeded.events.list(limit=3, type="account.created")
    assert len(first.data) == 3 and first.next_cursor
    events = list(seeded.events.list(limit=3, type="account.created"))
    assert len(events) == 7 and all(e.type == "account.created" for e in events)
    assert len({e.id for e in events}) == 7
    assert [len(p.data) for p in seeded.events.list(limit=3, type="account.created").pages()] == [3, 3, 1]
    assert next(iter(seeded.events.list(limit=3, type="account.created", cursor=first.next_cursor))).id == events[3].id


@pytest.mark.anyio
async def test_async_lists_are_awaited_for_a_page_or_iterated_for_every_item(
    app: App, seeded: SecretClient, base_url: str
) -> None:
    async with AsyncSecretClient(secret_key=app.api_key, app_id=app.id, base_url=base_url) as client:
        for i in range(12):
            await client.accounts.create(id=f"a{i:02d}")
        page = await client.accounts.list(per_page=5)
        assert isinstance(page, AsyncPage) and (page.total, len(page.data)) == (12, 5)
        ids = [a.id async for a in client.accounts.list(per_page=5)]
        assert sorted(ids) == [f"a{i:02d}" for i in range(12)]
        assert [len(p.data) async for p in client.accounts.list(per_page=5).pages()] == [5, 5, 2]
        # Iterating a page already awaited goes on from it.
        assert len([a async for a in page]) == 12
        second = await page.next_page()
        assert second is not None and second.page == 2
        events = [e async for e in client.events.list(limit=5, type="account.created")]
        assert len(events) == 12
        first = await client.events.list(limit=5, type="account.created")
        assert first.next_cursor and len(first.data) == 5
