"""The traces resource against the live server: a trace sent as OTLP/JSON to ``POST /v1/traces`` (as an
OpenTelemetry exporter would send it) is listed, filtered and read back as a span tree; a model-call span's
``gen_ai.conversation.id`` names its session, which the sessions resource lists, reads and ends."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Dict, Optional

import httpx
import pytest
from conftest import client_of
from live import Server

from evalgate import AsyncEvalgate, NotFoundError, UnprocessableEntityError
from evalgate.types import Session, SessionDetail, Trace, TraceSummary


def conforms(obj: Dict[str, Any], model: Any) -> None:
    missing = set(model.__required_keys__) - set(obj)
    assert not missing, f"{model.__name__} lacks {sorted(missing)}"


def attr(key: str, value: Any) -> Dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def send_trace(server: Server, conversation: Optional[str] = None) -> str:
    trace_id = os.urandom(16).hex()
    root, chat = os.urandom(8).hex(), os.urandom(8).hex()
    now = time.time_ns()
    spans = [
        {
            "traceId": trace_id,
            "spanId": root,
            "name": "invoke_agent py-agent",
            "kind": 1,
            "startTimeUnixNano": str(now),
            "endTimeUnixNano": str(now + 50_000_000),
            "attributes": [attr("gen_ai.operation.name", "invoke_agent")],
        },
        {
            "traceId": trace_id,
            "spanId": chat,
            "parentSpanId": root,
            "name": "chat py-model",
            "kind": 3,
            "startTimeUnixNano": str(now + 1_000_000),
            "endTimeUnixNano": str(now + 40_000_000),
            "attributes": [
                attr("gen_ai.operation.name", "chat"),
                attr("gen_ai.request.model", "py-model"),
                attr("gen_ai.usage.input_tokens", 21),
                attr("gen_ai.usage.output_tokens", 4),
                *([attr("gen_ai.conversation.id", conversation)] if conversation else []),
            ],
        },
    ]
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "py-app")]},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
            }
        ]
    }
    res = httpx.post(
        f"{server.base_url}/v1/traces",
        json=body,
        headers={"authorization": f"Bearer {server.key}"},
        timeout=30,
    )
    assert res.status_code == 200, res.text
    return trace_id


def test_traces(server: Server) -> None:
    client = client_of(server)
    trace_id = send_trace(server)

    def listed() -> Any:
        page = client.traces.list(model="py-model")
        return page if any(t["id"] == trace_id for t in page.data) else None

    deadline = time.monotonic() + 30
    while listed() is None:
        assert time.monotonic() < deadline, "the trace was not stored"
        time.sleep(0.2)
    summary = next(t for t in client.traces.list(model="py-model") if t["id"] == trace_id)
    conforms(summary, TraceSummary)
    assert summary["name"] == "invoke_agent py-agent" and summary["service_name"] == "py-app"
    assert all(t["id"] != trace_id for t in client.traces.list(errors=True))

    trace = client.traces.get(trace_id)
    conforms(trace, Trace)
    assert [(s["depth"], s["name"]) for s in trace["spans"]] == [(0, "invoke_agent py-agent"), (1, "chat py-model")]
    call = trace["spans"][1]["model_call"]
    assert call is not None and call["usage"]["input_tokens"] == 21

    with pytest.raises(NotFoundError):
        client.traces.get("0af7651916cd43dd8448eb211c80319c")
    with pytest.raises(UnprocessableEntityError):
        client.traces.list(since="yesterday")

    async def read_async() -> Any:
        async with AsyncEvalgate(base_url=server.base_url, api_key=server.key, env={}) as aclient:
            return await aclient.traces.get(trace_id)

    assert asyncio.run(read_async())["id"] == trace_id


def test_sessions_of_spans(server: Server) -> None:
    client = client_of(server)
    conversation = f"py-conv-{os.urandom(4).hex()}"
    send_trace(server, conversation)

    def found() -> Optional[Dict[str, Any]]:
        return next((s for s in client.sessions.list(limit=100) if s["key"] == conversation), None)

    deadline = time.monotonic() + 30
    while (session := found()) is None:
        assert time.monotonic() < deadline, "the span's session was not made"
        time.sleep(0.2)
    conforms(session, Session)
    assert session["assigned_by"] == "header" and session["turn_count"] == 1 and session["ended_at"] is None
    detail = client.sessions.get(session["id"])
    conforms(detail, SessionDetail)
    assert [t["model"] for t in detail["turns"]] == ["py-model"]

    ended = client.sessions.end(session["id"])
    conforms(ended, Session)
    assert ended["ended_at"] is not None
    assert client.sessions.end(session["id"])["ended_at"] == ended["ended_at"]
    with pytest.raises(NotFoundError):
        client.sessions.end("sess_missing")
