"""A 100,000-row DataFrame uploads under 200 MB of client memory: the peak RSS of a separate process that
builds the frame and uploads it, and the Python allocations of the upload alone (tracemalloc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from live import Server

SCRIPT = r"""
import json, sys, time, tracemalloc

def peak_rss_kb():
    # The process's own high-water mark (VmHWM), not getrusage's ru_maxrss: Linux carries ru_maxrss
    # over exec, so a child of a large test runner would start at the runner's size.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")
import pandas as pd
from evalgate import Evalgate

rows = 100_000
frame = pd.DataFrame({
    "id": [f"row-{i}" for i in range(rows)],
    "input": [f"What is {i} plus {i}? Answer with a number and show the working." for i in range(rows)],
    "expected": [str(2 * i) for i in range(rows)],
    "difficulty": [i % 5 for i in range(rows)],
})
client = Evalgate(api_key=sys.argv[2], base_url=sys.argv[1], timeout=120, env={})
before = peak_rss_kb()
tracemalloc.start()
started = time.monotonic()
sent = [0]
def progress(p):
    sent[0] = p.bytes
dataset = client.datasets.upload(frame, label="m-100k", on_progress=progress)
seconds = time.monotonic() - started
_, traced_peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
print(json.dumps({
    "item_count": dataset["item_count"],
    "frame_bytes": int(frame.memory_usage(deep=True).sum()),
    "rss_before_upload_kb": before,
    "peak_rss_kb": peak_rss_kb(),
    "upload_traced_peak_bytes": traced_peak,
    "upload_seconds": round(seconds, 2),
    "body_bytes": sent[0],
}))
"""


def test_dataframe_upload_of_100k_rows_stays_under_200_mb(server: Server) -> None:
    pytest.importorskip("pandas")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, server.base_url, server.key],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(report))
    assert report["item_count"] == 100_000
    assert report["peak_rss_kb"] < 200 * 1024, report
    # The upload itself streams: its allocations stay a fraction of the body it sent.
    assert report["body_bytes"] > 10_000_000
    assert report["upload_traced_peak_bytes"] < report["body_bytes"] / 4, report
