"""Lists: a page you can read (`data`, `total`...), which iterated gives every item of every page.

Sync lists fetch their first page when called; `for item in page` fetches the next pages as the loop reaches them.
Async lists are awaited for their first page, or iterated (`async for`) directly. `.pages()` iterates whole pages.
A page list (`page` / `per_page`) ends after `total` items; a cursor list when `next_cursor` is None.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, Generic, TypeVar

from typing_extensions import Self

T = TypeVar("T")


class SyncPageBase(Generic[T]):
    data: list[T]

    def next_page(self) -> Self | None:
        """The page after this one, fetched now; None when this is the last."""
        raise NotImplementedError

    def pages(self) -> Iterator[Self]:
        """This page and every page after it."""
        page: Self | None = self
        while page is not None:
            yield page
            if not page.data:
                return
            page = page.next_page()

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.data


class Page(SyncPageBase[T]):
    """One page of a `page` / `per_page` list."""

    def __init__(self, data: list[T], total: int, page: int, per_page: int, fetch: Callable[[int], Page[T]]) -> None:
        self.data = data
        self.total = total
        self.page = page
        self.per_page = per_page
        self._fetch = fetch

    def next_page(self) -> Page[T] | None:
        seen = (self.page - 1) * self.per_page + len(self.data)
        return None if seen >= self.total else self._fetch(self.page + 1)

    def __repr__(self) -> str:
        return f"Page(page={self.page}, per_page={self.per_page}, total={self.total}, data={self.data!r})"


class CursorPage(SyncPageBase[T]):
    """One page of a cursor list (`limit` / `cursor`): `next_cursor` is the next page's, None on the last."""

    def __init__(self, data: list[T], next_cursor: str | None, fetch: Callable[[str], CursorPage[T]]) -> None:
        self.data = data
        self.next_cursor = next_cursor
        self._fetch = fetch

    def next_page(self) -> CursorPage[T] | None:
        return self._fetch(self.next_cursor) if self.next_cursor else None

    def __repr__(self) -> str:
        return f"CursorPage(next_cursor={self.next_cursor!r}, data={self.data!r})"


class AsyncPageBase(Generic[T]):
    data: list[T]

    async def next_page(self) -> Self | None:
        """The page after this one, fetched now; None when this is the last."""
        raise NotImplementedError

    async def pages(self) -> AsyncIterator[Self]:
        """This page and every page after it."""
        page: Self | None = self
        while page is not None:
            yield page
            if not page.data:
                return
            page = await page.next_page()

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.data:
                yield item


class AsyncPage(AsyncPageBase[T]):
    """One page of a `page` / `per_page` list."""

    def __init__(
        self, data: list[T], total: int, page: int, per_page: int, fetch: Callable[[int], Awaitable[AsyncPage[T]]]
    ) -> None:
        self.data = data
        self.total = total
        self.page = page
        self.per_page = per_page
        self._fetch = fetch

    async def next_page(self) -> AsyncPage[T] | None:
        seen = (self.page - 1) * self.per_page + len(self.data)
        return None if seen >= self.total else await self._fetch(self.page + 1)

    def __repr__(self) -> str:
        return f"AsyncPage(page={self.page}, per_page={self.per_page}, total={self.total}, data={self.data!r})"


class AsyncCursorPage(AsyncPageBase[T]):
    """One page of a cursor list (`limit` / `cursor`): `next_cursor` is the next page's, None on the last."""

    def __init__(
        self, data: list[T], next_cursor: str | None, fetch: Callable[[str], Awaitable[AsyncCursorPage[T]]]
    ) -> None:
        self.data = data
        self.next_cursor = next_cursor
        self._fetch = fetch

    async def next_page(self) -> AsyncCursorPage[T] | None:
        return await self._fetch(self.next_cursor) if self.next_cursor else None

    def __repr__(self) -> str:
        return f"AsyncCursorPage(next_cursor={self.next_cursor!r}, data={self.data!r})"


P = TypeVar("P", bound=AsyncPageBase[Any])


class AsyncPaginator(Generic[P, T]):
    """What an async list method returns: `await` it for the first page, or `async for` it for every item."""

    def __init__(self, first: Callable[[], Awaitable[P]]) -> None:
        self._first = first
        self._page: P | None = None

    async def _get(self) -> P:
        if self._page is None:
            self._page = await self._first()
        return self._page

    def __await__(self) -> Generator[Any, None, P]:
        return self._get().__await__()

    async def pages(self) -> AsyncIterator[P]:
        """Every page, from the first asked for to the last."""
        async for page in (await self._get()).pages():
            yield page

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.data:
                yield item
