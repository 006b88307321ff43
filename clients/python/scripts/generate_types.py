#!/usr/bin/env python3
"""Writes evalgate/types.py: TypedDicts of every request and response body of the served OpenAPI document.

    python scripts/generate_types.py http://127.0.0.1:8080/openapi.json   # or a saved openapi.json
    python scripts/generate_types.py openapi.json --check                 # exit 1 when types.py differs

tests/test_types.py regenerates from the live server and fails on any difference, so the models cannot
drift from the API. A new operation needs a line in RESPONSES (and REQUESTS when it takes a JSON body),
or in NOT_JSON / VENDOR_DIALECTS (with tests/test_coverage.py's exclusions).
"""

from __future__ import annotations

import argparse
import json
import keyword
import os
import re
import sys
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "..", "evalgate", "types.py")

#: (METHOD, path) → the name of its success response's model; "Name[]" names the items of a list.
RESPONSES: Dict[Tuple[str, str], str] = {
    ("GET", "/healthz"): "Health",
    ("POST", "/v1/api-keys"): "CreatedApiKey",
    ("GET", "/v1/api-keys"): "ApiKey[]",
    ("DELETE", "/v1/api-keys/{id}"): "ApiKey",
    ("GET", "/v1/api-keys/{id}"): "ApiKey",
    ("PATCH", "/v1/api-keys/{id}"): "ApiKey",
    ("GET", "/v1/projects/{project}/budget"): "ProjectBudget",
    ("PUT", "/v1/projects/{project}/budget"): "ProjectBudget",
    ("DELETE", "/v1/projects/{project}/budget"): "ProjectBudget",
    ("POST", "/v1/containers"): "Container",
    ("GET", "/v1/containers"): "Container[]",
    ("GET", "/v1/containers/{container}"): "Container",
    ("PATCH", "/v1/containers/{container}"): "Container",
    ("DELETE", "/v1/containers/{id}"): "ContainerDeleted",
    ("GET", "/v1/containers/{container}/logs"): "TaskLog[]",
    ("POST", "/v1/containers/{container}/logs"): "LogImport",
    ("POST", "/v1/datasets"): "Dataset",
    ("GET", "/v1/datasets"): "Dataset[]",
    ("GET", "/v1/datasets/{dataset}"): "Dataset",
    ("PATCH", "/v1/datasets/{dataset}"): "Dataset",
    ("DELETE", "/v1/datasets/{id}"): "DatasetDeleted",
    ("GET", "/v1/datasets/{dataset}/items"): "DatasetItem[]",
    ("POST", "/v1/datasets/{dataset}/items"): "DatasetItemsChanged",
    ("POST", "/v1/datasets/{dataset}/items/batch"): "DatasetItemsChanged",
    ("PATCH", "/v1/datasets/{dataset}/items/{item_id}"): "DatasetItemsChanged",
    ("DELETE", "/v1/datasets/{dataset}/items/{item_id}"): "DatasetItemDeleted",
    ("GET", "/v1/datasets/{dataset}/versions"): "DatasetVersion[]",
    ("GET", "/v1/datasets/{dataset}/diff"): "DatasetDiff",
    ("GET", "/v1/models"): "Model[]",
    ("POST", "/v1/models"): "Model",
    ("GET", "/v1/models/{model}"): "Model",
    ("PATCH", "/v1/models/{model}"): "Model",
    ("DELETE", "/v1/models/{id}"): "ModelDeleted",
    ("GET", "/v1/evaluators"): "Evaluator[]",
    ("POST", "/v1/evaluators"): "Evaluator",
    ("GET", "/v1/evaluators/{evaluator}"): "Evaluator",
    ("PATCH", "/v1/evaluators/{evaluator}"): "Evaluator",
    ("DELETE", "/v1/evaluators/{evaluator_id}"): "EvaluatorDeleted",
    ("GET", "/v1/evaluation/runs"): "RunData[]",
    ("POST", "/v1/evaluation/runs"): "RunData",
    ("GET", "/v1/evaluation/runs/{run_id}"): "RunData",
    ("PATCH", "/v1/evaluation/runs/{run_id}"): "RunData",
    ("POST", "/v1/evaluation/runs/{run_id}/cancel"): "RunData",
    ("GET", "/v1/evaluation/runs/{run_id}/samples"): "RunSample[]",
    ("GET", "/v1/evaluation/runs/{run_id}/compare"): "RunComparisonData",
    ("GET", "/v1/monitors"): "Monitor[]",
    ("POST", "/v1/monitors"): "Monitor",
    ("GET", "/v1/monitors/{monitor}"): "Monitor",
    ("PATCH", "/v1/monitors/{monitor}"): "Monitor",
    ("DELETE", "/v1/monitors/{monitor}"): "MonitorDeleted",
    ("GET", "/v1/monitors/{monitor}/results"): "MonitorResultsData",
    ("GET", "/v1/monitors/{monitor}/samples"): "MonitorSample[]",
    ("GET", "/v1/sessions"): "Session[]",
    ("GET", "/v1/sessions/{session}"): "SessionDetail",
    ("GET", "/v1/sessions/{session}/tool-calls/{tool_call}"): "ToolStep",
    ("POST", "/v1/sessions/{session}/end"): "Session",
    ("GET", "/v1/annotation-queues"): "AnnotationQueue[]",
    ("POST", "/v1/annotation-queues"): "AnnotationQueue",
    ("GET", "/v1/annotation-queues/{queue}"): "AnnotationQueue",
    ("PATCH", "/v1/annotation-queues/{queue}"): "AnnotationQueue",
    ("DELETE", "/v1/annotation-queues/{queue}"): "AnnotationQueueDeleted",
    ("POST", "/v1/annotation-queues/{queue}/items"): "AnnotationItemsAdded",
    ("GET", "/v1/annotation-queues/{queue}/items"): "AnnotationItem[]",
    ("GET", "/v1/annotation-queues/{queue}/items/{item}"): "AnnotationItemView",
    ("POST", "/v1/annotation-queues/{queue}/claim"): "AnnotationClaim",
    ("POST", "/v1/annotation-queues/{queue}/items/{item}/review"): "AnnotationItemReviewed",
    ("POST", "/v1/annotation-queues/{queue}/items/{item}/skip"): "AnnotationItemState",
    ("POST", "/v1/annotation-queues/{queue}/items/{item}/flag"): "AnnotationItemFlagged",
    ("GET", "/v1/annotation-queues/{queue}/reviews"): "AnnotationReview[]",
    ("POST", "/v1/annotation-queues/{queue}/reviews/{review}/correct"): "AnnotationReviewCorrected",
    ("POST", "/v1/annotation-queues/{queue}/export"): "ExportedDataset",
    ("GET", "/v1/prompts"): "PromptSummary[]",
    ("POST", "/v1/prompts"): "Prompt",
    ("GET", "/v1/prompts/{prompt}"): "Prompt",
    ("GET", "/v1/prompts/{prompt}/versions"): "PromptVersion[]",
    ("POST", "/v1/prompts/{prompt}/versions"): "PromptVersion",
    ("GET", "/v1/prompts/{prompt}/versions/{version}"): "PromptVersion",
    ("GET", "/v1/prompts/{prompt}/diff"): "PromptDiff",
    ("GET", "/v1/prompts/{prompt}/labels"): "PromptLabelHistory[]",
    ("PUT", "/v1/prompts/{prompt}/labels/{label}"): "PromptLabel",
    ("POST", "/v1/prompts/{prompt}/labels/{label}/rollback"): "PromptLabel",
    ("DELETE", "/v1/prompts/{prompt}/labels/{label}"): "PromptLabelDeleted",
    ("POST", "/v1/annotation-queues/{queue}/items/{item}/settle"): "AnnotationSettlement",
    ("POST", "/v1/annotation-queues/{queue}/settle"): "AnnotationQueueSettled",
    ("GET", "/v1/annotation-queues/{queue}/agreement"): "QueueAgreement",
    ("GET", "/v1/evaluators/{evaluator}/agreement"): "EvaluatorAgreement",
    ("GET", "/v1/evaluator-templates"): "EvaluatorTemplate[]",
    ("GET", "/v1/evaluator-templates/{template}"): "EvaluatorTemplateOne",
    ("GET", "/v1/traces"): "TraceSummary[]",
    ("GET", "/v1/traces/{trace_id}"): "Trace",
    ("GET", "/v1/guards"): "GuardPolicy[]",
    ("POST", "/v1/guards"): "GuardPolicy",
    ("GET", "/v1/guards/{guard}"): "GuardPolicy",
    ("PATCH", "/v1/guards/{guard}"): "GuardPolicy",
    ("DELETE", "/v1/guards/{guard}"): "GuardPolicyDeleted",
    ("GET", "/v1/guards/verdicts"): "GuardVerdict[]",
    ("GET", "/v1/guards/verdicts/summary"): "GuardVerdictSummary",
    ("GET", "/v1/playground/request"): "PlaygroundRequest",
    ("POST", "/v1/playground/versions"): "PlaygroundSavedVersion",
}

#: (METHOD, path) → the name of its JSON request body's model.
REQUESTS: Dict[Tuple[str, str], str] = {
    ("POST", "/v1/api-keys"): "CreateApiKey",
    ("PATCH", "/v1/api-keys/{id}"): "UpdateApiKey",
    ("PUT", "/v1/projects/{project}/budget"): "Budget",
    ("POST", "/v1/containers"): "CreateContainer",
    ("PATCH", "/v1/containers/{container}"): "PatchContainer",
    ("POST", "/v1/containers/{container}/logs"): "ImportLog[]",
    ("POST", "/v1/datasets"): "CreateDataset",
    ("PATCH", "/v1/datasets/{dataset}"): "PatchDataset",
    ("POST", "/v1/datasets/{dataset}/items"): "NewDatasetItem",
    ("POST", "/v1/datasets/{dataset}/items/batch"): "NewDatasetItems",
    ("PATCH", "/v1/datasets/{dataset}/items/{item_id}"): "PatchDatasetItem",
    ("POST", "/v1/models"): "RegisterModel",
    ("PATCH", "/v1/models/{model}"): "PatchModel",
    ("POST", "/v1/evaluators"): "CreateEvaluator",
    ("PATCH", "/v1/evaluators/{evaluator}"): "PatchEvaluator",
    ("POST", "/v1/evaluation/runs"): "CreateRun",
    ("PATCH", "/v1/evaluation/runs/{run_id}"): "PatchRun",
    ("POST", "/v1/monitors"): "CreateMonitor",
    ("PATCH", "/v1/monitors/{monitor}"): "PatchMonitor",
    ("POST", "/v1/annotation-queues"): "CreateAnnotationQueue",
    ("PATCH", "/v1/annotation-queues/{queue}"): "PatchAnnotationQueue",
    ("POST", "/v1/annotation-queues/{queue}/items"): "AddAnnotationItems",
    ("POST", "/v1/annotation-queues/{queue}/items/{item}/review"): "SubmitReview",
    ("POST", "/v1/annotation-queues/{queue}/items/{item}/flag"): "FlagItem",
    ("POST", "/v1/annotation-queues/{queue}/reviews/{review}/correct"): "CorrectReview",
    ("POST", "/v1/annotation-queues/{queue}/export"): "ExportReviewed",
    ("POST", "/v1/prompts"): "CreatePrompt",
    ("POST", "/v1/prompts/{prompt}/versions"): "CreatePromptVersion",
    ("PUT", "/v1/prompts/{prompt}/labels/{label}"): "MoveLabel",
    ("POST", "/v1/annotation-queues/{queue}/items/{item}/settle"): "SettleItem",
    ("POST", "/v1/annotation-queues/{queue}/settle"): "SettleQueue",
    ("POST", "/v1/guards"): "CreateGuardPolicy",
    ("PATCH", "/v1/guards/{guard}"): "PatchGuardPolicy",
    ("POST", "/v1/playground/runs"): "PlaygroundRun",
    ("POST", "/v1/playground/versions"): "PlaygroundSaveVersion",
}

#: Named parts of a body: name → (METHOD, path, "request" or "response", property).
PARTS: Dict[str, Tuple[str, str, str, str]] = {
    "DataSource": ("POST", "/v1/evaluation/runs", "request", "sample"),
    "RunResultsData": ("GET", "/v1/evaluation/runs/{run_id}", "response", "results"),
}

#: Names of union members whose `object` is one of several values, by the first of them.
SEVERAL_OBJECTS: Dict[str, str] = {"evaluator.string_check": "GraderEvaluator"}

#: Operations without a JSON body of their own (streams, text), which RESPONSES need not name.
NOT_JSON = {
    ("GET", "/metrics"),
    ("GET", "/v1/evaluation/runs/{run_id}/events"),
    ("GET", "/v1/annotation-queues/{queue}/scores"),
    ("GET", "/v1/datasets/{dataset}/export"),
}

#: The OpenAI- and Anthropic-compatible routes, typed by the official `openai` and `anthropic` packages
#: that users call them with (tests/test_coverage.py excludes them from the client too).
VENDOR_DIALECTS = {
    ("POST", "/v1/chat/completions"),
    ("GET", "/v1/chat/completions"),
    ("GET", "/v1/chat/completions/{completion_id}"),
    ("POST", "/v1/chat/completions/{completion_id}"),
    ("DELETE", "/v1/chat/completions/{completion_id}"),
    ("GET", "/v1/chat/completions/{completion_id}/messages"),
    ("POST", "/v1/responses"),
    ("GET", "/v1/responses/{id}"),
    ("DELETE", "/v1/responses/{id}"),
    ("GET", "/v1/responses/{id}/input_items"),
    ("POST", "/v1/messages"),
    ("POST", "/v1/messages/count_tokens"),
    ("POST", "/v1/embeddings"),
    # Google's Gemini API, typed by Google's `google-genai` package.
    ("POST", "/v1beta/models/{*}"),
    ("POST", "/v1/models/{*}"),
    # OTLP/HTTP ingest: sent by OpenTelemetry's OTLP exporters, typed by the OTLP protocol.
    ("POST", "/v1/traces"),
    ("POST", "/v1/logs"),
    ("POST", "/v1/fine_tuning/alpha/graders/run"),
    ("POST", "/v1/fine_tuning/alpha/graders/validate"),
    ("POST", "/v1/files"),
    ("GET", "/v1/files"),
    ("GET", "/v1/files/{file_id}"),
    ("DELETE", "/v1/files/{file_id}"),
    ("GET", "/v1/files/{file_id}/content"),
    ("GET", "/v1/evals"),
    ("POST", "/v1/evals"),
    ("GET", "/v1/evals/{eval_id}"),
    ("POST", "/v1/evals/{eval_id}"),
    ("DELETE", "/v1/evals/{eval_id}"),
    ("GET", "/v1/evals/{eval_id}/runs"),
    ("POST", "/v1/evals/{eval_id}/runs"),
    ("GET", "/v1/evals/{eval_id}/runs/{run_id}"),
    ("POST", "/v1/evals/{eval_id}/runs/{run_id}"),
    ("DELETE", "/v1/evals/{eval_id}/runs/{run_id}"),
    ("GET", "/v1/evals/{eval_id}/runs/{run_id}/output_items"),
    ("GET", "/v1/evals/{eval_id}/runs/{run_id}/output_items/{output_item_id}"),
}

HAND_WRITTEN = '''

# Not in the OpenAPI document (a text/event-stream body): the events of GET /v1/evaluation/runs/{id}/events.


class RunEvent(TypedDict):
    """One server-sent event: ``status`` ({id, status, finished_at}), ``progress`` ({done, total}),
    ``spend`` ({spend, judge, generation}: what the run has paid so far, with its calls and tokens) or
    ``queue`` ({environment, live_workers, waiting_for_worker})."""

    event: str
    data: Dict[str, Any]
'''

HEADER = '''"""Request and response models of the Evalgate API, generated from its OpenAPI document.

Do not edit: run ``python scripts/generate_types.py <server>/openapi.json`` (tests/test_types.py fails
when this file differs from what the served document gives).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union
'''


def literal(value: Any) -> str:
    """A Literal[] member: strings as JSON writes them, true/false/null as Python's True/False/None."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def camel(text: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", text) if p)


def canonical(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True)


class Generator:
    def __init__(self) -> None:
        self.blocks: List[str] = []
        self.by_schema: Dict[str, str] = {}
        self.names: Dict[str, str] = {}  # name → canonical schema
        #: The top-level model being generated: a nested name taken already is prefixed with it.
        self.root = ""

    def unique(self, name: str, key: str) -> str:
        if name in self.names and self.names[name] != key and not name.startswith(self.root):
            name = self.root + name
        base, n = name, 2
        while name in self.names and self.names[name] != key:
            name = f"{base}{n}"
            n += 1
        return name

    def named(self, name: str, schema: Dict[str, Any]) -> str:
        """Defines ``name`` for ``schema`` (an alias when the same schema already has a name)."""
        key = canonical(schema)
        if name in self.names:
            if self.names[name] != key:
                raise SystemExit(f"The model name {name} stands for two different schemas; name them apart")
            return name
        if key in self.by_schema and self.by_schema[key] != name:
            self.names[name] = key
            self.blocks.append(f"{name} = {self.by_schema[key]}\n")
            return name
        if self.is_object(schema):
            return self.typed_dict(name, schema)
        expr = self.expr(schema, name)
        self.names[name] = key
        self.by_schema.setdefault(key, name)
        self.blocks.append(f"{name} = {expr}\n")
        return name

    @staticmethod
    def is_object(schema: Dict[str, Any]) -> bool:
        return schema.get("type") == "object" and bool(schema.get("properties"))

    def typed_dict(self, name: str, schema: Dict[str, Any]) -> str:
        key = canonical(schema)
        if key in self.by_schema:
            return self.by_schema[key]
        name = self.unique(name, key)
        self.names[name] = key
        self.by_schema[key] = name
        required = set(schema.get("required", []))
        fields = []
        for prop, sub in schema["properties"].items():
            fields.append((prop, self.expr(sub, name + camel(prop)), prop in required, sub.get("description")))
        lines = []
        doc = schema.get("description") or schema.get("title")

        def body(items: List[Tuple[str, str, bool, Optional[str]]]) -> List[str]:
            out = []
            for prop, expr, _, desc in items:
                if desc:
                    out.append(f"    #: {' '.join(desc.split())}")
                out.append(f"    {prop}: {expr}")
            return out or ["    pass"]

        must = [f for f in fields if f[2]]
        may = [f for f in fields if not f[2]]

        def functional(cls: str, items: List[Tuple[str, str, bool, Optional[str]]], total: bool) -> str:
            # A field named by a Python keyword (`from`) cannot be declared in a class body.
            entries = ", ".join(f'"{prop}": {expr}' for prop, expr, _, _ in items)
            return f'{cls} = TypedDict("{cls}", {{{entries}}}{"" if total else ", total=False"})'

        if any(keyword.iskeyword(f[0]) for f in fields):
            if must and may:
                lines.append(functional(f"_{name}Required", must, True))
                lines.append(functional(f"_{name}Optional", may, False))
                lines.append("")
                lines.append("")
                lines.append(f"class {name}(_{name}Required, _{name}Optional):")
                lines.append(f'    """{doc}"""' if doc else "    pass")
            else:
                lines.append(functional(name, must or may, bool(must)))
        elif must and may:
            lines.append(f"class _{name}Required(TypedDict):")
            lines.extend(body(must))
            lines.append("")
            lines.append("")
            lines.append(f"class {name}(_{name}Required, total=False):")
            if doc:
                lines.append(f'    """{doc}"""')
                lines.append("")
            lines.extend(body(may))
        else:
            lines.append(f"class {name}(TypedDict{'' if must else ', total=False'}):")
            if doc:
                lines.append(f'    """{doc}"""')
                lines.append("")
            lines.extend(body(must or may))
        self.blocks.append("\n".join(lines) + "\n")
        return name

    def variant_name(self, parent: str, sub: Dict[str, Any], index: int) -> str:
        if sub.get("title"):
            return camel(sub["title"])
        obj = (sub.get("properties") or {}).get("object") or {}
        const = (
            obj.get("const") or (obj.get("enum") or [None])[0] if len(obj.get("enum") or [0]) == 1 else obj.get("const")
        )
        if isinstance(const, str):
            return camel(".".join(reversed(const.split("."))))
        several = obj.get("enum") or []
        if several and several[0] in SEVERAL_OBJECTS:
            return SEVERAL_OBJECTS[several[0]]
        return f"{parent}Variant{index + 1}"

    def expr(self, schema: Any, hint: str) -> str:
        if not isinstance(schema, dict) or schema == {}:
            return "Any"
        for union in ("anyOf", "oneOf"):
            if union in schema:
                options = schema[union]
                nullable = any(o.get("type") == "null" for o in options)
                rest = [o for o in options if o.get("type") != "null"]
                parts: List[str] = []
                for i, o in enumerate(rest):
                    if self.is_object(o) and len(rest) > 1:
                        e = self.typed_dict(self.variant_name(hint, o, i), o)
                    else:
                        e = self.expr(o, hint)
                    if e not in parts:
                        parts.append(e)
                inner = parts[0] if len(parts) == 1 else f"Union[{', '.join(parts)}]" if parts else "None"
                return f"Optional[{inner}]" if nullable and parts else inner
        if "const" in schema:
            return f"Literal[{literal(schema['const'])}]"
        if "enum" in schema:
            return f"Literal[{', '.join(literal(v) for v in schema['enum'])}]"
        kind = schema.get("type")
        if isinstance(kind, list):
            return self.expr({"anyOf": [dict(schema, type=k) for k in kind]}, hint)
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float"
        if kind == "boolean":
            return "bool"
        if kind == "null":
            return "None"
        if kind == "array":
            return f"List[{self.expr(schema.get('items', {}), hint + 'Item')}]"
        if kind == "object":
            if schema.get("properties"):
                return self.typed_dict(schema.get("title") and camel(schema["title"]) or hint, schema)
            extra = schema.get("additionalProperties")
            value = self.expr(extra, hint + "Value") if isinstance(extra, dict) else "Any"
            return f"Dict[str, {value}]"
        return "Any"


def json_schema(operation: Dict[str, Any], part: str) -> Optional[Dict[str, Any]]:
    if part == "request":
        content = (operation.get("requestBody") or {}).get("content") or {}
    else:
        responses = operation.get("responses") or {}
        ok = next((responses[c] for c in sorted(responses) if c.startswith("2")), {})
        content = ok.get("content") or {}
    media = content.get("application/json")
    return media.get("schema") if media else None


def generate(document: Dict[str, Any]) -> str:
    gen = Generator()
    ops = {(m.upper(), p): o for p, item in document["paths"].items() for m, o in item.items()}
    problems = []
    for key, op in sorted(ops.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if key in NOT_JSON or key in VENDOR_DIALECTS:
            continue
        if key not in RESPONSES and json_schema(op, "response") is not None:
            problems.append(f"{key[0]} {key[1]}: no model name in RESPONSES")
        if key not in REQUESTS and json_schema(op, "request") is not None:
            problems.append(f"{key[0]} {key[1]}: no model name in REQUESTS")
    for table, part in ((RESPONSES, "response"), (REQUESTS, "request")):
        for key, name in table.items():
            if key not in ops:
                problems.append(f"{key[0]} {key[1]} is named in the generator but not served")
                continue
            schema = json_schema(ops[key], part)
            if schema is None:
                problems.append(f"{key[0]} {key[1]} has no JSON {part} body")
                continue
            gen.root = name.rstrip("[]")
            if name.endswith("[]"):
                items = schema["properties"]["data"]["items"] if part == "response" else schema["items"]
                gen.named(name[:-2], items)
            else:
                gen.named(name, schema)
    for name, (method, path, part, prop) in PARTS.items():
        schema = (json_schema(ops[(method, path)], part) or {}).get("properties", {}).get(prop, {})
        options = schema.get("anyOf")
        if options and any(o.get("type") == "null" for o in options):  # the part itself, not its absence
            rest = [o for o in options if o.get("type") != "null"]
            schema = rest[0] if len(rest) == 1 else {"anyOf": rest}
        gen.root = name
        gen.named(name, schema)
    if problems:
        raise SystemExit("The OpenAPI document and the generator disagree:\n  " + "\n  ".join(problems))
    return HEADER + "\n\n" + "\n\n".join(gen.blocks) + HAND_WRITTEN


def load(source: str) -> Dict[str, Any]:
    if re.match(r"https?://", source):
        with urllib.request.urlopen(source, timeout=30) as response:
            return json.load(response)
    with open(source, encoding="utf-8") as f:
        return json.load(f)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="the URL of a server's /openapi.json, or a saved copy")
    parser.add_argument("--check", action="store_true", help="only compare with evalgate/types.py")
    parser.add_argument("--out", default=TARGET)
    args = parser.parse_args(argv)
    text = generate(load(args.source))
    if args.check:
        with open(args.out, encoding="utf-8") as f:
            same = f.read() == text
        print("evalgate/types.py is up to date" if same else "evalgate/types.py differs: regenerate it")
        return 0 if same else 1
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
