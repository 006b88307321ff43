from __future__ import annotations

from typing import Any, Dict, Optional

from ..types import CreateEvaluator, Evaluator, EvaluatorDeleted, PatchEvaluator
from ._base import RequestOptions, Resource, merge_body, operation, seg


def with_type(body: Any) -> Any:
    """The evaluator with its ``type`` (judge, code, string_check, …) right after ``object``
    (``evaluator.<type>``), the word ``create`` takes."""
    if not isinstance(body, dict) or not str(body.get("object", "")).startswith("evaluator."):
        return body
    typed: Dict[str, Any] = {}
    for key, value in body.items():
        if key != "type":
            typed[key] = value
        if key == "object":
            typed["type"] = value[len("evaluator.") :]
    return typed


class Evaluators(Resource):
    """``/v1/evaluators``: LLM judges (``type="judge"``), sandboxed Python (``type="code"``) and graders
    (``string_check``, ``text_similarity``, ``score_model``, ``label_model``). Every evaluator returned
    carries its ``type``."""

    @operation("GET", "/v1/evaluators")
    def list(
        self,
        *,
        container: Optional[str] = None,
        include_project_wide: Optional[bool] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first, optionally of one container (id or label); ``include_project_wide=True`` adds the
        project-wide evaluators (no container) that the container's runs may use."""
        return self._list(
            "/v1/evaluators",
            {"container": container, "include_project_wide": include_project_wide, "limit": limit, "offset": offset},
            request_options,
            with_type,
        )

    @operation("POST", "/v1/evaluators")
    def create(
        self, body: Optional[CreateEvaluator] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Evaluator:
        return self._call(
            "POST", "/v1/evaluators", json=merge_body(body, fields), options=request_options, wrap=with_type
        )

    @operation("GET", "/v1/evaluators/{evaluator}")
    def get(self, evaluator: str, *, request_options: Optional[RequestOptions] = None) -> Evaluator:
        """By id or name."""
        return self._call("GET", f"/v1/evaluators/{seg(evaluator)}", options=request_options, wrap=with_type)

    @operation("PATCH", "/v1/evaluators/{evaluator}")
    def update(
        self,
        evaluator: str,
        patch: Optional[PatchEvaluator] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> Evaluator:
        """By id or name; ``None`` clears a nullable field."""
        return self._call(
            "PATCH",
            f"/v1/evaluators/{seg(evaluator)}",
            json=merge_body(patch, fields),
            options=request_options,
            wrap=with_type,
        )

    @operation("DELETE", "/v1/evaluators/{evaluator_id}")
    def delete(self, evaluator_id: str, *, request_options: Optional[RequestOptions] = None) -> EvaluatorDeleted:
        """By id."""
        return self._call("DELETE", f"/v1/evaluators/{seg(evaluator_id)}", options=request_options)
