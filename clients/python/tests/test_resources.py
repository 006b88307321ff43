"""Every resource through the sync client against the live server."""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List

import pytest
from conftest import client_of
from live import MockUpstream, Server

from evalgate import (
    AuthenticationError,
    ConflictError,
    Evalgate,
    NotFoundError,
    Page,
    Run,
    RunComparison,
    UnprocessableEntityError,
    UploadProgress,
)
from evalgate.types import Container, Dataset, RunData, RunSample


def conforms(obj: Dict[str, Any], model: Any) -> None:
    """The object has every key its generated model requires."""
    missing = set(model.__required_keys__) - set(obj)
    assert not missing, f"{model.__name__} lacks {sorted(missing)}"


JUDGE_PROMPT = "Question: {{input}}\nAnswer: {{output}}\nExpected: {{expected}}\nScore 1 if they agree."


def test_health(client: Evalgate) -> None:
    assert client.health() == {"ok": True}


def test_containers(client: Evalgate) -> None:
    created = client.containers.create(label="r-one", description="first", metadata={"a": 1})
    conforms(created, Container)
    assert created["label"] == "r-one" and created["metadata"] == {"a": 1}
    client.containers.create({"label": "r-two"})
    page = client.containers.list(limit=1)
    assert isinstance(page, Page) and len(page.data) == 1 and page.total >= 2
    labels = [c["label"] for c in client.containers.list(limit=1)]
    assert {"r-one", "r-two"} <= set(labels)
    assert client.containers.get("r-one")["id"] == created["id"]
    updated = client.containers.update("r-one", description=None, label="r-uno")
    assert updated["description"] is None and updated["label"] == "r-uno"
    assert client.containers.delete(created["id"]) == {"object": "container", "id": created["id"], "deleted": True}
    with pytest.raises(NotFoundError):
        client.containers.get(created["id"])


def test_models(client: Evalgate, mock: MockUpstream) -> None:
    model = client.models.register(
        label="r-model",
        provider="openai-compatible",
        base_url=mock.base_url,
        upstream_model="judge-model",
        api_key="sk-upstream",
        input_price_per_mtok=1,
        output_price_per_mtok=2,
    )
    assert model["id"] == "r-model" and model["has_api_key"] is True
    spare = client.models.register(label="r-spare", base_url=mock.base_url)
    listed = client.models.list()
    assert {"r-model", "r-spare"} <= {m["id"] for m in listed.data}
    assert not listed.has_next_page()
    # A slug with a slash goes through URL-encoded.
    with pytest.raises(NotFoundError):
        client.models.get("openai/no-such-model")
    assert client.models.get("r-model")["model_id"] == model["model_id"]
    patched = client.models.update("r-spare", context_window=8192, fallbacks=["r-model"])
    assert patched["context_window"] == 8192 and patched["fallbacks"] == ["r-model"]
    assert client.models.delete(spare["model_id"])["deleted"] is True
    with pytest.raises(NotFoundError):
        client.models.get("r-spare")


def test_evaluators_of_every_type(client: Evalgate, judge: str) -> None:
    client.containers.create(label="r-evals")
    judge_ev = client.evaluators.create(
        type="judge", name="r-judge", container="r-evals", model=judge, prompt=JUDGE_PROMPT, pass_threshold=0.5
    )
    assert judge_ev["object"] == "evaluator.judge" and judge_ev["mode"] == "pointwise"
    pairwise = client.evaluators.create(
        type="judge", mode="pairwise", name="r-pairwise", model=judge, prompt="A: {{output_a}} B: {{output_b}}"
    )
    assert pairwise["mode"] == "pairwise"
    code = client.evaluators.create(
        {"type": "code", "name": "r-code", "source": "def evaluate(sample, ground_truth, baseline):\n    return 1.0\n"}
    )
    assert code["object"] == "evaluator.code" and "def evaluate" in code["source"]
    similar = client.evaluators.create(
        type="text_similarity", name="r-similar", input="{{sample.output_text}}", reference="{{item.expected}}",
        evaluation_metric="fuzzy_match", pass_threshold=0.8,
    )
    # Every evaluator says its type, the word create takes, right after its object.
    assert [judge_ev["type"], pairwise["type"], code["type"], similar["type"]] == [
        "judge", "judge", "code", "text_similarity"
    ]
    assert list(similar)[:2] == ["object", "type"]
    assert client.evaluators.get("r-similar")["type"] == "text_similarity"
    assert client.evaluators.update("r-similar", description="d")["type"] == "text_similarity"
    assert {e["name"]: e["type"] for e in client.evaluators.list(limit=100)}["r-code"] == "code"
    client.evaluators.delete(similar["id"])
    in_container = client.evaluators.list(container="r-evals")
    assert [e["name"] for e in in_container.data] == ["r-judge"]
    names = [e["name"] for e in client.evaluators.list(limit=1)]
    assert {"r-judge", "r-pairwise", "r-code"} <= set(names)
    assert client.evaluators.get("r-judge")["id"] == judge_ev["id"]
    patched = client.evaluators.update("r-code", description="patched", pass_threshold=0.9)
    assert patched["description"] == "patched" and patched["pass_threshold"] == 0.9
    for ev in (pairwise, code):
        assert client.evaluators.delete(ev["id"]) == {"object": "evaluator", "id": ev["id"], "deleted": True}
    with pytest.raises(NotFoundError):
        client.evaluators.get("r-code")


def test_datasets(client: Evalgate, tmp_path: Any) -> None:
    pd = pytest.importorskip("pandas")
    qa = client.datasets.create(
        label="r-qa",
        items=[{"input": "q1", "output": "a", "expected": "a"}, {"input": "q2", "output": "b", "expected": "c"}],
    )
    conforms(qa, Dataset)
    assert qa["item_count"] == 2

    # From a path: progress counts every byte and row of it.
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"r{i}", "input": f"q{i}", "expected": f"a{i}"}) for i in range(500)))
    seen: List[UploadProgress] = []
    from_file = client.datasets.upload(str(path), label="r-file", description="uploaded", on_progress=seen.append)
    assert from_file["item_count"] == 500 and from_file["description"] == "uploaded"
    assert seen[-1] == UploadProgress(bytes=path.stat().st_size, rows=500)

    # From a list of dicts, gzip on the fly; from a generator; from a DataFrame; from raw bytes.
    rows = [{"input": f"g{i}", "output": "x" * 50} for i in range(2000)]
    assert client.datasets.upload(rows, label="r-list", gzip=True)["item_count"] == 2000
    assert client.datasets.upload(({"input": i} for i in range(7)), label="r-gen")["item_count"] == 7
    frame = pd.DataFrame({"input": ["f1", "f2", "f3"], "expected": ["x", "y", "z"], "n": [1, 2, 3]})
    framed = client.datasets.upload(frame, label="r-frame")
    assert framed["item_count"] == 3
    assert [i["data"] for i in client.datasets.items("r-frame")] == frame.to_dict("records")
    assert client.datasets.upload([b'{"input":"b1"}\n{"input":', b'"b2"}\n'], label="r-bytes")["item_count"] == 2

    labels = {d["label"] for d in client.datasets.list(limit=2)}
    assert {"r-qa", "r-file", "r-list", "r-gen", "r-frame", "r-bytes"} <= labels
    assert client.datasets.get("r-qa")["id"] == qa["id"]
    assert client.datasets.update("r-bytes", description="two rows")["description"] == "two rows"
    window = client.datasets.items("r-file", range="10:20", limit=5)
    assert window.total == 10 and [i["id"] for i in window.data] == ["r10", "r11", "r12", "r13", "r14"]
    assert [i["position"] for i in client.datasets.items("r-file", limit=100)] == list(range(500))
    bytes_ds = client.datasets.get("r-bytes")
    assert client.datasets.delete(bytes_ds["id"])["deleted"] is True
    with pytest.raises(NotFoundError):
        client.datasets.get(bytes_ds["id"])


def test_task_logs(client: Evalgate) -> None:
    client.containers.create(label="r-logs")
    imported = client.logs.import_(
        "r-logs",
        [
            {"model": "m1", "input": [{"role": "user", "content": "hi"}], "output": "hello"},
            {"model": "m2", "output": "second"},
        ],
    )
    assert imported["imported"] == 2 and imported["first_seq"] == 1 and imported["last_seq"] == 2
    seen: List[UploadProgress] = []
    uploaded = client.logs.upload(
        "r-logs", ({"model": "m1", "output": f"line {i}"} for i in range(30)), on_progress=seen.append
    )
    assert uploaded["imported"] == 30 and uploaded["last_seq"] == 32 and seen[-1].rows == 30
    assert [log["output"] for log in client.logs.list("r-logs", model="m2")] == ["second"]
    assert [log["seq"] for log in client.logs.list("r-logs", limit=7)] == list(range(1, 33))
    assert [log["seq"] for log in client.logs.list("r-logs", range="30:40")] == [31, 32]


def test_api_keys(client: Evalgate, server: Server) -> None:
    created = client.api_keys.create(name="r-reader", permissions=["evaluators:read"])
    assert created["key"].startswith("eg_") and created["permissions"] == ["evaluators:read"]
    reader = client_of(server, api_key=created["key"])
    assert reader.evaluators.list().object == "list"
    assert created["id"] in [k["id"] for k in client.api_keys.list(limit=1)]
    revoked = client.api_keys.revoke(created["id"])
    assert revoked["revoked_at"] is not None
    with pytest.raises(AuthenticationError):
        reader.evaluators.list()


def test_budgets(client: Evalgate) -> None:
    capped = client.api_keys.create(name="r-capped", permissions=["inference:write"], budget={"limit_usd": 2, "period": "day"})
    assert capped["budget"] == {"limit_usd": 2, "period": "day"} and capped["spend"]["used_usd"] == 0
    assert client.api_keys.retrieve(capped["id"])["spend"]["limit_usd"] == 2
    updated = client.api_keys.update(capped["id"], name="r-capped-monthly", budget={"limit_usd": 3, "period": "month"})
    assert updated["name"] == "r-capped-monthly" and updated["budget"] == {"limit_usd": 3, "period": "month"}
    assert client.api_keys.update(capped["id"], budget=None)["spend"] is None
    with pytest.raises(UnprocessableEntityError):
        client.api_keys.update(capped["id"], budget={"limit_usd": -1, "period": "week"})
    project = client.projects.set_budget(limit_usd=50, period="total")
    assert project["object"] == "project_budget" and project["spend"]["resets_at"] is None
    assert client.projects.retrieve_budget(project["project_id"])["budget"] == {"limit_usd": 50, "period": "total"}
    assert client.projects.delete_budget()["budget"] is None
    with pytest.raises(NotFoundError):
        client.projects.retrieve_budget("prj_elsewhere")


@pytest.fixture(scope="module")
def completed(client: Evalgate, judge: str) -> Run:
    client.containers.create(label="r-runs")
    client.evaluators.create(
        type="judge", name="r-exact", container="r-runs", model=judge, prompt=JUDGE_PROMPT, pass_threshold=0.5
    )
    client.datasets.create(
        label="r-three",
        items=[
            {"id": "i1", "input": "capital of France", "output": "paris", "expected": "Paris"},
            {"id": "i2", "input": "capital of Italy", "output": "rome", "expected": "rome"},
            {"id": "i3", "input": "capital of Peru", "output": "oslo", "expected": "lima"},
        ],
    )
    source = {"type": "dataset", "dataset": "r-three"}
    run = client.runs.create(container="r-runs", evaluators=["r-exact"], sample=source, ground_truth=source)
    assert isinstance(run, Run) and run["object"] == "evaluation.run"
    statuses: List[str] = []
    progress: List[Dict[str, Any]] = []
    done = client.runs.wait(run.id, timeout=60, on_status=statuses.append, on_progress=progress.append)
    assert done.status == "completed" and statuses[-1] == "completed"
    assert progress[-1] == {"done": 3, "total": 3}
    return done


def test_runs(client: Evalgate, completed: Run) -> None:
    conforms(completed, RunData)
    evaluator_id = completed["evaluators"][0]
    stats = completed.results["per_model"][0]["per_eval"][evaluator_id]
    assert stats["num_passed"] == 2 and stats["num_failed"] == 1
    assert client.runs.get(completed.id).status == "completed"
    listed = client.runs.list(status="completed", container="r-runs")
    assert completed.id in [r.id for r in listed] and all(isinstance(r, Run) for r in listed.data)

    failed = client.runs.samples(completed.id, passed=False)
    conforms(failed.data[0], RunSample)
    assert [s["output"] for s in failed.data] == ["oslo"]
    assert sorted(s["position"] for s in client.runs.samples(completed.id, limit=1)) == [0, 1, 2]

    events = list(client.runs.events(completed.id))
    assert events[-1]["event"] == "status" and events[-1]["data"]["status"] == "completed"

    # The same run again, compared with the first: identical scores.
    again = client.runs.create(
        container="r-runs",
        evaluators=["r-exact"],
        sample={"type": "dataset", "dataset": "r-three"},
        ground_truth={"type": "dataset", "dataset": "r-three"},
    )
    again = again.wait(timeout=60, progress=False)
    comparison = client.runs.compare(again.id, baseline=completed.id)
    assert isinstance(comparison, RunComparison)
    assert comparison["baseline_id"] == completed.id and comparison["summary"]["matched"] == 3
    frame = comparison.to_pandas()
    assert list(frame["matched"]) == [3] and list(frame["mean_difference"]) == [0]


def test_run_names(client: Evalgate, completed: Run) -> None:
    named = client.runs.create(
        container="r-runs",
        evaluators=["r-exact"],
        sample={"type": "dataset", "dataset": "r-three"},
        name="py nightly",
    )
    assert named["name"] == "py nightly"
    assert [r.id for r in client.runs.list(name="py nightly")] == [named.id]
    renamed = client.runs.update(completed.id, name="py baseline")
    assert isinstance(renamed, Run) and renamed["name"] == "py baseline" and renamed.status == "completed"
    conforms(renamed, RunData)
    assert client.runs.update(completed.id, name=None)["name"] is None
    with pytest.raises(UnprocessableEntityError):
        client.runs.update(completed.id, name="")


def test_run_results_and_samples_to_pandas(client: Evalgate, completed: Run) -> None:
    pytest.importorskip("pandas")
    results = completed.results.to_pandas()
    assert len(results) == 1
    row = results.iloc[0]
    assert row["evaluator_id"] == completed["evaluators"][0]
    assert (row["num_passed"], row["num_failed"], row["num_total"]) == (2, 1, 3)
    assert row["accuracy"] == pytest.approx(2 / 3)
    samples = client.runs.samples(completed.id, limit=2).to_pandas()
    assert len(samples) == 3
    assert sorted(samples["output"]) == ["oslo", "paris", "rome"]
    assert samples.set_index("item_id")["passed"].to_dict() == {"i1": True, "i2": True, "i3": False}
    # The evaluator's name beside its id.
    columns = list(samples.columns)
    assert columns[columns.index("evaluator_id") + 1] == "evaluator"
    assert set(samples["evaluator"]) == {"r-exact"}
    assert set(samples["evaluator_id"]) == {completed["evaluators"][0]}


def test_sample_names_with_a_key_that_cannot_read_evaluators(server: Server, completed: Run) -> None:
    """A key without evaluators:read (evaluation and data reads only) still lists samples; the evaluator's name is then None."""
    with client_of(server) as admin:
        key = admin.api_keys.create(name="runs-only", permissions=["evaluation:read", "data:read"])["key"]
    with client_of(server, api_key=key) as narrow:
        rows = narrow.runs.samples(completed.id).data
        assert len(rows) == 3 and {r["evaluator"] for r in rows} == {None}
        assert {r["evaluator_id"] for r in rows} == {completed["evaluators"][0]}


def test_run_html_summary(completed: Run) -> None:
    page = completed._repr_html_()
    assert completed.id in page and "completed" in page
    assert "<td>2</td><td>1</td>" in page  # passed, failed


def test_cancel(client: Evalgate, mock: MockUpstream, judge: str) -> None:
    client.datasets.create(label="r-held", items=[{"input": "q", "output": "hold-me", "expected": "x"}])
    source = {"type": "dataset", "dataset": "r-held"}
    slow = client.runs.create(container="r-runs", evaluators=["r-exact"], sample=source, ground_truth=source)
    cancelled = client.runs.cancel(slow.id)
    assert cancelled.status in ("queued", "running", "cancelled")
    mock.release()
    assert client.runs.wait(slow.id, timeout=30).status == "cancelled"
    with pytest.raises(ConflictError):
        client.runs.cancel(slow.id)


def test_generation_run(client: Evalgate, judge: str, completed: Run) -> None:
    """A run that generates outputs with a model first, then judges them."""
    client.datasets.create(label="r-gen-src", items=[{"input": "hello", "expected": "echo: hello"}])
    run = client.runs.create(
        container="r-runs",
        evaluators=["r-exact"],
        sample={"type": "generate", "models": [judge], "range": "0:1"},
        ground_truth={"type": "dataset", "dataset": "r-gen-src"},
    ).wait(timeout=60, progress=False)
    assert run.status == "completed", run.get("error")
    [sample] = client.runs.samples(run.id).data
    assert sample["output"] == "echo: hello" and sample["passed"] is True
    assert list(run.results.to_pandas()["model"]) == [judge]


def test_generation_run_with_generate(client: Evalgate, judge: str, completed: Run) -> None:
    """``generate=[model]``: fresh completions of the model for the ground truth's inputs."""
    client.datasets.create(
        label="r-gen-two", items=[{"input": "hi", "expected": "echo: hi"}, {"input": "yo", "expected": "no"}]
    )
    truth = {"type": "dataset", "dataset": "r-gen-two"}
    run = client.runs.create(container="r-runs", evaluators=["r-exact"], generate=[judge], ground_truth=truth)
    assert run["sample"]["type"] == "generate" and run["sample"]["models"] == [judge]
    run = run.wait(timeout=60, progress=False)
    assert run.status == "completed", run.get("error")
    rows = {s["output"]: s["passed"] for s in client.runs.samples(run.id)}
    assert rows == {"echo: hi": True, "echo: yo": False}
    with pytest.raises(TypeError, match="sample= or generate="):
        client.runs.create(container="r-runs", evaluators=["r-exact"], sample=truth, generate=[judge])
    with pytest.raises(TypeError, match="sample= or generate="):
        client.runs.create({"sample": truth}, container="r-runs", evaluators=["r-exact"], generate=[judge])


def test_wait_shows_progress_with_tqdm_or_a_plain_line(
    client: Evalgate, completed: Run, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tqdm")
    source = {"type": "dataset", "dataset": "r-three"}
    body = {"container": "r-runs", "evaluators": ["r-exact"], "sample": source, "ground_truth": source}
    assert client.runs.create(body).wait(timeout=60).status == "completed"
    bar = capsys.readouterr().err
    assert "3/3" in bar and "100%" in bar  # tqdm's bar, on stderr
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    run = client.runs.create(body)
    assert run.wait(timeout=60).status == "completed"
    line = capsys.readouterr().err
    assert f"{run.id}: completed 3/3" in line and "%" not in line
