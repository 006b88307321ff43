from __future__ import annotations

from typing import Any, Dict, List, Optional

from .._objects import Agreement
from ._base import RequestOptions, Resource, merge_body, operation, seg


class AnnotationQueues(Resource):
    """``/v1/annotation-queues``: human review. Queues are addressed by id or name; items by id."""

    @operation("GET", "/v1/annotation-queues")
    def list(
        self, *, limit: Optional[int] = None, offset: Optional[int] = None, request_options: Optional[RequestOptions] = None
    ) -> Any:
        """Newest first; iterating fetches every page."""
        return self._list("/v1/annotation-queues", {"limit": limit, "offset": offset}, request_options)

    @operation("POST", "/v1/annotation-queues")
    def create(
        self, body: Optional[Dict[str, Any]] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Any:
        """``name``, ``evaluators`` (the rubric), ``comment``, ``reviewers_per_item``, ``claim_seconds``."""
        return self._call("POST", "/v1/annotation-queues", json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/annotation-queues/{queue}")
    def get(self, queue: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._call("GET", f"/v1/annotation-queues/{seg(queue)}", options=request_options)

    @operation("PATCH", "/v1/annotation-queues/{queue}")
    def update(
        self, queue: str, patch: Optional[Dict[str, Any]] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Any:
        return self._call(
            "PATCH", f"/v1/annotation-queues/{seg(queue)}", json=merge_body(patch, fields), options=request_options
        )

    @operation("DELETE", "/v1/annotation-queues/{queue}")
    def delete(self, queue: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._call("DELETE", f"/v1/annotation-queues/{seg(queue)}", options=request_options)

    @operation("POST", "/v1/annotation-queues/{queue}/items")
    def add_items(
        self,
        queue: str,
        *,
        task_logs: Optional[List[str]] = None,
        sessions: Optional[List[str]] = None,
        run_samples: Optional[List[Dict[str, Any]]] = None,
        rules: Optional[List[Dict[str, Any]]] = None,
        tool_steps: Optional[List[Dict[str, Any]]] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """By id (task logs, sessions, tool steps ``{"session", "tool_call_id"}``, ``{"run", "position"}``)
        or by rules over a run's scores."""
        body = {
            "task_logs": task_logs,
            "sessions": sessions,
            "tool_steps": tool_steps,
            "run_samples": run_samples,
            "rules": rules,
        }
        return self._call(
            "POST",
            f"/v1/annotation-queues/{seg(queue)}/items",
            json={k: v for k, v in body.items() if v is not None},
            options=request_options,
        )

    @operation("GET", "/v1/annotation-queues/{queue}/items")
    def items(
        self,
        queue: str,
        *,
        state: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """The queue's items in the order they were added; iterating fetches every page."""
        return self._list(
            f"/v1/annotation-queues/{seg(queue)}/items",
            {"state": state, "limit": limit, "offset": offset},
            request_options,
        )

    @operation("GET", "/v1/annotation-queues/{queue}/items/{item}")
    def item(
        self, queue: str, item: str, *, hide_judge: Optional[bool] = None, request_options: Optional[RequestOptions] = None
    ) -> Any:
        return self._call(
            "GET",
            f"/v1/annotation-queues/{seg(queue)}/items/{seg(item)}",
            query={"hide_judge": hide_judge},
            options=request_options,
        )

    @operation("POST", "/v1/annotation-queues/{queue}/claim")
    def claim(
        self, queue: str, *, hide_judge: Optional[bool] = None, request_options: Optional[RequestOptions] = None
    ) -> Any:
        """The next item for this reviewer (``item`` is None when there is none)."""
        return self._call(
            "POST", f"/v1/annotation-queues/{seg(queue)}/claim", query={"hide_judge": hide_judge}, options=request_options
        )

    @operation("POST", "/v1/annotation-queues/{queue}/items/{item}/review")
    def review(
        self,
        queue: str,
        item: str,
        scores: List[Dict[str, Any]],
        *,
        comment: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """``scores``: ``[{"evaluator": …, "score" | "passed" | "label": …}]`` on each rubric evaluator's scale."""
        body: Dict[str, Any] = {"scores": scores}
        if comment is not None:
            body["comment"] = comment
        return self._call(
            "POST", f"/v1/annotation-queues/{seg(queue)}/items/{seg(item)}/review", json=body, options=request_options
        )

    @operation("POST", "/v1/annotation-queues/{queue}/items/{item}/skip")
    def skip(self, queue: str, item: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._call("POST", f"/v1/annotation-queues/{seg(queue)}/items/{seg(item)}/skip", options=request_options)

    @operation("POST", "/v1/annotation-queues/{queue}/items/{item}/flag")
    def flag(self, queue: str, item: str, reason: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._call(
            "POST",
            f"/v1/annotation-queues/{seg(queue)}/items/{seg(item)}/flag",
            json={"reason": reason},
            options=request_options,
        )

    @operation("GET", "/v1/annotation-queues/{queue}/reviews")
    def reviews(
        self,
        queue: str,
        *,
        item: Optional[str] = None,
        history: Optional[bool] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        return self._list(
            f"/v1/annotation-queues/{seg(queue)}/reviews",
            {"item": item, "history": history, "limit": limit, "offset": offset},
            request_options,
        )

    @operation("POST", "/v1/annotation-queues/{queue}/reviews/{review}/correct")
    def correct(
        self, queue: str, review: str, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Any:
        """A new review replaces ``review`` (kept as history): ``score``, ``passed``, ``label``, ``comment``."""
        return self._call(
            "POST",
            f"/v1/annotation-queues/{seg(queue)}/reviews/{seg(review)}/correct",
            json=dict(fields),
            options=request_options,
        )

    @operation("POST", "/v1/annotation-queues/{queue}/items/{item}/settle")
    def settle_item(
        self, queue: str, item: str, method: str, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Any:
        """Settles the item's answer (needs review:admin): ``method`` ``majority``, ``review`` (with
        ``review=<id>``) or ``value`` (with ``score``, ``passed`` or ``label``); ``evaluator``, ``comment``."""
        return self._call(
            "POST",
            f"/v1/annotation-queues/{seg(queue)}/items/{seg(item)}/settle",
            json={"method": method, **fields},
            options=request_options,
        )

    @operation("POST", "/v1/annotation-queues/{queue}/settle")
    def settle(
        self, queue: str, *, evaluator: Optional[str] = None, request_options: Optional[RequestOptions] = None
    ) -> Any:
        """Settles every open disagreement by majority (needs review:admin); ties stay open."""
        body: Dict[str, Any] = {"method": "majority"}
        if evaluator is not None:
            body["evaluator"] = evaluator
        return self._call("POST", f"/v1/annotation-queues/{seg(queue)}/settle", json=body, options=request_options)

    @operation("POST", "/v1/annotation-queues/{queue}/export")
    def export(
        self, queue: str, label: str, *, evaluator: Optional[str] = None, request_options: Optional[RequestOptions] = None
    ) -> Any:
        """The reviewed items as a dataset (the human answer as ``expected``)."""
        body: Dict[str, Any] = {"label": label}
        if evaluator is not None:
            body["evaluator"] = evaluator
        return self._call("POST", f"/v1/annotation-queues/{seg(queue)}/export", json=body, options=request_options)

    @operation("GET", "/v1/annotation-queues/{queue}/agreement")
    def agreement(
        self,
        queue: str,
        *,
        seed: Optional[int] = None,
        resamples: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        return self._call(
            "GET",
            f"/v1/annotation-queues/{seg(queue)}/agreement",
            query={"seed": seed, "resamples": resamples},
            options=request_options,
            wrap=Agreement,
        )


class EvaluatorReview(Resource):
    """Agreement of an evaluator with human reviews, and the judge catalog."""

    @operation("GET", "/v1/evaluators/{evaluator}/agreement")
    def agreement(
        self,
        evaluator: str,
        *,
        queue: Optional[str] = None,
        run: Optional[str] = None,
        compare: Optional[str] = None,
        seed: Optional[int] = None,
        resamples: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """κ, correlations, MAE, confusion matrix and bootstrap intervals, per prompt hash."""
        return self._call(
            "GET",
            f"/v1/evaluators/{seg(evaluator)}/agreement",
            query={"queue": queue, "run": run, "compare": compare, "seed": seed, "resamples": resamples},
            options=request_options,
            wrap=Agreement,
        )

    @operation("GET", "/v1/evaluator-templates")
    def templates(self, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._call("GET", "/v1/evaluator-templates", options=request_options)

    @operation("GET", "/v1/evaluator-templates/{template}")
    def template(self, template: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._call("GET", f"/v1/evaluator-templates/{seg(template)}", options=request_options)
