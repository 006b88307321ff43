"""Human review against the live server: a judge run's failures and a share queued, items read page by
page and as a frame, reviews submitted, and the judge's agreement with them as a frame (one row per
evaluator and prompt hash); an unknown queue is not found."""

from __future__ import annotations

import pytest

from evalgate import Agreement, Evalgate, NotFoundError, Page, UnprocessableEntityError

PROMPT = "Question: {{input}}\nAnswer: {{output}}\nExpected: {{expected}}\nScore 1 if they agree."


def test_review(client: Evalgate, judge: str) -> None:
    pd = pytest.importorskip("pandas")
    client.containers.create(label="q-live")
    evaluator = client.evaluators.create(
        type="judge",
        name="q-exact",
        container="q-live",
        model=judge,
        prompt=PROMPT,
        pass_threshold=0.5,
        scale={"type": "pass_fail"},
    )
    items = [
        {"id": f"q{i}", "input": f"question {i}", "output": "yes" if i % 2 else "no", "expected": "yes"}
        for i in range(8)
    ]
    client.datasets.create(label="q-eight", items=items)
    source = {"type": "dataset", "dataset": "q-eight"}
    run = client.runs.create(container="q-live", evaluators=["q-exact"], sample=source, ground_truth=source)
    run = client.runs.wait(run.id, timeout=60)
    assert run.status == "completed"

    client.annotation_queues.create(name="q-check", evaluators=["q-exact"])
    added = client.annotation_queues.add_items("q-check", rules=[{"run": run.id, "failed": True}])
    assert added["added"] == 4
    added = client.annotation_queues.add_items("q-check", rules=[{"run": run.id, "share": 1}])
    assert added == {"object": "annotation_items.added", "added": 4, "already_queued": 4}

    page = client.annotation_queues.items("q-check", limit=3)
    assert isinstance(page, Page)
    frame = page.to_pandas()
    assert len(frame) == 8 and {"id", "state"} <= set(frame.columns)
    assert set(frame["state"]) == {"open"}

    # The person agrees with the judge on every item but one.
    reviewed = 0
    while True:
        claim = client.annotation_queues.claim("q-check")
        view = claim["item"]
        if view is None:
            break
        output = view["content"]["output"]
        passed = output == "yes" if reviewed else output != "yes"
        client.annotation_queues.review("q-check", view["item"]["id"], scores=[{"evaluator": "q-exact", "passed": passed}])
        reviewed += 1
    assert reviewed == 8
    assert set(client.annotation_queues.items("q-check").to_pandas()["state"]) == {"done"}

    agreement = client.review.agreement(evaluator["id"], queue="q-check", seed=1)
    assert isinstance(agreement, Agreement) and agreement["n"] == 8
    table = agreement.to_pandas()
    assert list(table["n"]) == [8]
    assert table["percent_agreement"][0] == pytest.approx(7 / 8)
    assert table["kappa_low"][0] <= table["kappa"][0] <= table["kappa_high"][0]
    assert table["evaluator"][0] == "q-exact" and not table["compared"][0]
    per_queue = client.annotation_queues.agreement("q-check", seed=1).to_pandas()
    assert isinstance(per_queue, pd.DataFrame)
    assert per_queue["kappa"][0] == pytest.approx(table["kappa"][0])

    with pytest.raises(UnprocessableEntityError):
        client.annotation_queues.add_items("q-check", rules=[{"run": run.id}])
    with pytest.raises(NotFoundError):
        client.annotation_queues.review("q-check", "nope", scores=[{"evaluator": "q-exact", "passed": True}])
    with pytest.raises(NotFoundError):
        client.annotation_queues.get("q-nowhere")
