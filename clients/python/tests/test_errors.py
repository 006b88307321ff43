"""Each error class, provoked for real against live servers."""

from __future__ import annotations

import time

import pytest
from conftest import client_of
from live import Server, SilentServer, free_port

from evalgate import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    Evalgate,
    EvalgateError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
    WaitTimeoutError,
)


def test_authentication_error(server: Server) -> None:
    with pytest.raises(AuthenticationError) as caught:
        client_of(server, api_key="eg_not-a-real-key").containers.list()
    err = caught.value
    assert err.status == 401 and isinstance(err, APIError) and err.code and err.request_id


def test_permission_denied_error(client: Evalgate, server: Server) -> None:
    reader = client.api_keys.create(name="e-reader", permissions=["evaluators:read"])
    with pytest.raises(PermissionDeniedError) as caught:
        client_of(server, api_key=reader["key"]).containers.create(label="e-denied")
    assert caught.value.status == 403 and caught.value.code == "permission_denied"


def test_not_found_error(client: Evalgate) -> None:
    with pytest.raises(NotFoundError) as caught:
        client.runs.get("run_missing")
    assert caught.value.status == 404 and caught.value.code == "not_found"
    assert "run_missing" in caught.value.message


def test_conflict_error(client: Evalgate) -> None:
    client.containers.create(label="e-twice")
    with pytest.raises(ConflictError) as caught:
        client.containers.create(label="e-twice")
    assert caught.value.status == 409 and caught.value.code == "conflict"


def test_unprocessable_entity_error_lists_every_problem(client: Evalgate) -> None:
    with pytest.raises(UnprocessableEntityError) as caught:
        client.evaluators.create(type="judge", bogus=1, pass_threshold="high")
    err = caught.value
    assert err.status == 422 and err.code == "validation_error"
    locs = {tuple(d["loc"]) for d in err.detail}
    assert ("body", "bogus") in locs and ("body", "pass_threshold") in locs
    assert all({"loc", "msg", "type"} <= set(d) for d in err.detail)
    assert "body.bogus" in err.message


def test_rate_limit_error_without_retries(strict_server: Server) -> None:
    c = client_of(strict_server, max_retries=0)
    with pytest.raises(RateLimitError) as caught:
        for _ in range(5):
            c.containers.list()
    err = caught.value
    assert err.status == 429 and err.retry_after is not None and 0 < err.retry_after <= 2
    assert err.headers["x-ratelimit-remaining"] == "0"


def test_internal_server_error(strict_server: Server) -> None:
    # The server's Redis does not answer: /healthz says 503, retried, then raised.
    c = client_of(strict_server, max_retries=1)
    started = time.monotonic()
    with pytest.raises(InternalServerError) as caught:
        c.health()
    assert caught.value.status == 503 and caught.value.headers.get("x-evalgate-unavailable") == "redis"
    assert time.monotonic() - started >= 0.3  # one back-off (0.375–0.5 s) before the second attempt


def test_connection_error() -> None:
    c = Evalgate(api_key="eg_x", base_url=f"http://127.0.0.1:{free_port()}", max_retries=1, env={})
    with pytest.raises(APIConnectionError) as caught:
        c.containers.list()
    assert caught.value.status is None and caught.value.code == "connection_error"


def test_connection_timeout_error() -> None:
    silent = SilentServer()
    try:
        c = Evalgate(api_key="eg_x", base_url=silent.base_url, timeout=0.3, max_retries=1, env={})
        started = time.monotonic()
        with pytest.raises(APIConnectionTimeoutError) as caught:
            c.containers.list()
        assert caught.value.code == "timeout" and isinstance(caught.value, APIConnectionError)
        assert 0.6 <= time.monotonic() - started < 5
        assert silent.accepted == 2  # the read was retried once
        # A POST that creates something may have been acted on: a timeout is not retried.
        before = silent.accepted
        with pytest.raises(APIConnectionTimeoutError):
            c.containers.create(label="never")
        assert silent.accepted == before + 1
    finally:
        silent.close()


def test_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Evalgate(env={"EVALGATE_CONFIG": "/nonexistent/config.json"})
    assert "EVALGATE_API_KEY" in str(caught.value) and isinstance(caught.value, EvalgateError)


def test_wait_timeout_error(queued_server: Server) -> None:
    c = client_of(queued_server)
    c.containers.create(label="e-queued")
    c.datasets.create(label="e-one", items=[{"input": "q", "output": "a"}])
    c.evaluators.create(
        type="code", name="e-code", source="def evaluate(sample, ground_truth, baseline):\n    return 1\n"
    )
    run = c.runs.create(container="e-queued", evaluators=["e-code"], sample={"type": "dataset", "dataset": "e-one"})
    started = time.monotonic()
    with pytest.raises(WaitTimeoutError) as caught:
        run.wait(timeout=0.5, progress=False)
    assert caught.value.run_id == run.id and caught.value.last_status == "queued"
    assert 0.5 <= time.monotonic() - started < 5
