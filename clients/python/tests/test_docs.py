"""docs/python.md's Python code blocks run, in order, in one namespace, against the live server (the
model URL of the walkthrough is pointed at the mock provider); a test function a block defines is then
run with the ``evalgate`` fixture's client."""

from __future__ import annotations

import inspect
import os
import re
from typing import Any, Dict, List

import pytest
from live import MockUpstream, Server

from evalgate import Evalgate

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "python.md")
DOC_MODEL_URL = "http://127.0.0.1:11434/v1"


def python_blocks() -> List[str]:
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_doc_has_code_to_run() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 8
    assert any(DOC_MODEL_URL in b for b in blocks)


def test_python_md_code_blocks_run(
    server: Server, mock: MockUpstream, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("openai")
    monkeypatch.setenv("EVALGATE_API_KEY", server.key)
    monkeypatch.setenv("EVALGATE_BASE_URL", server.base_url)
    for name in ("EVALGATE_ENVIRONMENT", "EVALGATE_REGION", "EVALGATE_ENDPOINT", "EVALGATE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    namespace: Dict[str, Any] = {"__name__": "python_md"}
    for index, block in enumerate(python_blocks()):
        code = block.replace(DOC_MODEL_URL, mock.base_url)
        try:
            exec(compile(code, f"docs/python.md block {index + 1}", "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"docs/python.md block {index + 1} failed: {err!r}\n{block}") from err
    tests = [fn for name, fn in namespace.items() if name.startswith("test_") and inspect.isfunction(fn)]
    assert tests, "the pytest example defines a test"
    for fn in tests:
        with Evalgate() as client:
            fn(client)
    out = capsys.readouterr().out
    assert "{'ok': True}" in out and "completed" in out and "echo: Hi" in out
    assert namespace["run"].status == "completed" and len(namespace["samples"]) == 3
