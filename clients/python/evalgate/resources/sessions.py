from __future__ import annotations

from typing import Any, Optional

from ..types import Session, SessionDetail, ToolStep
from ._base import RequestOptions, Resource, operation, seg


class Sessions(Resource):
    """``/v1/sessions``: conversations and agent runs, the gateway's calls grouped as the log writer
    assigns them (``X-Evalgate-Session``, ``previous_response_id``, a shared trace, conversation continuity)."""

    @operation("GET", "/v1/sessions")
    def list(
        self,
        *,
        container: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        model: Optional[str] = None,
        errors: Optional[bool] = None,
        min_turns: Optional[int] = None,
        max_turns: Optional[int] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first, with their totals; iterating fetches every page."""
        query = {
            "container": container,
            "since": since,
            "until": until,
            "model": model,
            "errors": None if errors is None else ("true" if errors else "false"),
            "min_turns": min_turns,
            "max_turns": max_turns,
            "limit": limit,
            "offset": offset,
        }
        return self._list("/v1/sessions", query, request_options)

    @operation("GET", "/v1/sessions/{session}")
    def get(self, session: str, *, request_options: Optional[RequestOptions] = None) -> SessionDetail:
        """The session's calls in order (messages, tool calls with arguments and results, scores)."""
        return self._call("GET", f"/v1/sessions/{seg(session)}", options=request_options)

    @operation("GET", "/v1/sessions/{session}/tool-calls/{tool_call}")
    def tool_call(
        self, session: str, tool_call: str, *, request_options: Optional[RequestOptions] = None
    ) -> ToolStep:
        """A tool step: one tool call of the session (name, arguments, result), the conversation before
        it, and the scores tool-step runs gave it."""
        return self._call(
            "GET", f"/v1/sessions/{seg(session)}/tool-calls/{seg(tool_call)}", options=request_options
        )

    @operation("POST", "/v1/sessions/{session}/end")
    def end(self, session: str, *, request_options: Optional[RequestOptions] = None) -> Session:
        """Ends the session: a session monitor scores it at its next sweep instead of waiting for it to be
        idle. A call that joins it later opens it again."""
        return self._call("POST", f"/v1/sessions/{seg(session)}/end", options=request_options)
