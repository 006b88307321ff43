"""assert_run: thresholds on a live run's results, and the readable failure a test suite shows."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib import metadata
from typing import Any

import pytest
from live import Server

from evalgate import Evalgate, Run, assert_run
from evalgate.testing import RunAssertionError

PROMPT = "Question: {{input}}\nAnswer: {{output}}\nExpected: {{expected}}"


@pytest.fixture(scope="module")
def run(client: Evalgate, judge: str) -> Run:
    client.containers.create(label="t-helper")
    client.evaluators.create(
        type="judge", name="t-helpfulness", container="t-helper", model=judge, prompt=PROMPT, pass_threshold=0.5
    )
    client.datasets.create(
        label="t-four",
        items=[{"input": str(i), "output": "a", "expected": "a" if i else "b"} for i in range(4)],
    )
    source = {"type": "dataset", "dataset": "t-four"}
    return client.runs.create(container="t-helper", evaluators=["t-helpfulness"], sample=source, ground_truth=source)


def test_thresholds_met(run: Run) -> None:
    # Waits for the run first; names are resolved through the run's client.
    done = assert_run(
        run, {"t-helpfulness.accuracy": 0.75, "t-helpfulness.num_errors": ("<=", 0), "overall.avg_score": 0.7}
    )
    assert done.status == "completed"


def test_thresholds_missed_read_plainly(run: Run) -> None:
    with pytest.raises(RunAssertionError) as caught:
        assert_run(run, {"t-helpfulness.accuracy": 0.8, "t-helpfulness.num_failed": ("==", 0)})
    text = str(caught.value)
    assert f"Run {run.id} missed 2 of 2 threshold checks" in text
    assert "t-helpfulness.accuracy = 0.75 [launch 0], needs >= 0.8" in text
    assert "t-helpfulness.num_failed = 1 [launch 0], needs == 0" in text
    with pytest.raises(ValueError, match="no evaluator 'nope'"):
        assert_run(run, {"nope.accuracy": 0.5})


def plugin_installed() -> bool:
    found = metadata.entry_points()
    group = found.select(group="pytest11") if hasattr(found, "select") else found.get("pytest11", [])
    return any(ep.value == "evalgate.pytest_plugin" for ep in group)


def test_pytest_shows_the_missed_thresholds(server: Server, run: Run, tmp_path: Any) -> None:
    test_file = tmp_path / "test_quality.py"
    test_file.write_text(
        textwrap.dedent(
            f"""
            from evalgate import assert_run

            def test_quality(evalgate):
                assert_run(evalgate.runs.get("{run.id}"), {{"t-helpfulness.accuracy": 0.9}})
            """
        )
    )
    env = {
        **os.environ,
        "EVALGATE_BASE_URL": server.base_url,
        "EVALGATE_API_KEY": server.key,
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    # Installed, the package registers its plugin itself (entry point pytest11); from a source tree, load it.
    load = [] if plugin_installed() else ["-p", "evalgate.pytest_plugin"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *load, "-p", "no:cacheprovider", str(test_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=str(tmp_path),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "t-helpfulness.accuracy = 0.75 [launch 0], needs >= 0.9" in done.stdout
    assert "Traceback" not in done.stdout and "_http.py" not in done.stdout
