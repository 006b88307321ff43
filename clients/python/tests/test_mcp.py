"""The MCP server at ``/mcp`` through Python's official ``mcp`` package (Streamable HTTP) against the live
server: the tools listed with their input schemas, called and answered, paged by cursor, and a key without
``logs:read`` refused by the log search as a tool error."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest
from live import MAIN, Server

from evalgate import Evalgate

mcp = pytest.importorskip("mcp", reason="the mcp package needs Python 3.10 or later")
httpx2 = pytest.importorskip("httpx2")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402


async def calls_in(read: Any, write: Any, calls: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Lists the tools, then makes each call; answers the tools and the results, in order."""
    async with ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(c["name"], c["arguments"]) for c in calls]
        return {"tools": tools, "results": results}


async def session_calls(server: Server, key: str, calls: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The calls over Streamable HTTP."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with streamable_http_client(f"{server.base_url}/mcp", http_client=http) as (read, write):
            return await calls_in(read, write, calls)


def test_mcp_tools_over_streamable_http(server: Server, client: Evalgate) -> None:
    client.containers.create(label="mcp-py")
    client.logs.import_(
        "mcp-py",
        [{"model": "m", "input": [{"role": "user", "content": f"q{i}"}], "output": f"answer {i}"} for i in range(12)],
    )
    first = asyncio.run(
        session_calls(
            server,
            server.key,
            [
                {"name": "search_task_logs", "arguments": {"container": "mcp-py", "limit": 5}},
                {"name": "search_task_logs", "arguments": {"container": "mcp-py", "text": "answer 1"}},
                {"name": "list_evaluator_templates", "arguments": {}},
                {"name": "get_run", "arguments": {"run_id": 7}},
            ],
        )
    )
    names = {tool.name for tool in first["tools"]}
    assert {"search_task_logs", "get_trace", "compare_runs", "start_run", "add_dataset_items"} <= names
    assert all(tool.input_schema["type"] == "object" for tool in first["tools"])
    page, text, templates, wrong = first["results"]
    assert not page.is_error
    assert page.structured_content["total"] == 12
    assert len(page.structured_content["logs"]) == 5
    cursor = page.structured_content["next_cursor"]
    assert cursor
    # "answer 1", "answer 10", "answer 11"
    assert text.structured_content["total"] == 3
    assert templates.structured_content["total"] > 0
    assert wrong.is_error and "run_id" in wrong.content[0].text

    second = asyncio.run(
        session_calls(
            server,
            server.key,
            [{"name": "search_task_logs", "arguments": {"container": "mcp-py", "limit": 5, "cursor": cursor}}],
        )
    )
    assert [log["seq"] for log in second["results"][0].structured_content["logs"]] == [6, 7, 8, 9, 10]

    reader = client.api_keys.create(name="mcp-no-logs", permissions=["evaluation:read"])
    refused = asyncio.run(
        session_calls(server, reader["key"], [{"name": "search_task_logs", "arguments": {"container": "mcp-py"}}])
    )["results"][0]
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "permission_denied"
    assert "logs:read" in refused.content[0].text


async def stdio_calls(server: Server, key: str, calls: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The same through ``evalgate mcp`` (stdio), spawned as a desktop agent spawns it."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command="node",
        args=[MAIN, "mcp"],
        env={"EVALGATE_BASE_URL": server.base_url, "EVALGATE_API_KEY": key},
    )
    async with stdio_client(params) as (read, write):
        return await calls_in(read, write, calls)


def test_mcp_tools_over_stdio(server: Server, client: Evalgate) -> None:
    client.containers.create(label="mcp-stdio")
    client.logs.import_(
        "mcp-stdio",
        [{"model": "m", "input": [{"role": "user", "content": f"q{i}"}], "output": f"reply {i}"} for i in range(3)],
    )
    answered = asyncio.run(
        stdio_calls(
            server,
            server.key,
            [
                {"name": "search_task_logs", "arguments": {"container": "mcp-stdio", "text": "reply 2"}},
                {"name": "list_runs", "arguments": {"limit": "ten"}},
                {"name": "compare_prompt_versions", "arguments": {"run_id": "run_missing", "by": "colour"}},
                {"name": "start_experiment", "arguments": {"container": "mcp-stdio", "dataset": 7}},
            ],
        )
    )
    names = {tool.name for tool in answered["tools"]}
    assert {"search_task_logs", "get_prompt", "create_prompt_version", "add_dataset_items"} <= names
    assert {"start_experiment", "compare_prompt_versions"} <= names
    found, wrong, wrong_by, wrong_dataset = answered["results"]
    # Wrong argument types are the tool's error, naming the argument, never a crash.
    assert wrong_by.is_error and "by" in wrong_by.content[0].text
    assert wrong_dataset.is_error and "dataset" in wrong_dataset.content[0].text
    assert not found.is_error
    assert [log["output"] for log in found.structured_content["logs"]] == ["reply 2"]
    assert wrong.is_error and "limit" in wrong.content[0].text

    reader = client.api_keys.create(name="mcp-stdio-no-logs", permissions=["evaluation:read"])
    refused = asyncio.run(
        stdio_calls(server, reader["key"], [{"name": "search_task_logs", "arguments": {"container": "mcp-stdio"}}])
    )["results"][0]
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "permission_denied"
