"""The async client against the live server."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict, List

import pytest
from live import Server

from evalgate import AsyncEvalgate, AsyncPage, NotFoundError, Run, UploadProgress

PROMPT = "Question: {{input}}\nAnswer: {{output}}\nExpected: {{expected}}"


def test_async_client(server: Server, judge: str) -> None:
    pd = pytest.importorskip("pandas")

    async def go() -> None:
        async with AsyncEvalgate(api_key=server.key, base_url=server.base_url, env={}) as c:
            assert await c.health() == {"ok": True}
            # Concurrent calls on one client.
            made = await asyncio.gather(*(c.containers.create(label=f"a-{i}") for i in range(5)))
            assert sorted(m["label"] for m in made) == [f"a-{i}" for i in range(5)]
            labels = [x["label"] async for x in c.containers.list(limit=2)]
            assert {f"a-{i}" for i in range(5)} <= set(labels)
            page = await c.containers.list(limit=2)
            assert isinstance(page, AsyncPage) and len(page.data) == 2
            nxt = await page.next_page()
            assert nxt is not None and nxt.offset == 2
            with pytest.raises(NotFoundError):
                await c.containers.get("a-missing")

            async def rows() -> AsyncIterator[Dict[str, Any]]:
                for i in range(40):
                    yield {"input": f"q{i}", "output": "yes", "expected": "yes" if i % 4 else "no"}

            seen: List[UploadProgress] = []
            dataset = await c.datasets.upload(rows(), label="a-rows", on_progress=seen.append, gzip=True)
            assert dataset["item_count"] == 40 and seen[-1].rows == 40
            await c.evaluators.create(
                type="judge", name="a-judge", container="a-0", model=judge, prompt=PROMPT, pass_threshold=0.5
            )

            source = {"type": "dataset", "dataset": "a-rows"}
            run = await c.runs.create(container="a-0", evaluators=["a-judge"], sample=source, ground_truth=source)
            assert isinstance(run, Run)
            events = [e async for e in c.runs.events(run.id)]
            assert events[-1]["event"] == "status" and events[-1]["data"]["status"] == "completed"
            done = await run.wait(timeout=60, progress=False)
            assert done.status == "completed"
            results = done.results.to_pandas()
            assert (results.iloc[0]["num_passed"], results.iloc[0]["num_failed"]) == (30, 10)
            samples = await c.runs.samples(run.id, limit=15).to_pandas()
            assert isinstance(samples, pd.DataFrame) and len(samples) == 40
            assert int(samples["passed"].sum()) == 30
            # Each row names its evaluator beside its id, on every page.
            columns = list(samples.columns)
            assert columns[columns.index("evaluator_id") + 1] == "evaluator"
            assert set(samples["evaluator"]) == {"a-judge"}
            assert (await c.evaluators.get("a-judge"))["type"] == "judge"
            failed = [s["position"] async for s in c.runs.samples(run.id, passed=False)]
            assert sorted(failed) == list(range(0, 40, 4))

    asyncio.run(go())
