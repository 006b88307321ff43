from __future__ import annotations

from typing import Any, AsyncIterator, Dict, Iterator, List, Optional

from .._http import RequestSpec
from .._upload import ProgressCallback, UploadSource, json_lines_upload
from ..types import (
    CreateDataset,
    Dataset,
    DatasetDeleted,
    DatasetDiff,
    DatasetItemDeleted,
    DatasetItemsChanged,
    NewDatasetItem,
    PatchDataset,
    PatchDatasetItem,
)
from ._base import RequestOptions, Resource, merge_body, operation, seg


class Datasets(Resource):
    """``/v1/datasets``: items to evaluate and to compare against. Adding, editing or removing items
    makes a new version; earlier versions stay readable (``items(version=)``, ``export``, ``diff``)."""

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
        """Label, description or metadata (items change with add_item, update_item, delete_item)."""
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
        version: Optional[int] = None,
        split: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Items of a version (default the latest; ``split``: one split) in order; ``range="start:end"``
        selects a slice, within which limit/offset page."""
        query = {"range": range, "version": version, "split": split, "limit": limit, "offset": offset}
        return self._list(f"/v1/datasets/{seg(dataset)}/items", query, request_options)

    @operation("POST", "/v1/datasets/{dataset}/items")
    def add_item(
        self,
        dataset: str,
        item: Optional[NewDatasetItem] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> DatasetItemsChanged:
        """Adds an item (``input=…, expected=…``, or ``from_={"task_log_id": …}`` / ``span_id`` /
        ``session_id`` / ``review_id``; fields given beside it override): a new version."""
        body: Dict[str, Any] = dict(merge_body(item, fields))
        if "from_" in body:
            body["from"] = body.pop("from_")
        return self._call("POST", f"/v1/datasets/{seg(dataset)}/items", json=body, options=request_options)

    @operation("POST", "/v1/datasets/{dataset}/items/batch")
    def add_items(
        self, dataset: str, items: List[NewDatasetItem], *, request_options: Optional[RequestOptions] = None
    ) -> DatasetItemsChanged:
        """Adds up to 1000 items at once: one new version."""
        return self._call(
            "POST", f"/v1/datasets/{seg(dataset)}/items/batch", json={"items": items}, options=request_options
        )

    @operation("PATCH", "/v1/datasets/{dataset}/items/{item_id}")
    def update_item(
        self,
        dataset: str,
        item_id: str,
        patch: Optional[PatchDatasetItem] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> DatasetItemsChanged:
        """Replaces fields of an item: a new version (earlier ones keep the item as it was)."""
        return self._call(
            "PATCH",
            f"/v1/datasets/{seg(dataset)}/items/{seg(item_id)}",
            json=merge_body(patch, fields),
            options=request_options,
        )

    @operation("DELETE", "/v1/datasets/{dataset}/items/{item_id}")
    def delete_item(
        self, dataset: str, item_id: str, *, request_options: Optional[RequestOptions] = None
    ) -> DatasetItemDeleted:
        """Removes an item: a new version (earlier ones keep it)."""
        return self._call("DELETE", f"/v1/datasets/{seg(dataset)}/items/{seg(item_id)}", options=request_options)

    @operation("GET", "/v1/datasets/{dataset}/versions")
    def versions(
        self,
        dataset: str,
        *,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """The versions, newest first."""
        return self._list(f"/v1/datasets/{seg(dataset)}/versions", {"limit": limit, "offset": offset}, request_options)

    @operation("GET", "/v1/datasets/{dataset}/diff")
    def diff(
        self,
        dataset: str,
        *,
        from_: int,
        to: Optional[int] = None,
        limit: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> DatasetDiff:
        """What changed between versions ``from_`` and ``to`` (default the latest): added, removed, changed."""
        return self._call(
            "GET",
            f"/v1/datasets/{seg(dataset)}/diff",
            query={"from": from_, "to": to, "limit": limit},
            options=request_options,
        )

    def _export_spec(
        self, dataset: str, version: Optional[int], split: Optional[str], format: str, options: Optional[RequestOptions]
    ) -> RequestSpec:
        return RequestSpec(
            method="GET",
            path=f"/v1/datasets/{seg(dataset)}/export",
            query={"version": version, "split": split, "format": format},
            options=options,
            streaming=True,
        )

    @operation("GET", "/v1/datasets/{dataset}/export")
    def export(
        self,
        dataset: str,
        *,
        version: Optional[int] = None,
        split: Optional[str] = None,
        format: str = "jsonl",
        request_options: Optional[RequestOptions] = None,
    ) -> Iterator[bytes]:
        """A version (default the latest) as JSON lines or CSV (``format="csv"``), streamed in chunks of
        bytes: write them to a file as they come."""
        response = self._client._transport.stream(self._export_spec(dataset, version, split, format, request_options))
        try:
            yield from response.iter_bytes()
        finally:
            response.close()


class AsyncDatasets(Datasets):
    """As :class:`Datasets`, for AsyncEvalgate: ``export`` is an async iterator of bytes."""

    @operation("GET", "/v1/datasets/{dataset}/export")
    async def export(  # type: ignore[override]
        self,
        dataset: str,
        *,
        version: Optional[int] = None,
        split: Optional[str] = None,
        format: str = "jsonl",
        request_options: Optional[RequestOptions] = None,
    ) -> AsyncIterator[bytes]:
        spec = self._export_spec(dataset, version, split, format, request_options)
        response = await self._client._transport.stream(spec)
        try:
            async for chunk in response.aiter_bytes():
                yield chunk
        finally:
            await response.aclose()
