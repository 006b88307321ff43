"""Every operation of the served /openapi.json has a client method: a new route fails here until the
client covers it (a method marked ``@operation(METHOD, path)``) or it is excluded below, on purpose."""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

import httpx
from live import Server

from evalgate import AsyncEvalgate, Evalgate
from evalgate.resources import OPERATIONS

#: Operations the client leaves out on purpose, each with its reason.
EXCLUDED: Dict[Tuple[str, str], str] = {
    # The playground is the dashboard's page: it streams each model's answer to the browser as it is
    # edited; scripts run the same calls through the gateway or as an experiment (runs).
    ("POST", "/v1/playground/runs"): "the dashboard's playground (SSE to the browser)",
    ("GET", "/v1/playground/request"): "the dashboard's playground",
    ("POST", "/v1/playground/versions"): "the dashboard's playground (prompts.create_version saves a version)",
    # The counts behind the dashboard's Guards page; scripts read the verdicts themselves (guards.verdicts).
    # A JSON-lines or CSV export, not one JSON body: fetch it with httpx (or `evalgate queues scores`).
    ("GET", "/v1/annotation-queues/{queue}/scores"): "text export (JSON lines or CSV)",
    # The OpenAI-compatible gateway: applications call it with the official `openai` package
    # (base_url=<server>/v1), which already types, streams and retries it.
    ("POST", "/v1/chat/completions"): "OpenAI dialect: use the openai package",
    # The other OpenAI-compatible routes (Responses, embeddings, graders, files) and the
    # Anthropic-compatible Messages route: users reach them through the official `openai` and
    # `anthropic` packages pointed at the server, never through this client.
    ("POST", "/v1/responses"): "OpenAI Responses API: use the openai package",
    ("GET", "/v1/responses/{id}"): "OpenAI Responses API: use the openai package",
    ("DELETE", "/v1/responses/{id}"): "OpenAI Responses API: use the openai package",
    ("GET", "/v1/responses/{id}/input_items"): "OpenAI Responses API: use the openai package",
    ("POST", "/v1/embeddings"): "OpenAI embeddings: use the openai package",
    ("GET", "/v1/chat/completions"): "OpenAI stored chat completions: use the openai package",
    ("GET", "/v1/chat/completions/{completion_id}"): "OpenAI stored chat completions: use the openai package",
    ("POST", "/v1/chat/completions/{completion_id}"): "OpenAI stored chat completions: use the openai package",
    ("DELETE", "/v1/chat/completions/{completion_id}"): "OpenAI stored chat completions: use the openai package",
    ("GET", "/v1/chat/completions/{completion_id}/messages"): "OpenAI stored chat completions: use the openai package",
    ("POST", "/v1/fine_tuning/alpha/graders/run"): "OpenAI graders API: use the openai package",
    ("POST", "/v1/fine_tuning/alpha/graders/validate"): "OpenAI graders API: use the openai package",
    ("POST", "/v1/files"): "OpenAI Files API: use the openai package",
    ("GET", "/v1/files"): "OpenAI Files API: use the openai package",
    ("GET", "/v1/files/{file_id}"): "OpenAI Files API: use the openai package",
    ("DELETE", "/v1/files/{file_id}"): "OpenAI Files API: use the openai package",
    ("GET", "/v1/files/{file_id}/content"): "OpenAI Files API: use the openai package",
    ("POST", "/v1/evals"): "OpenAI Evals API: use the openai package",
    ("GET", "/v1/evals"): "OpenAI Evals API: use the openai package",
    ("GET", "/v1/evals/{eval_id}"): "OpenAI Evals API: use the openai package",
    ("POST", "/v1/evals/{eval_id}"): "OpenAI Evals API: use the openai package",
    ("DELETE", "/v1/evals/{eval_id}"): "OpenAI Evals API: use the openai package",
    ("POST", "/v1/evals/{eval_id}/runs"): "OpenAI Evals API: use the openai package",
    ("GET", "/v1/evals/{eval_id}/runs"): "OpenAI Evals API: use the openai package",
    ("GET", "/v1/evals/{eval_id}/runs/{run_id}"): "OpenAI Evals API: use the openai package",
    ("POST", "/v1/evals/{eval_id}/runs/{run_id}"): "OpenAI Evals API: use the openai package",
    ("DELETE", "/v1/evals/{eval_id}/runs/{run_id}"): "OpenAI Evals API: use the openai package",
    ("GET", "/v1/evals/{eval_id}/runs/{run_id}/output_items"): "OpenAI Evals API: use the openai package",
    ("GET", "/v1/evals/{eval_id}/runs/{run_id}/output_items/{output_item_id}"): "OpenAI Evals API: use the openai package",
    ("POST", "/v1/messages"): "Anthropic Messages dialect: use the anthropic package",
    ("POST", "/v1/messages/count_tokens"): "Anthropic Messages dialect: use the anthropic package",
    ("POST", "/v1beta/models/{*}"): "Google Gemini dialect: use the google-genai package",
    ("POST", "/v1/models/{*}"): "Google Gemini dialect: use the google-genai package",
    # OTLP/HTTP ingest: applications send spans with OpenTelemetry's OTLP exporters
    # (OTEL_EXPORTER_OTLP_ENDPOINT=<server>), never through this client.
    ("POST", "/v1/traces"): "OTLP ingest: use an OpenTelemetry OTLP exporter",
    ("POST", "/v1/logs"): "OTLP ingest: use an OpenTelemetry OTLP log exporter",
    # Not part of the API: Prometheus scrapes it.
    ("GET", "/metrics"): "Prometheus metrics, not an API resource",
}
#: Path prefixes that are not the API (the dashboard's own routes, should they appear in the document).
EXCLUDED_PREFIXES = ("/dashboard", "/docs")


def served_operations(server: Server) -> Set[Tuple[str, str]]:
    document = httpx.get(f"{server.base_url}/openapi.json", timeout=30).json()
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method.lower() in ("get", "post", "put", "patch", "delete")
    }


def uncovered_of(served: Set[Tuple[str, str]]) -> List[Tuple[str, str]]:
    return sorted(
        op for op in served if op not in OPERATIONS and op not in EXCLUDED and not op[1].startswith(EXCLUDED_PREFIXES)
    )


def test_a_new_route_is_caught() -> None:
    assert uncovered_of({("GET", "/healthz"), ("POST", "/v1/widgets"), ("GET", "/metrics")}) == [
        ("POST", "/v1/widgets")
    ]


def test_every_served_operation_has_a_client_method(server: Server) -> None:
    uncovered = uncovered_of(served_operations(server))
    assert not uncovered, (
        "Operations of /openapi.json without a client method (add one marked @operation, or exclude it "
        "in tests/test_coverage.py with a reason): " + ", ".join(f"{m} {p}" for m, p in uncovered)
    )


def test_no_method_names_an_operation_the_server_does_not_serve(server: Server) -> None:
    served = served_operations(server)
    stale = sorted(OPERATIONS - served)
    assert not stale, "Client methods for operations the server does not serve: " + ", ".join(
        f"{m} {p}" for m, p in stale
    )
    assert not set(EXCLUDED) - served, "Exclusions of operations the server no longer serves"


def test_both_clients_expose_every_marked_method() -> None:
    sync = Evalgate(api_key="eg_x", base_url="http://h:1", env={})
    aio = AsyncEvalgate(api_key="eg_x", base_url="http://h:1", env={})
    for client in (sync, aio):
        reached: Set[Tuple[str, str]] = set()
        targets = [client] + [v for v in vars(client).values() if hasattr(v, "_client")]
        for target in targets:
            for name in dir(type(target)):
                reached.update(getattr(getattr(type(target), name), "__evalgate_operations__", []))
        assert OPERATIONS - reached == set(), f"{type(client).__name__} lacks {sorted(OPERATIONS - reached)}"
