from __future__ import annotations

from typing import Any, Optional

from ..types import Container, ContainerDeleted, CreateContainer, PatchContainer
from ._base import RequestOptions, Resource, merge_body, operation, seg


class Containers(Resource):
    """``/v1/containers``: the scopes of applications, their traffic, evaluators and runs."""

    @operation("GET", "/v1/containers")
    def list(
        self,
        *,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first; a Page (sync) or an awaitable, async-iterable pager (async) of :class:`Container`."""
        return self._list("/v1/containers", {"limit": limit, "offset": offset}, request_options)

    @operation("POST", "/v1/containers")
    def create(
        self, body: Optional[CreateContainer] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Container:
        return self._call("POST", "/v1/containers", json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/containers/{container}")
    def get(self, container: str, *, request_options: Optional[RequestOptions] = None) -> Container:
        """By id or label."""
        return self._call("GET", f"/v1/containers/{seg(container)}", options=request_options)

    @operation("PATCH", "/v1/containers/{container}")
    def update(
        self,
        container: str,
        patch: Optional[PatchContainer] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> Container:
        """By id or label; ``None`` clears a nullable field."""
        return self._call(
            "PATCH", f"/v1/containers/{seg(container)}", json=merge_body(patch, fields), options=request_options
        )

    @operation("DELETE", "/v1/containers/{id}")
    def delete(self, container_id: str, *, request_options: Optional[RequestOptions] = None) -> ContainerDeleted:
        """By id."""
        return self._call("DELETE", f"/v1/containers/{seg(container_id)}", options=request_options)
