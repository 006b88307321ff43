"""Guard policies from Python: create, list, get, update and delete through the resource against the live
server, and a blocked call's verdict read back."""

from __future__ import annotations

import uuid

import openai
import pytest
from live import Server

from evalgate import Evalgate, NotFoundError, UnprocessableEntityError


def test_guard_policy_resource(server: Server, client: Evalgate) -> None:
    name = f"no-secrets-{uuid.uuid4().hex[:8]}"
    created = client.guards.create(
        name=name,
        checks=[{"name": "deny", "guard": {"type": "deny_list", "terms": ["password"]}, "stage": "input"}],
    )
    assert created["object"] == "guard_policy"
    assert created["checks"][0]["action"] == "block"
    assert name in [p["name"] for p in client.guards.list(limit=100)]
    assert client.guards.get(name)["id"] == created["id"]
    updated = client.guards.update(created["id"], enabled=False)
    assert updated["enabled"] is False
    assert list(client.guards.verdicts(guard="deny")) == []
    with pytest.raises(UnprocessableEntityError):
        client.guards.create(name=f"{name}-bad", checks=[{"name": "r", "guard": {"type": "regex", "pattern": "(?=a)"}}])
    deleted = client.guards.delete(created["id"])
    assert deleted["deleted"] is True
    with pytest.raises(NotFoundError):
        client.guards.get(created["id"])


def test_blocked_call_in_verdicts_and_summary(server: Server, client: Evalgate, judge: str) -> None:
    check = f"deny-{uuid.uuid4().hex[:8]}"
    policy = client.guards.create(
        name=f"blocks-{check}",
        checks=[{"name": check, "guard": {"type": "deny_list", "terms": ["hunter2"]}, "stage": "input"}],
    )
    app = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=server.key, max_retries=0)
    with pytest.raises(openai.BadRequestError) as raised:
        app.chat.completions.create(model=judge, messages=[{"role": "user", "content": "my password is hunter2"}])
    assert check in str(raised.value)
    [verdict] = list(client.guards.verdicts(guard=check))
    assert verdict["verdict"] == "blocked" and verdict["stage"] == "input"
    summary = client.guards.verdict_summary(examples=1)
    [row] = [g for g in summary["guards"] if g["guard"] == check]
    assert (row["blocked"], row["flagged"], row["total"]) == (1, 0, 1)
    assert row["examples"][0]["task_log_id"] == verdict["task_log_id"]
    with pytest.raises(UnprocessableEntityError):
        client.guards.verdict_summary(since="2026-01-02T00:00:00Z", until="2026-01-01T00:00:00Z")
    client.guards.delete(policy["id"])
