"""evalgate/types.py is what scripts/generate_types.py makes of the served /openapi.json: regenerating
gives no difference, so the models cannot drift from the API."""

from __future__ import annotations

import difflib
import os
import sys

import httpx
from live import Server

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))

import generate_types  # noqa: E402


def test_generated_models_match_the_served_document(server: Server) -> None:
    document = httpx.get(f"{server.base_url}/openapi.json", timeout=30).json()
    fresh = generate_types.generate(document)
    with open(generate_types.TARGET, encoding="utf-8") as f:
        committed = f.read()
    diff = "".join(
        difflib.unified_diff(committed.splitlines(True), fresh.splitlines(True), "types.py", "regenerated", n=1)
    )
    assert not diff, (
        "evalgate/types.py is stale: run python scripts/generate_types.py <server>/openapi.json\n" + diff[:4000]
    )


def test_generator_refuses_an_unnamed_operation(server: Server) -> None:
    document = httpx.get(f"{server.base_url}/openapi.json", timeout=30).json()
    document["paths"]["/v1/new-things"] = {
        "get": {
            "responses": {
                "200": {
                    "content": {
                        "application/json": {"schema": {"type": "object", "properties": {"a": {"type": "string"}}}}
                    }
                }
            }
        }
    }
    try:
        generate_types.generate(document)
    except SystemExit as stop:
        assert "GET /v1/new-things: no model name" in str(stop)
    else:
        raise AssertionError("a new operation without a model name was accepted")


def test_every_model_resolves() -> None:
    """Every annotation of the generated models names something real (they are strings until asked)."""
    import typing

    from evalgate import types

    models = [v for v in vars(types).values() if isinstance(v, type) and hasattr(v, "__required_keys__")]
    assert len(models) > 30
    for model in models:
        typing.get_type_hints(model)


def test_the_terminal_statuses_are_among_the_served_ones(server: Server) -> None:
    from evalgate._objects import TERMINAL_STATUSES

    document = httpx.get(f"{server.base_url}/openapi.json", timeout=30).json()
    [status] = [p for p in document["paths"]["/v1/evaluation/runs"]["get"]["parameters"] if p["name"] == "status"]
    served = next(o["enum"] for o in status["schema"]["anyOf"] if "enum" in o)
    assert set(TERMINAL_STATUSES) < set(served) and {"queued", "running"} == set(served) - set(TERMINAL_STATUSES)
