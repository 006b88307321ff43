"""Retries: a real 429 waited out by its Retry-After, and idempotent run creation through a proxy that
drops the first response after the server has acted on it."""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, List

import pytest
from conftest import client_of
from live import CuttingProxy, DroppingProxy, Server

from evalgate import APIConnectionError, ConflictError, Evalgate, RateLimitError


def test_429_is_retried_after_its_retry_after(strict_server: Server) -> None:
    c = client_of(strict_server, max_retries=3)
    c.containers.list()  # spends the one-request budget
    started = time.monotonic()
    page = c.containers.list()  # 429 Retry-After: 1, waited, then answered
    waited = time.monotonic() - started
    assert page.object == "list"
    assert 0.9 <= waited < 3, waited


@pytest.fixture()
def proxy_runs(server: Server) -> Iterator[DroppingProxy]:
    proxy = DroppingProxy(server.base_url, lambda method, path: method == "POST" and path == "/v1/evaluation/runs")
    yield proxy
    proxy.close()


def run_setup(client: Evalgate, label: str) -> Dict[str, Any]:
    client.containers.create(label=label)
    client.datasets.create(label=label, items=[{"input": "q", "output": "a", "expected": "a"}])
    client.evaluators.create(
        type="code", name=label, source="def evaluate(sample, ground_truth, baseline):\n    return 1\n"
    )
    source = {"type": "dataset", "dataset": label}
    return {"container": label, "evaluators": [label], "sample": source}


def test_run_creation_is_idempotent_through_a_lost_response(
    client: Evalgate, server: Server, proxy_runs: DroppingProxy
) -> None:
    body = run_setup(client, "i-lost")
    through = client_of(server, base_url=proxy_runs.base_url, max_retries=2)
    run = through.runs.create(body)
    posts = [r for r in proxy_runs.seen if r["method"] == "POST" and r["path"] == "/v1/evaluation/runs"]
    assert proxy_runs.dropped == 1 and len(posts) == 2
    keys = {r["headers"].get("idempotency-key") or r["headers"].get("Idempotency-Key") for r in posts}
    assert len(keys) == 1 and None not in keys
    # The server created one run: the retry was answered with it.
    listed = client.runs.list(container="i-lost")
    assert listed.total == 1 and listed.data[0].id == run.id


def test_a_create_that_is_not_idempotent_is_not_retried_after_a_lost_response(client: Evalgate, server: Server) -> None:
    client.containers.create(label="i-logs")
    proxy = DroppingProxy(server.base_url, lambda method, path: method == "POST" and path.endswith("/logs"))
    try:
        through = client_of(server, base_url=proxy.base_url, max_retries=2)
        with pytest.raises(APIConnectionError):
            through.logs.import_("i-logs", [{"model": "m", "output": "once"}])
        assert len([r for r in proxy.seen if r["method"] == "POST"]) == 1
        assert client.logs.list("i-logs").total == 1  # imported once, never twice
    finally:
        proxy.close()


def test_own_idempotency_key(client: Evalgate) -> None:
    body = run_setup(client, "i-own")
    first = client.runs.create(body, idempotency_key="nightly-1")
    assert client.runs.create(body, idempotency_key="nightly-1").id == first.id
    with pytest.raises(ConflictError):
        client.runs.create({**body, "metadata": {"other": True}}, idempotency_key="nightly-1")
    assert client.runs.list(container="i-own").total == 1


def test_upload_after_a_lost_response_is_not_retried(client: Evalgate, server: Server) -> None:
    proxy = DroppingProxy(server.base_url, lambda method, path: method == "POST" and path.startswith("/v1/datasets"))
    try:
        through = client_of(server, base_url=proxy.base_url, max_retries=2)
        # A POST upload creates a dataset: after a lost response it may exist, so it is not sent again.
        with pytest.raises(APIConnectionError):
            through.datasets.upload([{"input": "once"}], label="i-once")
        assert len([r for r in proxy.seen if r["method"] == "POST"]) == 1
        assert client.datasets.get("i-once")["item_count"] == 1
    finally:
        proxy.close()


def test_upload_after_a_429_is_retried_when_its_source_can_be_read_again(strict_server: Server) -> None:
    c = client_of(strict_server, max_retries=2)
    c.containers.list()
    dataset = c.datasets.upload([{"input": f"q{i}"} for i in range(10)], label="i-replayed")  # 429, then sent again
    assert dataset["item_count"] == 10
    time.sleep(1.1)
    c.containers.list()

    def rows() -> Iterator[Dict[str, Any]]:
        yield {"input": "one-shot"}

    with pytest.raises(RateLimitError):  # a generator cannot be read twice: the 429 is raised
        c.datasets.upload(rows(), label="i-one-shot")


def test_wait_follows_a_run_across_a_broken_event_stream(client: Evalgate, server: Server, judge: str) -> None:
    client.containers.create(label="i-broken")
    client.evaluators.create(
        type="judge",
        name="i-judge",
        container="i-broken",
        model=judge,
        prompt="Question: {{input}}\nAnswer: {{output}}\nExpected: {{expected}}",
    )
    items = [{"input": str(i), "output": "a", "expected": "a"} for i in range(300)]
    client.datasets.create(label="i-broken", items=items)
    source = {"type": "dataset", "dataset": "i-broken", "range": "0:300"}
    proxy = CuttingProxy(server.base_url, b"/events")
    try:
        through = client_of(server, base_url=proxy.base_url)
        run = through.runs.create(container="i-broken", evaluators=["i-judge"], sample=source, ground_truth=source)
        statuses: List[str] = []
        done = run.wait(timeout=60, progress=False, on_status=statuses.append)
        assert proxy.cut == 1  # the first event stream broke after its headers
        assert done.status == "completed" and done.results["per_model"][0]["per_eval"]
        assert statuses[-1] == "completed"
    finally:
        proxy.close()
