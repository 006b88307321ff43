from __future__ import annotations

from typing import Any, Optional

from ..types import Trace
from ._base import RequestOptions, Resource, operation, seg


class Traces(Resource):
    """``/v1/traces``: the project's traces (spans sent over OTLP and gateway calls, kept as trees). Spans
    are sent with an OpenTelemetry OTLP exporter pointed at the server, not with this client."""

    @operation("GET", "/v1/traces")
    def list(
        self,
        *,
        container: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        session: Optional[str] = None,
        model: Optional[str] = None,
        errors: Optional[bool] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Traces, newest first; ``errors=True`` only those with an error span, ``False`` only those without."""
        query = {
            "container": container,
            "since": since,
            "until": until,
            "session": session,
            "model": model,
            "errors": None if errors is None else ("true" if errors else "false"),
            "limit": limit,
            "offset": offset,
        }
        return self._list("/v1/traces", query, request_options)

    @operation("GET", "/v1/traces/{trace_id}")
    def get(self, trace_id: str, *, request_options: Optional[RequestOptions] = None) -> Trace:
        """One trace with its spans (depth-first from the roots), each model call with its task log."""
        return self._call("GET", f"/v1/traces/{seg(trace_id)}", options=request_options)
