from __future__ import annotations

from typing import Any, Dict, Iterator

import pytest
from live import MockUpstream, Server, free_port

from evalgate import Evalgate


@pytest.fixture(scope="session")
def mock() -> Iterator[MockUpstream]:
    upstream = MockUpstream()
    yield upstream
    upstream.close()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """The server most tests share (each test uses labels of its own)."""
    s = Server()
    yield s
    s.close()


@pytest.fixture(scope="session")
def queued_server() -> Iterator[Server]:
    """A server that executes nothing (EVALGATE_SERVE_EXECUTES=0): its runs stay queued."""
    s = Server({"EVALGATE_SERVE_EXECUTES": "0"})
    yield s
    s.close()


@pytest.fixture(scope="session")
def strict_server() -> Iterator[Server]:
    """A server with a tight per-key rate limit (one request at a time, one a second), and a Redis URL
    where nothing listens, so that /healthz answers 503 (rate limits then use the process's memory)."""
    s = Server(
        {
            "EVALGATE_RATE_LIMIT_PER_MINUTE": "60",
            "EVALGATE_RATE_LIMIT_BURST": "1",
            "EVALGATE_REDIS_URL": f"redis://127.0.0.1:{free_port()}",
        }
    )
    yield s
    s.close()


def client_of(server: Server, **settings: Any) -> Evalgate:
    options: Dict[str, Any] = {"api_key": server.key, "base_url": server.base_url, "env": {}}
    options.update(settings)
    return Evalgate(**options)


@pytest.fixture(scope="session")
def client(server: Server) -> Iterator[Evalgate]:
    c = client_of(server)
    yield c
    c.close()


@pytest.fixture(scope="session")
def judge(client: Evalgate, mock: MockUpstream) -> str:
    """A registered model on the mock upstream, for judges and generation."""
    client.models.register(label="mock-judge", base_url=mock.base_url, upstream_model="judge-model")
    return "mock-judge"
