from __future__ import annotations

from typing import Any, Optional

from ..types import Budget, ProjectBudget
from ._base import RequestOptions, Resource, merge_body, operation, seg


class Projects(Resource):
    """``/v1/projects/{project}``: the calling key's project (its id, or ``current``)."""

    @operation("GET", "/v1/projects/{project}/budget")
    def retrieve_budget(
        self, project: str = "current", *, request_options: Optional[RequestOptions] = None
    ) -> ProjectBudget:
        """The project's ``budget`` and the ``spend`` of its current period (``keys:read``)."""
        return self._call("GET", f"/v1/projects/{seg(project)}/budget", options=request_options)

    @operation("PUT", "/v1/projects/{project}/budget")
    def set_budget(
        self,
        body: Optional[Budget] = None,
        *,
        project: str = "current",
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> ProjectBudget:
        """Sets the project's budget (``limit_usd``, ``period``: day, month or total); its gateway calls
        and evaluation runs stop with ``budget_exceeded`` once it is spent (``keys:write``)."""
        return self._call(
            "PUT", f"/v1/projects/{seg(project)}/budget", json=merge_body(body, fields), options=request_options
        )

    @operation("DELETE", "/v1/projects/{project}/budget")
    def delete_budget(
        self, project: str = "current", *, request_options: Optional[RequestOptions] = None
    ) -> ProjectBudget:
        """Removes the project's budget (``keys:write``)."""
        return self._call("DELETE", f"/v1/projects/{seg(project)}/budget", options=request_options)
