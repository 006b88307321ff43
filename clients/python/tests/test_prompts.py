"""Prompts from Python: the resource against the live server, ``get_prompt``'s cache (a label move seen
after the TTL; the server stopped and the last version still compiled), the renderer checked against the
template vectors the server's TypeScript suite reads too, and a gateway call made with a compiled prompt
whose task log names the version."""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any, Dict, List

import pytest
from conftest import client_of
from live import MockUpstream, Server

from evalgate import (
    APIConnectionError,
    AsyncEvalgate,
    NotFoundError,
    PermissionDeniedError,
    PromptVariableError,
)
from evalgate.prompt_template import render_messages
from evalgate.types import Prompt, PromptVersion

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "..", "..", "test", "fixtures", "prompt-template-vectors.json")

with open(VECTORS, encoding="utf-8") as f:
    CASES: List[Dict[str, Any]] = json.load(f)["cases"]


def conforms(obj: Dict[str, Any], model: Any) -> None:
    missing = set(model.__required_keys__) - set(obj)
    assert not missing, f"{model.__name__} lacks {sorted(missing)}"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_renderer_follows_the_shared_vectors(case: Dict[str, Any]) -> None:
    if "expected" in case:
        assert render_messages(case["messages"], case["variables"], case["values"]) == case["expected"]
        return
    with pytest.raises(PromptVariableError) as raised:
        render_messages(case["messages"], case["variables"], case["values"])
    assert [{"variable": p["variable"], "kind": p["kind"]} for p in raised.value.problems] == case["errors"]


def test_resource_versions_labels_diff_rollback(server: Server) -> None:
    client = client_of(server)
    created = client.prompts.create(
        name="py-support",
        messages=[{"role": "user", "content": "Answer {{q}} in {{n}} words"}],
        variables={"n": "number"},
        labels=["production"],
    )
    conforms(created, Prompt)
    assert created["labels"] == {"production": 1, "latest": 1}
    v2 = client.prompts.create_version(
        "py-support", messages=[{"role": "user", "content": "V2 {{q}}"}], commit_message="shorter"
    )
    conforms(v2, PromptVersion)
    assert v2["version"] == 2
    assert [v["version"] for v in client.prompts.list_versions("py-support")] == [2, 1]
    assert client.prompts.get("py-support", label="production")["version"]["version"] == 1
    assert client.prompts.get_version("py-support", 2)["commit_message"] == "shorter"
    diff = client.prompts.diff("py-support", 1, 2)
    assert diff["changed"] is True and diff["messages"][0]["status"] == "changed"
    assert client.prompts.move_label("py-support", "production", 2)["previous_version"] == 1
    assert client.prompts.rollback_label("py-support", "production")["version"] == 1
    assert client.prompts.labels("py-support")["data"][0]["history"][0]["action"] == "rollback"
    client.prompts.move_label("py-support", "canary", 2)
    assert client.prompts.delete_label("py-support", "canary")["deleted"] is True
    with pytest.raises(NotFoundError):
        client.prompts.get("py-support", label="canary")
    with pytest.raises(NotFoundError):
        client.prompts.move_label("py-support", "production", 9)
    names = [p["name"] for p in client.prompts.list(name="py-support")]
    assert names == ["py-support"]

    reader = client.api_keys.create(name="prompt-reader", permissions=["prompts:read"])
    limited = client_of(server, api_key=reader["key"])
    assert limited.prompts.get("py-support")["name"] == "py-support"
    with pytest.raises(PermissionDeniedError):
        limited.prompts.move_label("py-support", "production", 2)


def test_get_prompt_cache_ttl_and_offline_fallback() -> None:
    own = Server()
    try:
        client = client_of(own, max_retries=0)
        client.prompts.create(
            name="faq",
            messages=[{"role": "user", "content": "Q: {{q}} ({{n}})"}],
            variables={"n": "number"},
            labels=["production"],
        )
        client.prompts.create_version(
            "faq", messages=[{"role": "user", "content": "V2 Q: {{q}} ({{n}})"}], variables={"n": "number"}
        )
        first = client.prompts.get_prompt("faq", label="production", ttl=0.4)
        assert first.version == 1
        assert first.compile({"q": "why", "n": 2}) == [{"role": "user", "content": "Q: why (2)"}]
        with pytest.raises(PromptVariableError):
            first.compile({"q": "why", "n": "two"})

        client.prompts.move_label("faq", "production", 2)
        assert client.prompts.get_prompt("faq", label="production", ttl=0.4).version == 1  # cached
        time.sleep(0.45)
        moved = client.prompts.get_prompt("faq", label="production", ttl=0.4)
        assert moved.version == 2 and moved.stale is False
    finally:
        own.close()
    time.sleep(0.45)
    offline = client.prompts.get_prompt("faq", label="production", ttl=0.4)
    assert offline.stale is True and offline.version == 2
    assert offline.compile({"q": "how", "n": 3}) == [{"role": "user", "content": "V2 Q: how (3)"}]
    with pytest.raises(APIConnectionError):
        client.prompts.get_prompt("never-fetched", ttl=0)


def test_async_get_prompt(server: Server) -> None:
    client_of(server).prompts.create(name="py-async", messages=[{"role": "user", "content": "Hi {{who}}"}])

    async def main() -> None:
        async with AsyncEvalgate(api_key=server.key, base_url=server.base_url, env={}) as client:
            fetched = await client.prompts.get_prompt("py-async")
            assert fetched.compile({"who": "you"}) == [{"role": "user", "content": "Hi you"}]
            again = await client.prompts.get_prompt("py-async")
            assert again.version == fetched.version

    asyncio.run(main())


def test_compiled_call_names_the_version(server: Server, mock: MockUpstream) -> None:
    openai = pytest.importorskip("openai")
    client = client_of(server)
    client.models.register(label="py-prompt-mock", base_url=mock.base_url, upstream_model="judge-model")
    client.containers.create(label="py-prompts")
    created = client.prompts.create(name="py-compiled", messages=[{"role": "system", "content": "Be {{tone}}."}])
    fetched = client.prompts.get_prompt("py-compiled")
    sdk = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=server.key, max_retries=0)
    answer = sdk.chat.completions.with_raw_response.create(
        model="py-prompt-mock",
        messages=[*fetched.compile({"tone": "brief"}), {"role": "user", "content": "hello"}],
        extra_headers={**fetched.headers, "X-Evalgate-Container": "py-prompts"},
    )
    log_id = answer.headers["x-evalgate-log-id"]
    logs = list(client.logs.list("py-prompts", prompt_id="py-compiled"))
    assert [entry["id"] for entry in logs] == [log_id]
    assert logs[0]["prompt_id"] == created["id"] and logs[0]["prompt_version"] == 1
