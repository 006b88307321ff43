"""The monitors resource against the live server: calls sent through the gateway with the official
``openai`` package are selected, scored by the monitor's judge (on the mock provider), and read back."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict

import pytest
from conftest import client_of
from live import MockUpstream, Server

from evalgate import AsyncEvalgate, MonitorResults, NotFoundError, Page, UnprocessableEntityError
from evalgate.types import Monitor, MonitorSample

# The mock provider scores 1 when the Answer and Expected lines agree: "ping" calls are answered
# "echo: ping" and pass, the others fail.
PROMPT = "Is this the reply to a ping?\nQuestion: {{input}}\nAnswer: {{output}}\nExpected: echo: ping"


def conforms(obj: Dict[str, Any], model: Any) -> None:
    missing = set(model.__required_keys__) - set(obj)
    assert not missing, f"{model.__name__} lacks {sorted(missing)}"


def wait_for(check: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.2)


def test_monitors(server: Server, mock: MockUpstream, judge: str) -> None:
    openai = pytest.importorskip("openai")
    client = client_of(server)
    client.containers.create(label="m-live")
    evaluator = client.evaluators.create(
        type="judge", name="m-ping", container="m-live", model=judge, prompt=PROMPT, pass_threshold=0.5
    )
    monitor = client.monitors.create(name="m-ping-live", container="m-live", evaluators=["m-ping"])
    conforms(monitor, Monitor)
    assert monitor["enabled"] is True and monitor["sampling_rate"] == 1
    assert monitor["evaluators"] == [evaluator["id"]] and monitor["selected"] == 0
    assert isinstance(monitor["alert_secret"], str)

    app = openai.OpenAI(
        base_url=f"{server.base_url}/v1",
        api_key=server.key,
        default_headers={"X-Evalgate-Container": "m-live"},
        max_retries=0,
    )
    for text in ("ping", "ping", "ping", "hello"):
        reply = app.chat.completions.create(model=judge, messages=[{"role": "user", "content": text}])
        assert reply.choices[0].message.content == f"echo: {text}"

    def scored() -> Any:
        results = client.monitors.results("m-ping-live")
        totals = results["totals"]
        return results if totals and totals[0]["num_scored"] == 4 else None

    results = wait_for(scored)
    assert isinstance(results, MonitorResults) and results["bucket"] == "hour"
    total = results["totals"][0]
    assert (total["evaluator"], total["num_passed"], total["num_failed"], total["num_errors"]) == (
        evaluator["id"],
        3,
        1,
        0,
    )
    assert total["avg_score"] == pytest.approx(0.75)
    frame = client.monitors.results("m-ping-live", bucket="minute").to_pandas()
    # Four calls in one or two minute buckets (the calls may straddle a minute's end).
    assert int(frame["num_scored"].sum()) == 4 and len(frame) <= 2 and str(frame["start"].dt.tz) == "UTC"

    got = client.monitors.get(monitor["id"])
    assert got["name"] == "m-ping-live" and got["selected"] == 4 and got["lag_seconds"] == 0
    assert "alert_secret" not in got

    samples = client.monitors.samples("m-ping-live")
    assert isinstance(samples, Page) and samples.total == 4
    for sample in samples:
        conforms(sample, MonitorSample)
    failed = client.monitors.samples("m-ping-live", failed=True).to_list()
    assert [(s["passed"], s["score"], s["output"]) for s in failed] == [(False, 0, "echo: hello")]
    assert sorted(client.monitors.samples("m-ping-live", limit=1).to_pandas()["passed"]) == [False, True, True, True]

    # list: every page, and by container
    client.monitors.create(name="m-ping-other", container="m-live", evaluators=["m-ping"], sampling_rate=0.5)
    assert [m["name"] for m in client.monitors.list(container="m-live", limit=1)] == ["m-ping-other", "m-ping-live"]
    assert client.monitors.list(container="m-live", limit=1).total == 2

    updated = client.monitors.update("m-ping-live", sampling_rate=0.5, filter={"models": [judge]})
    assert updated["sampling_rate"] == 0.5 and updated["filter"] == {"models": [judge]}
    assert client.monitors.pause("m-ping-live")["enabled"] is False
    app.chat.completions.create(model=judge, messages=[{"role": "user", "content": "ping"}])
    time.sleep(1)  # the log writer's flush (200 ms) and selection, had the monitor been enabled
    assert client.monitors.get("m-ping-live")["selected"] == 4
    assert client.monitors.resume("m-ping-live")["enabled"] is True

    with pytest.raises(UnprocessableEntityError):
        client.monitors.update("m-ping-live", sampling_rate=2)
    with pytest.raises(NotFoundError):
        client.monitors.get("m-no-such-monitor")
    with pytest.raises(NotFoundError):
        client.monitors.results("mon_doesnotexist")

    for m in (monitor, client.monitors.get("m-ping-other")):
        assert client.monitors.delete(m["id"]) == {"object": "monitor", "id": m["id"], "deleted": True}
    with pytest.raises(NotFoundError):
        client.monitors.delete(monitor["id"])
    assert client.monitors.list(container="m-live").total == 0
    client.close()


def test_async_monitors(server: Server, judge: str) -> None:
    async def main() -> None:
        async with AsyncEvalgate(api_key=server.key, base_url=server.base_url, env={}) as aclient:
            await aclient.containers.create(label="m-async")
            await aclient.evaluators.create(
                type="judge", name="m-async-ping", container="m-async", model=judge, prompt=PROMPT
            )
            created = await aclient.monitors.create(name="m-async", container="m-async", evaluators=["m-async-ping"])
            assert [m["id"] async for m in aclient.monitors.list(container="m-async")] == [created["id"]]
            assert (await aclient.monitors.pause("m-async"))["enabled"] is False
            assert (await aclient.monitors.resume("m-async"))["enabled"] is True
            results = await aclient.monitors.results("m-async")
            assert isinstance(results, MonitorResults) and results["totals"] == [] and results.to_pandas().empty
            assert (await aclient.monitors.samples("m-async")).total == 0
            await aclient.monitors.delete("m-async")
            with pytest.raises(NotFoundError):
                await aclient.monitors.get("m-async")

    asyncio.run(main())
