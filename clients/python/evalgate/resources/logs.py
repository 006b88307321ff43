from __future__ import annotations

from typing import Any, List, Optional

from .._upload import ProgressCallback, UploadSource, json_lines_upload
from ..types import ImportLog, LogImport
from ._base import RequestOptions, Resource, operation, seg


class TaskLogs(Resource):
    """``/v1/containers/{container}/logs``: the calls recorded in a container (its task logs)."""

    @operation("GET", "/v1/containers/{container}/logs")
    def list(
        self,
        container: str,
        *,
        model: Optional[str] = None,
        since: Optional[str] = None,
        range: Optional[str] = None,
        prompt_id: Optional[str] = None,
        prompt_version: Optional[int] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """A container's logs in seq order, optionally of one model, since a time, a range, or the calls
        made from one stored prompt (id or name) and version."""
        query = {
            "model": model,
            "since": since,
            "range": range,
            "prompt_id": prompt_id,
            "prompt_version": prompt_version,
            "limit": limit,
            "offset": offset,
        }
        return self._list(f"/v1/containers/{seg(container)}/logs", query, request_options)

    @operation("POST", "/v1/containers/{container}/logs")
    def import_(
        self, container: str, logs: List[ImportLog], *, request_options: Optional[RequestOptions] = None
    ) -> LogImport:
        """Imports calls recorded elsewhere, all or nothing. Not idempotent: a lost response is not retried
        (only refused connections, 429 and 503 are), since a second import would add the logs twice."""
        return self._call("POST", f"/v1/containers/{seg(container)}/logs", json=list(logs), options=request_options)

    def upload(
        self,
        container: str,
        source: UploadSource,
        *,
        on_progress: Optional[ProgressCallback] = None,
        gzip: bool = False,
        request_options: Optional[RequestOptions] = None,
    ) -> LogImport:
        """As ``import_``, streamed as JSON lines from a path, a DataFrame or an iterable of entries."""
        return self._call(
            "POST",
            f"/v1/containers/{seg(container)}/logs",
            upload=json_lines_upload(source, on_progress=on_progress, gzip=gzip),
            options=request_options,
        )
