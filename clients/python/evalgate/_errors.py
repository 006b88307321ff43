"""The exceptions the client raises: one class per HTTP status, as the TypeScript client has."""

from __future__ import annotations

import email.utils
import json
import re
import time
from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "EvalgateError",
    "ConfigurationError",
    "APIError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "APIConnectionError",
    "APIConnectionTimeoutError",
    "WaitTimeoutError",
    "error_from_response",
    "parse_retry_after",
]


class EvalgateError(Exception):
    """The base of every error the client raises."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        #: HTTP status of the response; None when there was none (connection, configuration).
        self.status = status
        #: The ``error.code`` of the server's envelope (``validation_error`` for a 422).
        self.code = code or "client_error"
        #: The ``error.details`` of the envelope.
        self.details = details
        #: The request's id: the ``x-request-id`` of the response, or the one the client sent.
        self.request_id = request_id


class ConfigurationError(EvalgateError):
    """The client's configuration is missing or invalid (raised by the constructor)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="configuration_error")


class APIError(EvalgateError):
    """The server answered with an error status; the subclasses name the common ones."""

    def __init__(self, message: str, *, status: int, headers: Mapping[str, str], **fields: Any) -> None:
        super().__init__(message, status=status, **fields)
        self.status: int = status
        #: The response headers, e.g. ``x-ratelimit-remaining``.
        self.headers = headers


class AuthenticationError(APIError):
    """401: the API key is missing, malformed, unknown or revoked."""


class PermissionDeniedError(APIError):
    """403: the key lacks the permission the operation needs."""


class NotFoundError(APIError):
    """404: no such resource in the key's project."""


class ConflictError(APIError):
    """409: a label in use, a run already ended, an Idempotency-Key reused with another body."""


class UnprocessableEntityError(APIError):
    """422: the request is invalid; ``detail`` lists every problem as ``{loc, msg, type}``."""

    def __init__(self, message: str, *, detail: List[Dict[str, Any]], **fields: Any) -> None:
        super().__init__(message, **fields)
        self.detail = detail


class RateLimitError(APIError):
    """429: the key's rate limit is spent; ``retry_after`` is the server's Retry-After in seconds."""

    def __init__(self, message: str, *, retry_after: Optional[float], **fields: Any) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


class InternalServerError(APIError):
    """5xx: the server (or a dependency it needs) failed."""


class APIConnectionError(EvalgateError):
    """No response: the server could not be reached or the connection broke."""

    def __init__(self, message: str, *, request_id: Optional[str] = None, code: str = "connection_error") -> None:
        super().__init__(message, code=code, request_id=request_id)


class APIConnectionTimeoutError(APIConnectionError):
    """No response within the configured timeout."""

    def __init__(self, message: str, *, request_id: Optional[str] = None) -> None:
        super().__init__(message, request_id=request_id, code="timeout")


class WaitTimeoutError(EvalgateError):
    """``runs.wait()`` gave up before the run reached a terminal status (the run goes on)."""

    def __init__(self, run_id: str, last_status: Optional[str], timeout: float) -> None:
        super().__init__(
            f"Run {run_id} did not finish within {timeout:g} s (last status: {last_status or 'unknown'})",
            code="wait_timeout",
        )
        self.run_id = run_id
        self.last_status = last_status


def is_recoverable(err: BaseException) -> bool:
    """Failures after which following a run is worth another try: no response, a 429 or a 5xx."""
    return isinstance(err, (APIConnectionError, RateLimitError, InternalServerError))


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if value is None or value.strip() == "":
        return None
    text = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    try:
        at = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if at is None:
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))


def _is_issue_list(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, dict) and isinstance(v.get("loc"), list) and isinstance(v.get("msg"), str) for v in value
    )


_BY_STATUS = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
}


def error_from_response(status: int, headers: Mapping[str, str], body: Any, request_id: Optional[str]) -> APIError:
    """The error a response with an error status stands for, from its status and its body (any shape)."""
    envelope: Dict[str, Any] = body if isinstance(body, dict) else {}
    raw_inner = envelope.get("error")
    inner: Dict[str, Any] = raw_inner if isinstance(raw_inner, dict) else {}
    code = inner.get("code") if isinstance(inner.get("code"), str) else None
    details = inner.get("details") if isinstance(inner.get("details"), dict) else None
    from_body = inner.get("message") if isinstance(inner.get("message"), str) else None
    if isinstance(body, str):
        text = body.strip()
    elif body is None:
        text = ""
    else:
        text = json.dumps(body)
    message = f"{status} {from_body or text[:500] or 'status code (no body)'}"
    fields: Dict[str, Any] = {
        "status": status,
        "headers": headers,
        "code": code,
        "details": details,
        "request_id": request_id,
    }
    if status == 422:
        detail = envelope.get("detail")
        if isinstance(detail, list) and _is_issue_list(detail):
            summary = "; ".join(".".join(str(p) for p in d["loc"]) + ": " + d["msg"] for d in detail)
            fields["code"] = code or "validation_error"
            return UnprocessableEntityError(f"422 {summary or 'Validation error'}", detail=detail, **fields)
        return UnprocessableEntityError(message, detail=[], **fields)
    if status == 429:
        return RateLimitError(message, retry_after=parse_retry_after(headers.get("retry-after")), **fields)
    cls = _BY_STATUS.get(status)
    if cls is not None:
        return cls(message, **fields)
    if status >= 500:
        return InternalServerError(message, **fields)
    return APIError(message, **fields)
