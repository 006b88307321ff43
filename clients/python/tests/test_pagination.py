"""Auto-pagination over 250 runs (on a server that leaves them queued), sync and async."""

from __future__ import annotations

import asyncio
from typing import Iterator, List

import httpx
import pytest
from live import Server

from evalgate import AsyncEvalgate, Evalgate, Run


@pytest.fixture(scope="module")
def many_runs(queued_server: Server) -> Iterator[List[str]]:
    c = Evalgate(api_key=queued_server.key, base_url=queued_server.base_url, env={})
    c.containers.create(label="p-runs")
    c.datasets.create(label="p-one", items=[{"input": "q", "output": "a"}])
    c.evaluators.create(
        type="code", name="p-code", source="def evaluate(sample, ground_truth, baseline):\n    return 1\n"
    )
    source = {"type": "dataset", "dataset": "p-one"}
    ids = [c.runs.create(container="p-runs", evaluators=["p-code"], sample=source).id for _ in range(250)]
    c.close()
    yield ids


def test_iterating_a_page_walks_every_page(queued_server: Server, many_runs: List[str]) -> None:
    urls: List[str] = []
    http = httpx.Client(event_hooks={"request": [lambda r: urls.append(str(r.url))]})
    c = Evalgate(api_key=queued_server.key, base_url=queued_server.base_url, env={}, http_client=http)
    first = c.runs.list(container="p-runs", limit=100)
    assert first.total == 250 and len(first.data) == 100 and first.has_next_page()
    seen = [r.id for r in first]
    # Newest first, each run once, three requests (offsets 0, 100, 200).
    assert seen == list(reversed(many_runs))
    assert all(isinstance(r, Run) for r in first.data)
    assert [u.split("offset=")[-1] if "offset=" in u else "0" for u in urls] == ["0", "100", "200"]
    pages = list(c.runs.list(container="p-runs", limit=100).iter_pages())
    assert [len(p.data) for p in pages] == [100, 100, 50] and [p.offset for p in pages] == [0, 100, 200]
    assert not pages[-1].has_next_page() and pages[-1].next_page() is None
    # Starting at an offset iterates from there.
    assert [r.id for r in c.runs.list(container="p-runs", limit=100, offset=240)] == list(reversed(many_runs))[240:]


def test_async_pagination(queued_server: Server, many_runs: List[str]) -> None:
    async def go() -> None:
        async with AsyncEvalgate(api_key=queued_server.key, base_url=queued_server.base_url, env={}) as c:
            page = await c.runs.list(container="p-runs", limit=100)
            assert page.total == 250 and len(page.data) == 100
            ids = [r.id async for r in c.runs.list(container="p-runs", limit=100)]
            assert ids == list(reversed(many_runs))
            assert len(await c.runs.list(container="p-runs", limit=90).to_list()) == 250

    asyncio.run(go())
