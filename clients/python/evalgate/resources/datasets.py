from __future__ import annotations

from typing import Any, Optional

from .._upload import ProgressCallback, UploadSource, json_lines_upload
from ..types import CreateDataset, Dataset, DatasetDeleted, PatchDataset
from ._base import RequestOptions, Resource, merge_body, operation, seg


class Datasets(Resource):
    """``/v1/datasets``: immutable row sets to evaluate and to compare against."""

    @operation("POST", "/v1/datasets")
    def create(
        self, body: Optional[CreateDataset] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Dataset:
        """From rows in the request body (``items=[...]``); for large datasets use :meth:`upload`."""
        return self._call("POST", "/v1/datasets", json=merge_body(body, fields), options=request_options)

    def upload(
        self,
        source: UploadSource,
        *,
        label: Optional[str] = None,
        description: Optional[str] = None,
        on_progress: Optional[ProgressCallback] = None,
        gzip: bool = False,
        request_options: Optional[RequestOptions] = None,
    ) -> Dataset:
        """Streams rows as JSON lines from a file path, a pandas DataFrame, a list of dicts or any
        iterable of dicts or bytes (an async iterable with AsyncEvalgate), never holding the whole
        dataset in memory. ``on_progress(UploadProgress(bytes, rows))`` follows it. A path, a list or a
        DataFrame is sent again on a retry; a one-shot iterator is not retried."""
        return self._call(
            "POST",
            "/v1/datasets",
            query={"label": label, "description": description},
            upload=json_lines_upload(source, on_progress=on_progress, gzip=gzip),
            options=request_options,
        )

    @operation("GET", "/v1/datasets")
    def list(
        self,
        *,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first."""
        return self._list("/v1/datasets", {"limit": limit, "offset": offset}, request_options)

    @operation("GET", "/v1/datasets/{dataset}")
    def get(self, dataset: str, *, request_options: Optional[RequestOptions] = None) -> Dataset:
        """By id or label."""
        return self._call("GET", f"/v1/datasets/{seg(dataset)}", options=request_options)

    @operation("PATCH", "/v1/datasets/{dataset}")
    def update(
        self,
        dataset: str,
        patch: Optional[PatchDataset] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> Dataset:
        """Label, description or metadata (the rows are immutable)."""
        return self._call(
            "PATCH", f"/v1/datasets/{seg(dataset)}", json=merge_body(patch, fields), options=request_options
        )

    @operation("DELETE", "/v1/datasets/{id}")
    def delete(self, dataset_id: str, *, request_options: Optional[RequestOptions] = None) -> DatasetDeleted:
        """By id; a ConflictError while a queued or running run uses it."""
        return self._call("DELETE", f"/v1/datasets/{seg(dataset_id)}", options=request_options)

    @operation("GET", "/v1/datasets/{dataset}/items")
    def items(
        self,
        dataset: str,
        *,
        range: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Rows in position order; ``range="start:end"`` selects a slice, within which limit/offset page."""
        return self._list(
            f"/v1/datasets/{seg(dataset)}/items", {"range": range, "limit": limit, "offset": offset}, request_options
        )
