from __future__ import annotations

from typing import Any, Optional

from ..types import CreateGuardPolicy, GuardPolicy, GuardPolicyDeleted, GuardVerdictSummary, PatchGuardPolicy
from ._base import RequestOptions, Resource, merge_body, operation, seg


class Guards(Resource):
    """``/v1/guards``: guard policies the gateway applies before, beside and after the model call (block,
    flag or redact), and their verdicts. Policies are addressed by id or name."""

    @operation("GET", "/v1/guards")
    def list(
        self,
        *,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """The project's policies; iterating fetches every page."""
        return self._list("/v1/guards", {"limit": limit, "offset": offset}, request_options)

    @operation("POST", "/v1/guards")
    def create(
        self, body: Optional[CreateGuardPolicy] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> GuardPolicy:
        """``name``, ``applies_to`` (containers, keys, models) and the ordered ``checks``."""
        return self._call("POST", "/v1/guards", json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/guards/{guard}")
    def get(self, guard: str, *, request_options: Optional[RequestOptions] = None) -> GuardPolicy:
        return self._call("GET", f"/v1/guards/{seg(guard)}", options=request_options)

    @operation("PATCH", "/v1/guards/{guard}")
    def update(
        self,
        guard: str,
        patch: Optional[PatchGuardPolicy] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> GuardPolicy:
        return self._call("PATCH", f"/v1/guards/{seg(guard)}", json=merge_body(patch, fields), options=request_options)

    @operation("DELETE", "/v1/guards/{guard}")
    def delete(self, guard: str, *, request_options: Optional[RequestOptions] = None) -> GuardPolicyDeleted:
        return self._call("DELETE", f"/v1/guards/{seg(guard)}", options=request_options)

    @operation("GET", "/v1/guards/verdicts")
    def verdicts(
        self,
        *,
        task_log_id: Optional[str] = None,
        guard: Optional[str] = None,
        verdict: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Verdicts other than passes, newest first: of one call, one guard or one verdict (``blocked``,
        ``flagged``, ``redacted``, ``error``); iterating fetches every page."""
        return self._list(
            "/v1/guards/verdicts",
            {"task_log_id": task_log_id, "guard": guard, "verdict": verdict, "limit": limit, "offset": offset},
            request_options,
        )

    @operation("GET", "/v1/guards/verdicts/summary")
    def verdict_summary(
        self,
        *,
        since: Optional[str] = None,
        until: Optional[str] = None,
        examples: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> GuardVerdictSummary:
        """What each check did over a window (default: the 24 hours before ``until``, itself now): its
        ``blocked``, ``flagged``, ``redacted`` and ``error`` counts and its latest ``examples`` verdicts."""
        return self._call(
            "GET",
            "/v1/guards/verdicts/summary",
            query={"since": since, "until": until, "examples": examples},
            options=request_options,
        )
