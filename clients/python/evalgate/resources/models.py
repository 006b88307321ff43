from __future__ import annotations

from typing import Any, Optional

from ..types import Model, ModelDeleted, PatchModel, RegisterModel
from ._base import RequestOptions, Resource, merge_body, operation, seg


class Models(Resource):
    """``/v1/models``: frontier models enabled by the operator and the project's registered models."""

    @operation("GET", "/v1/models")
    def list(self, *, request_options: Optional[RequestOptions] = None) -> Any:
        """Every model usable by the project (one page: the server does not paginate this list)."""
        return self._list("/v1/models", {}, request_options)

    @operation("POST", "/v1/models")
    def register(
        self, body: Optional[RegisterModel] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Model:
        """Registers a model of the project: an OpenAI-compatible server or an Anthropic endpoint."""
        return self._call("POST", "/v1/models", json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/models/{model}")
    def get(self, model: str, *, request_options: Optional[RequestOptions] = None) -> Model:
        """A registered model by id or label, or a frontier model by slug (``openai/gpt-4o-mini``)."""
        return self._call("GET", f"/v1/models/{seg(model)}", options=request_options)

    @operation("PATCH", "/v1/models/{model}")
    def update(
        self,
        model: str,
        patch: Optional[PatchModel] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> Model:
        return self._call("PATCH", f"/v1/models/{seg(model)}", json=merge_body(patch, fields), options=request_options)

    @operation("DELETE", "/v1/models/{id}")
    def delete(self, model_id: str, *, request_options: Optional[RequestOptions] = None) -> ModelDeleted:
        """A registered model by id (``mdl_…``)."""
        return self._call("DELETE", f"/v1/models/{seg(model_id)}", options=request_options)
