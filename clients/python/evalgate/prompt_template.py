"""The prompt template syntax of Evalgate's server, for prompts compiled locally: ``{{name}}`` references a
variable (letters, digits, ``_``; spaces inside the braces allowed), each declared ``string``, ``number``,
``boolean`` or ``json`` (undeclared ones are strings). Strict: a missing or mistyped variable raises
``PromptVariableError`` naming every one. The server and the TypeScript client render the same way; the
shared vectors (``test/fixtures/prompt-template-vectors.json`` of the repository) hold all three to it."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

__all__ = ["PromptVariableError", "VariableProblem", "variables_of", "render_messages"]

_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

VariableProblem = Dict[str, str]
"""``{"variable": name, "kind": "missing" | "wrong_type", "message": text}``."""


class PromptVariableError(ValueError):
    """Variables missing or of the wrong type; ``problems`` lists each."""

    def __init__(self, problems: List[VariableProblem]) -> None:
        super().__init__("; ".join(p["message"] for p in problems))
        self.problems = problems


def variables_of(messages: Sequence[Mapping[str, Any]]) -> List[str]:
    """The variables the messages reference, in order of first use."""
    seen: List[str] = []
    for message in messages:
        for match in _REFERENCE.finditer(str(message.get("content", ""))):
            if match.group(1) not in seen:
                seen.append(match.group(1))
    return seen


def _type_name(value: Any) -> str:
    # The server's wording (JavaScript's typeof) so that messages read the same from every client.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"


def _problem(name: str, kind: str, value: Any, missing: bool) -> Optional[VariableProblem]:
    """What is wrong with a variable's value for its declared type, or None."""
    if missing:
        return {"variable": name, "kind": "missing", "message": f"variable '{name}' has no value"}
    want = None
    if kind == "string" and not isinstance(value, str):
        want = "a string"
    elif kind == "number" and (
        not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
    ):
        want = "a finite number"
    elif kind == "boolean" and not isinstance(value, bool):
        want = "a boolean"
    if want is None:
        return None
    return {
        "variable": name,
        "kind": "wrong_type",
        "message": f"variable '{name}' must be {want}, got {_type_name(value)}",
    }


def _write(kind: str, value: Any) -> str:
    if kind == "json":
        if isinstance(value, str):
            return value
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


def render_messages(
    messages: Sequence[Mapping[str, Any]],
    declared: Mapping[str, str],
    values: Mapping[str, Any],
) -> List[Dict[str, Any]]:
    """The messages with every reference replaced by its value written as text (a value is never
    rendered again). Raises ``PromptVariableError`` listing every missing or mistyped variable."""
    problems: List[VariableProblem] = []
    written: Dict[str, str] = {}
    used = variables_of(messages)
    for name in used:
        kind = declared.get(name, "string")
        problem = _problem(name, kind, values.get(name), name not in values)
        if problem:
            problems.append(problem)
        else:
            written[name] = _write(kind, values[name])
    # A value given for a declared variable the messages do not use is still checked against its type.
    for name, kind in declared.items():
        if name in used or name not in values:
            continue
        problem = _problem(name, kind, values[name], False)
        if problem:
            problems.append(problem)
    if problems:
        raise PromptVariableError(problems)
    return [
        {**m, "content": _REFERENCE.sub(lambda match: written[match.group(1)], str(m.get("content", "")))}
        for m in messages
    ]
