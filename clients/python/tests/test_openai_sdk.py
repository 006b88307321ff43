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
