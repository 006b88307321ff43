"""The pytest plugin (loaded when evalgate is installed): an ``evalgate`` fixture, a client configured as
``Evalgate()`` is (environment variables, then the user config file), and ``assert_run`` failures
reported as their list of missed thresholds rather than a traceback into the client."""

from __future__ import annotations

from typing import Any, Generator, Iterator

import pytest

from .testing import RunAssertionError


@pytest.fixture
def evalgate() -> Iterator[Any]:
    """A client configured from EVALGATE_API_KEY, EVALGATE_BASE_URL, … and the user config file."""
    from ._client import Evalgate

    client = Evalgate()
    try:
        yield client
    finally:
        client.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and isinstance(call.excinfo.value, RunAssertionError):
        report.longrepr = f"{item.nodeid}\n{call.excinfo.value}"
