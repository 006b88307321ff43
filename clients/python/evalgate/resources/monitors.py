from __future__ import annotations

from typing import Any, Optional

from .._objects import MonitorResults
from ..types import CreateMonitor, Monitor, MonitorDeleted, PatchMonitor
from ._base import RequestOptions, Resource, merge_body, operation, seg


class Monitors(Resource):
    """``/v1/monitors``: standing rules that score a sampled share of a container's calls as they are
    recorded. Monitors are addressed by id or name."""

    @operation("GET", "/v1/monitors")
    def list(
        self,
        *,
        container: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first, optionally of one container (id or label); iterating fetches every page."""
        return self._list(
            "/v1/monitors", {"container": container, "limit": limit, "offset": offset}, request_options
        )

    @operation("POST", "/v1/monitors")
    def create(
        self, body: Optional[CreateMonitor] = None, *, request_options: Optional[RequestOptions] = None, **fields: Any
    ) -> Monitor:
        """The answer carries ``alert_secret`` (the key webhooks are signed with): shown this once."""
        return self._call("POST", "/v1/monitors", json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/monitors/{monitor}")
    def get(self, monitor: str, *, request_options: Optional[RequestOptions] = None) -> Monitor:
        return self._call("GET", f"/v1/monitors/{seg(monitor)}", options=request_options)

    @operation("PATCH", "/v1/monitors/{monitor}")
    def update(
        self,
        monitor: str,
        patch: Optional[PatchMonitor] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> Monitor:
        """``name``, ``sampling_rate``, ``filter``, ``enabled``, ``alert`` (``None`` removes the alert)."""
        return self._call(
            "PATCH", f"/v1/monitors/{seg(monitor)}", json=merge_body(patch, fields), options=request_options
        )

    def pause(self, monitor: str, *, request_options: Optional[RequestOptions] = None) -> Monitor:
        """Stops selecting new calls; what was selected is still scored."""
        return self.update(monitor, {"enabled": False}, request_options=request_options)

    def resume(self, monitor: str, *, request_options: Optional[RequestOptions] = None) -> Monitor:
        """Selects the calls recorded from now on (not those of the pause)."""
        return self.update(monitor, {"enabled": True}, request_options=request_options)

    @operation("DELETE", "/v1/monitors/{monitor}")
    def delete(self, monitor: str, *, request_options: Optional[RequestOptions] = None) -> MonitorDeleted:
        """Ends the monitor's run (its scored samples stay readable through the run)."""
        return self._call("DELETE", f"/v1/monitors/{seg(monitor)}", options=request_options)

    @operation("GET", "/v1/monitors/{monitor}/results")
    def results(
        self,
        monitor: str,
        *,
        since: Optional[str] = None,
        until: Optional[str] = None,
        bucket: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> MonitorResults:
        """Per-evaluator totals and buckets (``minute``, ``hour``, ``day``) over the calls recorded in a
        window (ISO 8601 ``since``/``until``); ``.to_pandas()`` gives one row per bucket and evaluator."""
        return self._call(
            "GET",
            f"/v1/monitors/{seg(monitor)}/results",
            query={"since": since, "until": until, "bucket": bucket},
            options=request_options,
            wrap=MonitorResults,
        )

    @operation("GET", "/v1/monitors/{monitor}/samples")
    def samples(
        self,
        monitor: str,
        *,
        failed: Optional[bool] = None,
        evaluator: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Scored calls, newest first (needs ``logs:read`` too); ``.to_pandas()`` on the page."""
        query = {
            "failed": failed,
            "evaluator": evaluator,
            "since": since,
            "until": until,
            "limit": limit,
            "offset": offset,
        }
        return self._list(f"/v1/monitors/{seg(monitor)}/samples", query, request_options)
