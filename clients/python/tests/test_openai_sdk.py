"""Code written for OpenAI's hosted APIs, pointed at Evalgate with ``base_url`` changed and nothing else:
the official ``openai`` package against the live server, for files, graders, stored chat completions
and evals (generation through a model registered on a mock provider)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import time
from typing import Any, Callable, Dict, Iterator, List

import pytest
from live import MAIN, REPO, MockUpstream, Server

from evalgate import Evalgate

openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def sdk(server: Server) -> Any:
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=server.key, max_retries=0)


@pytest.fixture(scope="module")
def own_mock() -> Iterator[MockUpstream]:
    """A mock provider of this module's own: it holds ``hold-me`` prompts until the module ends."""
    upstream = MockUpstream()
    yield upstream
    upstream.close()


@pytest.fixture(scope="module")
def model(client: Evalgate, own_mock: MockUpstream) -> str:
    client.models.register(label="sdk-mock", base_url=own_mock.base_url, upstream_model="judge-model")
    return "sdk-mock"


@pytest.fixture(scope="module")
def other_sdk(server: Server) -> Any:
    """A key of another project (made with the command line, as an operator would): it sees none of the
    main project's objects."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALGATE_")}
    env.update({"EVALGATE_DATA_DIR": server.data_dir, "EVALGATE_LOG_LEVEL": "warn"})
    out = subprocess.run(
        ["node", MAIN, "keys", "create", "--project", "sdk-other"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    key = out.stdout.strip().splitlines()[-1].strip()
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=key, max_retries=0)


def jsonl(rows: List[Dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def wait_for(check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.2)


ROWS = [
    {"item": {"question": "Capital of France?", "answer": "Paris"}},
    {"item": {"question": "Capital of Italy?", "answer": "Rome"}},
    {"item": {"question": "Capital of Spain?", "answer": "Madrid"}},
]


def test_files(sdk: Any, other_sdk: Any) -> None:
    created = sdk.files.create(file=("qa.jsonl", io.BytesIO(jsonl(ROWS))), purpose="evals")
    shown = (created.object, created.filename, created.purpose, created.status)
    assert shown == ("file", "qa.jsonl", "evals", "processed")
    assert created.bytes == len(jsonl(ROWS)) and created.created_at <= time.time() + 1
    assert sdk.files.retrieve(created.id) == created
    listed = [f.id for f in sdk.files.list(purpose="evals")]
    assert created.id in listed
    content = sdk.files.content(created.id).text
    assert [json.loads(line) for line in content.strip().split("\n")] == ROWS
    with pytest.raises(openai.NotFoundError):
        other_sdk.files.retrieve(created.id)
    deleted = sdk.files.delete(created.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "file", True)
    with pytest.raises(openai.NotFoundError):
        sdk.files.retrieve(created.id)


def test_graders(sdk: Any) -> None:
    grader = {
        "type": "string_check",
        "name": "exact",
        "operation": "eq",
        "input": "{{sample.output_text}}",
        "reference": "{{item.answer}}",
    }
    result = sdk.fine_tuning.alpha.graders.run(grader=grader, model_sample="Paris", item={"answer": "Paris"})
    assert result.reward == 1
    assert result.metadata.name == "exact" and result.metadata.type == "string_check"
    assert result.metadata.errors.other_error is False
    miss = sdk.fine_tuning.alpha.graders.run(grader=grader, model_sample="Lyon", item={"answer": "Paris"})
    assert miss.reward == 0
    rouge = sdk.fine_tuning.alpha.graders.run(
        grader={
            "type": "text_similarity",
            "name": "r",
            "evaluation_metric": "rouge_l",
            "input": "{{sample.output_text}}",
            "reference": "the cat sat down",
        },
        model_sample="the cat sat",
    )
    assert rouge.reward == pytest.approx(6 / 7, abs=1e-9)
    validated = sdk.fine_tuning.alpha.graders.validate(grader=grader)
    assert validated.grader.type == "string_check" and validated.grader.reference == "{{item.answer}}"
    with pytest.raises(openai.BadRequestError) as bad:
        sdk.fine_tuning.alpha.graders.validate(grader={**grader, "operation": "sounds_like"})
    assert "operation" in str(bad.value)


def test_stored_chat_completions(sdk: Any, other_sdk: Any, model: str) -> None:
    made = []
    for i, text in enumerate(["alpha", "beta", "gamma"]):
        completion = sdk.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": "Repeat."}, {"role": "user", "content": text}],
            store=True,
            metadata={"suite": "py-sdk", "n": str(i)},
        )
        assert completion.id.startswith("chatcmpl-") and completion.choices[0].message.content == f"echo: {text}"
        made.append(completion.id)
    # Not stored: answered, recorded as a task log, but not listed.
    sdk.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "delta"}], metadata={"suite": "py-sdk"}
    )

    page = sdk.chat.completions.list(metadata={"suite": "py-sdk"}, limit=2)
    assert [c.id for c in page.data] == made[:2] and page.has_more is True
    assert [c.id for c in sdk.chat.completions.list(metadata={"suite": "py-sdk"}, limit=2)] == made
    assert [c.id for c in sdk.chat.completions.list(metadata={"suite": "py-sdk"}, order="desc")] == made[::-1]
    assert [c.id for c in sdk.chat.completions.list(metadata={"suite": "py-sdk", "n": "1"}, model=model)] == [made[1]]
    assert list(sdk.chat.completions.list(metadata={"suite": "py-sdk"}, model="openai/gpt-4o")) == []

    got = sdk.chat.completions.retrieve(made[0])
    assert got.id == made[0] and got.object == "chat.completion" and got.model == model
    assert got.choices[0].message.content == "echo: alpha" and got.choices[0].finish_reason == "stop"
    assert got.usage is not None and got.usage.total_tokens == 15
    assert got.to_dict()["metadata"] == {"suite": "py-sdk", "n": "0"}

    messages = list(sdk.chat.completions.messages.list(made[0]))
    assert [(m.id, m.role, m.content) for m in messages] == [
        (f"{made[0]}-0", "system", "Repeat."),
        (f"{made[0]}-1", "user", "alpha"),
    ]

    updated = sdk.chat.completions.update(made[0], metadata={"suite": "py-sdk-done"})
    assert updated.to_dict()["metadata"] == {"suite": "py-sdk-done"}
    assert [c.id for c in sdk.chat.completions.list(metadata={"suite": "py-sdk-done"})] == [made[0]]

    with pytest.raises(openai.NotFoundError):
        other_sdk.chat.completions.retrieve(made[1])
    with pytest.raises(openai.BadRequestError) as bad:
        sdk.chat.completions.update(made[1], metadata={"k" * 65: "v"})
    assert "64 characters" in str(bad.value)

    deleted = sdk.chat.completions.delete(made[0])
    assert (deleted.id, deleted.object, deleted.deleted) == (made[0], "chat.completion.deleted", True)
    with pytest.raises(openai.NotFoundError):
        sdk.chat.completions.retrieve(made[0])

    wrong = openai.OpenAI(base_url=str(sdk.base_url), api_key="eg_wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.list()


def require_evals(sdk: Any) -> None:
    """Skips only when the server has no /v1/evals route at all (a 404 for the route itself)."""
    try:
        sdk.evals.list(limit=1)
    except openai.NotFoundError as err:
        if "Route" in str(err) and "not found" in str(err):
            pytest.skip("this server does not serve /v1/evals")
        raise


def finished(sdk: Any, eval_id: str, run_id: str) -> Any:
    return wait_for(
        lambda: (lambda run: run if run.status in ("completed", "failed", "canceled") else None)(
            sdk.evals.runs.retrieve(run_id, eval_id=eval_id)
        ),
        timeout=90,
    )


EXACT = {
    "type": "string_check",
    "name": "exact",
    "operation": "eq",
    "input": "{{sample.output_text}}",
    "reference": "{{ item.answer }}",
}
FUZZY = {
    "type": "text_similarity",
    "name": "fuzzy",
    "evaluation_metric": "fuzzy_match",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "pass_threshold": 0.8,
}


def test_evals(sdk: Any, other_sdk: Any, model: str, own_mock: MockUpstream) -> None:
    require_evals(sdk)
    ev = sdk.evals.create(
        name="py-capitals",
        metadata={"team": "py"},
        data_source_config={
            "type": "custom",
            "item_schema": {
                "type": "object",
                "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
                "required": ["answer"],
            },
            "include_sample_schema": True,
        },
        testing_criteria=[EXACT, FUZZY],
    )
    assert ev.object == "eval" and ev.name == "py-capitals" and ev.metadata == {"team": "py"}
    assert ev.data_source_config.type == "custom" and "sample" in ev.data_source_config.schema_["properties"]
    assert [c.name for c in ev.testing_criteria] == ["exact", "fuzzy"]
    assert sdk.evals.retrieve(ev.id).id == ev.id
    assert ev.id in [e.id for e in sdk.evals.list(limit=100)]
    assert sdk.evals.update(ev.id, name="py-capitals-2").name == "py-capitals-2"
    with pytest.raises(openai.NotFoundError):
        other_sdk.evals.retrieve(ev.id)

    # A jsonl run: outputs given with the items (output_text, or a whole chat completion as the
    # Cookbook's examples submit completion.model_dump()).
    content = [
        {"item": {"answer": "Paris"}, "sample": {"output_text": "Paris"}},
        {
            "item": {"answer": "Rome"},
            "sample": {
                "model": "someone",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Roma"}, "finish_reason": "stop"}],
            },
        },
        {"item": {"answer": "Madrid"}, "sample": {"output_text": "Madrid"}},
    ]
    run = sdk.evals.runs.create(
        ev.id, name="py-jsonl", data_source={"type": "jsonl", "source": {"type": "file_content", "content": content}}
    )
    assert run.object == "eval.run" and run.eval_id == ev.id and run.name == "py-jsonl"
    done = finished(sdk, ev.id, run.id)
    assert done.status == "completed" and done.error is None
    counts = done.result_counts
    assert (counts.total, counts.passed, counts.failed, counts.errored) == (3, 2, 1, 0)
    per_criterion = {r.testing_criteria: (r.passed, r.failed) for r in done.per_testing_criteria_results}
    assert per_criterion == {"exact": (2, 1), "fuzzy": (2, 1)}
    items = list(sdk.evals.runs.output_items.list(run.id, eval_id=ev.id, limit=2))
    assert [i.status for i in items] == ["pass", "fail", "pass"]
    assert [i.datasource_item for i in items] == [row["item"] for row in content]
    rome = items[1]
    scores = {r.name: r.score for r in rome.results}
    assert scores["exact"] == 0 and scores["fuzzy"] == pytest.approx(0.75, abs=1e-9)
    failed = list(sdk.evals.runs.output_items.list(run.id, eval_id=ev.id, status="fail"))
    assert [i.id for i in failed] == [rome.id]
    assert sdk.evals.runs.output_items.retrieve(rome.id, eval_id=ev.id, run_id=run.id).id == rome.id

    # The same rows from an uploaded file.
    uploaded = sdk.files.create(file=("rows.jsonl", io.BytesIO(jsonl(content))), purpose="evals")
    from_file = sdk.evals.runs.create(
        ev.id, data_source={"type": "jsonl", "source": {"type": "file_id", "id": uploaded.id}}
    )
    assert finished(sdk, ev.id, from_file.id).result_counts.passed == 2

    # A completions run: generated through the registered model on the mock provider.
    echo = sdk.evals.create(
        name="py-echo",
        data_source_config={
            "type": "custom",
            "item_schema": {"type": "object", "properties": {"question": {"type": "string"}}},
        },
        testing_criteria=[{**EXACT, "reference": "echo: {{item.question}}"}],
    )
    generated = sdk.evals.runs.create(
        echo.id,
        data_source={
            "type": "completions",
            "model": model,
            "input_messages": {
                "type": "template",
                "template": [{"role": "user", "content": "{{item.question}}"}],
            },
            "sampling_params": {"temperature": 0, "max_completion_tokens": 20},
            "source": {
                "type": "file_content",
                "content": [{"item": {"question": q}} for q in ("one?", "two?", "three?")],
            },
        },
    )
    done = finished(sdk, echo.id, generated.id)
    assert done.status == "completed"
    assert (done.result_counts.total, done.result_counts.passed) == (3, 3)
    usage = [(u.model_name, u.invocation_count, u.prompt_tokens, u.completion_tokens) for u in done.per_model_usage]
    assert usage == [(model, 3, 30, 15)]
    # This mock provider reports no cached prompt tokens.
    assert [u.cached_tokens for u in done.per_model_usage] == [0]
    first = list(sdk.evals.runs.output_items.list(generated.id, eval_id=echo.id))[0]
    assert first.sample.output[0].content == "echo: one?"

    # A stored-completions run over traffic recorded through the gateway, selected by metadata.
    for text in ("four?", "five?"):
        sdk.chat.completions.create(
            model=model, messages=[{"role": "user", "content": text}], store=True, metadata={"suite": "py-evals"}
        )
    sdk.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "other?"}], store=True, metadata={"suite": "py-elsewhere"}
    )
    # Recorded off the request path: listed (and so selectable) once the log writer has written them.
    wait_for(lambda: len(sdk.chat.completions.list(metadata={"suite": "py-evals"}).data) == 2)
    stored = sdk.evals.create(
        name="py-stored",
        data_source_config={"type": "stored_completions", "metadata": {"suite": "py-evals"}},
        testing_criteria=[{**EXACT, "reference": "echo: four?"}],
    )
    graded = sdk.evals.runs.create(
        stored.id,
        data_source={
            "type": "completions",
            "source": {"type": "stored_completions", "metadata": {"suite": "py-evals"}},
        },
    )
    done = finished(sdk, stored.id, graded.id)
    assert done.status == "completed"
    assert (done.result_counts.total, done.result_counts.passed, done.result_counts.failed) == (2, 1, 1)

    # A responses run over Responses-API traffic recorded through the gateway, graded as stored.
    for text in ("four?", "six?"):
        sdk.responses.create(model=model, input=text, metadata={"suite": "py-responses"})
    graded = sdk.evals.runs.create(
        stored.id,
        data_source={"type": "responses", "source": {"type": "responses", "metadata": {"suite": "py-responses"}}},
    )
    done = finished(sdk, stored.id, graded.id)
    assert (done.result_counts.total, done.result_counts.passed, done.result_counts.failed) == (2, 1, 1)

    # An uploaded file's rows are checked against the eval's item_schema, each named by its line.
    bad_rows = sdk.files.create(
        file=("bad.jsonl", io.BytesIO(jsonl([{"item": {"answer": "Paris"}}, {"item": {"question": "?"}}]))),
        purpose="evals",
    )
    with pytest.raises(openai.BadRequestError, match="line 2: item does not match the eval's item_schema"):
        sdk.evals.runs.create(ev.id, data_source={"type": "jsonl", "source": {"type": "file_id", "id": bad_rows.id}})

    # Cancel: a run whose calls the mock holds, canceled while they wait, then let go.
    held = sdk.evals.runs.create(
        echo.id,
        data_source={
            "type": "completions",
            "model": model,
            "input_messages": {
                "type": "template",
                "template": [{"role": "user", "content": "hold-me {{item.question}}"}],
            },
            "source": {"type": "file_content", "content": [{"item": {"question": str(n)}} for n in range(4)]},
        },
    )
    canceled = sdk.evals.runs.cancel(held.id, eval_id=echo.id)
    assert canceled.id == held.id
    own_mock.release()
    assert finished(sdk, echo.id, held.id).status == "canceled"
    assert [r.id for r in sdk.evals.runs.list(echo.id, status="canceled")] == [held.id]

    # Delete: the run, then the eval.
    deleted_run = sdk.evals.runs.delete(held.id, eval_id=echo.id)
    assert (deleted_run.object, deleted_run.deleted, deleted_run.run_id) == ("eval.run.deleted", True, held.id)
    with pytest.raises(openai.NotFoundError):
        sdk.evals.runs.retrieve(held.id, eval_id=echo.id)
    deleted = sdk.evals.delete(ev.id)
    assert (deleted.object, deleted.deleted, deleted.eval_id) == ("eval.deleted", True, ev.id)
    with pytest.raises(openai.NotFoundError):
        sdk.evals.retrieve(ev.id)
    wrong = openai.OpenAI(base_url=str(sdk.base_url), api_key="eg_wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.evals.list()
