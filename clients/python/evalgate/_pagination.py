"""Offset pagination: a page of a list, which also iterates over every item of the following pages."""

from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Generator, Generic, Iterator, List, Optional, TypeVar

from ._frames import records_frame

T = TypeVar("T")

#: Fetches the list body (``{"object": "list", "data": [...], "total": n}``) of the page at an offset.
Fetch = Callable[[int], Dict[str, Any]]
AsyncFetch = Callable[[int], Awaitable[Dict[str, Any]]]


class _PageBase(Generic[T]):
    object = "list"

    def __init__(self, body: Dict[str, Any], offset: int, wrap: Optional[Callable[[Any], T]]) -> None:
        items = body.get("data") or []
        self.data: List[T] = [wrap(i) for i in items] if wrap else list(items)
        self.total: int = int(body.get("total", len(items)))
        #: The position of ``data[0]`` in the whole list.
        self.offset = offset
        self._wrap = wrap

    def has_next_page(self) -> bool:
        return len(self.data) > 0 and self.offset + len(self.data) < self.total

    def _next_offset(self) -> int:
        return self.offset + len(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} offset={self.offset} items={len(self.data)} total={self.total}>"


class Page(_PageBase[T]):
    """One page (``data``, ``total``, ``offset``). Iterating it yields every item from this page on,
    fetching the following pages (by limit/offset) until ``total`` is reached. Lists are newest first:
    items created or deleted meanwhile shift the pages, so an item may then be seen twice or missed."""

    def __init__(
        self, fetch: Fetch, body: Dict[str, Any], offset: int, wrap: Optional[Callable[[Any], T]] = None
    ) -> None:
        super().__init__(body, offset, wrap)
        self._fetch = fetch

    def next_page(self) -> Optional[Page[T]]:
        if not self.has_next_page():
            return None
        offset = self._next_offset()
        return Page(self._fetch, self._fetch(offset), offset, self._wrap)

    def iter_pages(self) -> Iterator[Page[T]]:
        page: Optional[Page[T]] = self
        while page is not None:
            yield page
            page = page.next_page()

    def __iter__(self) -> Iterator[T]:
        for page in self.iter_pages():
            yield from page.data

    def to_list(self) -> List[T]:
        """Every item from this page on (mind the size of the list)."""
        return list(self)

    def to_pandas(self) -> Any:
        """Every item from this page on as a pandas DataFrame, one row per item."""
        return records_frame(self)


class AsyncPage(_PageBase[T]):
    """As :class:`Page`, iterated with ``async for``."""

    def __init__(
        self, fetch: AsyncFetch, body: Dict[str, Any], offset: int, wrap: Optional[Callable[[Any], T]] = None
    ) -> None:
        super().__init__(body, offset, wrap)
        self._fetch = fetch

    async def next_page(self) -> Optional[AsyncPage[T]]:
        if not self.has_next_page():
            return None
        offset = self._next_offset()
        return AsyncPage(self._fetch, await self._fetch(offset), offset, self._wrap)

    async def iter_pages(self) -> AsyncIterator[AsyncPage[T]]:
        page: Optional[AsyncPage[T]] = self
        while page is not None:
            yield page
            page = await page.next_page()

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.iter_pages():
            for item in page.data:
                yield item

    async def to_list(self) -> List[T]:
        return [item async for item in self]

    async def to_pandas(self) -> Any:
        return records_frame(await self.to_list())


class AsyncPager(Generic[T]):
    """What async list methods return: awaited, the first page; iterated with ``async for``, every item."""

    def __init__(self, fetch: AsyncFetch, first_offset: int, wrap: Optional[Callable[[Any], T]] = None) -> None:
        self._fetch = fetch
        self._first = first_offset
        self._wrap = wrap

    async def _load(self) -> AsyncPage[T]:
        return AsyncPage(self._fetch, await self._fetch(self._first), self._first, self._wrap)

    def __await__(self) -> Generator[Any, None, AsyncPage[T]]:
        return self._load().__await__()

    async def __aiter__(self) -> AsyncIterator[T]:
        page = await self._load()
        async for item in page:
            yield item

    async def to_list(self) -> List[T]:
        return await (await self._load()).to_list()

    async def to_pandas(self) -> Any:
        return await (await self._load()).to_pandas()
