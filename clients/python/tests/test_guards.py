"""Guard policies from Python: create, list, get, update and delete through the resource against the live
server, and a blocked call's verdict read back."""

from __future__ import annotations

import uuid

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
