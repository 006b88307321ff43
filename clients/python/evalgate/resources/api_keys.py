from __future__ import annotations

from typing import Any, Optional

from ..types import ApiKey, CreateApiKey, CreatedApiKey, UpdateApiKey
from ._base import RequestOptions, Resource, merge_body, operation, seg


class ApiKeys(Resource):
    """``/v1/api-keys``: keys of the calling key's project (``keys:read`` / ``keys:write``)."""

    @operation("POST", "/v1/api-keys")
    def create(
        self, body: Optional[CreateApiKey] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> CreatedApiKey:
        """A new key; its secret ``key`` is in this response only. A key grants at most what it holds.
        ``budget={"limit_usd": 5, "period": "day"}`` bounds what calls through it may spend."""
        return self._call("POST", "/v1/api-keys", json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/api-keys")
    def list(
        self,
        *,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        return self._list("/v1/api-keys", {"limit": limit, "offset": offset}, request_options)

    @operation("GET", "/v1/api-keys/{id}")
    def retrieve(self, key_id: str, *, request_options: Optional[RequestOptions] = None) -> ApiKey:
        """One key, with its ``budget`` and the ``spend`` of its current period."""
        return self._call("GET", f"/v1/api-keys/{seg(key_id)}", options=request_options)

    @operation("PATCH", "/v1/api-keys/{id}")
    def update(
        self,
        key_id: str,
        body: Optional[UpdateApiKey] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> ApiKey:
        """Renames a key or sets its ``budget`` (``budget=None`` removes it); a key cannot change its own."""
        return self._call(
            "PATCH", f"/v1/api-keys/{seg(key_id)}", json=merge_body(body, fields), options=request_options
        )

    @operation("DELETE", "/v1/api-keys/{id}")
    def revoke(self, key_id: str, *, request_options: Optional[RequestOptions] = None) -> ApiKey:
        """Revokes a key by id (``key_…``); it is refused from then on."""
        return self._call("DELETE", f"/v1/api-keys/{seg(key_id)}", options=request_options)
