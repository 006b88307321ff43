"""The request core: URL and headers, per-attempt timeouts, retries, and failures turned into errors."""

from __future__ import annotations

import asyncio
import json
import platform
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, Iterator, Mapping, Optional, Union
from urllib.parse import quote

import httpx

from ._config import ResolvedConfig
from ._errors import (
    APIConnectionError,
    APIConnectionTimeoutError,
    EvalgateError,
    error_from_response,
    parse_retry_after,
)
from ._upload import Upload

VERSION = "0.1.0"

#: Statuses worth another attempt: rate limited, or a server or proxy that failed or was unavailable.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Statuses after which even a non-idempotent request may be sent again: the server did not act on it
#: (429 is answered before the route runs; Evalgate answers 503 only when a dependency is down).
UNPROCESSED_STATUSES = frozenset({429, 503})
#: A Retry-After longer than this is not waited for: the RateLimitError is raised instead.
MAX_RETRY_AFTER = 60.0
BASE_DELAY = 0.5
MAX_DELAY = 8.0

QueryValue = Union[str, int, float, bool, None]


@dataclass
class RequestOptions:
    """Per-call overrides every method accepts as ``request_options=``."""

    timeout: Optional[float] = None
    max_retries: Optional[int] = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class RequestSpec:
    method: str
    path: str
    query: Optional[Mapping[str, QueryValue]] = None
    json: Any = None
    upload: Optional[Upload] = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Whether sending it twice does no harm (default: every method but POST).
    idempotent: Optional[bool] = None
    options: Optional[RequestOptions] = None
    #: An event stream: no read timeout once open (or this one, to give up waiting at a deadline).
    streaming: bool = False
    read_timeout: Optional[float] = None


def seg(value: str) -> str:
    """A path segment: ids, labels and slugs (``openai/gpt-4o``) are sent URL-encoded."""
    return quote(str(value), safe="")


def backoff(attempt: int) -> float:
    """0.5 s, 1 s, 2 s, … up to 8 s, each reduced by up to a quarter at random."""
    return min(BASE_DELAY * 2**attempt, MAX_DELAY) * (1 - 0.25 * random.random())


def delay_after(headers: Mapping[str, str], attempt: int) -> Optional[float]:
    """The wait before the next attempt after a response: its Retry-After (never less), else the back-off.
    None: longer than we wait for."""
    retry_after = parse_retry_after(headers.get("retry-after"))
    if retry_after is None:
        return backoff(attempt)
    if retry_after > MAX_RETRY_AFTER:
        return None
    return retry_after + 0.05 * random.random()


def _query(query: Optional[Mapping[str, QueryValue]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for key, value in (query or {}).items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _parse_loose(response: httpx.Response, text: str) -> Any:
    if "json" not in response.headers.get("content-type", "") or text == "":
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parse_body(response: httpx.Response, request_id: str) -> Any:
    text = response.text
    if text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise EvalgateError(
            f"Expected a JSON response from {response.request.url}, got: {text[:200]}",
            status=response.status_code,
            code="invalid_response",
            request_id=response.headers.get("x-request-id", request_id),
        ) from None


def _connection_error(err: Exception, request_id: str, timeout: float) -> EvalgateError:
    if isinstance(err, httpx.TimeoutException):
        return APIConnectionTimeoutError(
            f"Request timed out after {timeout:g} s without progress", request_id=request_id
        )
    return APIConnectionError(f"Connection error ({type(err).__name__}): {err}", request_id=request_id)


def _failed_before_sending(err: Exception) -> bool:
    """Whether the server certainly never saw the request: the connection was never made (refused, no
    such host, no route, no connection within the timeout, or none free in the pool)."""
    return isinstance(err, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


class _Core:
    def __init__(self, config: ResolvedConfig, default_headers: Optional[Mapping[str, str]]) -> None:
        self.config = config
        self.default_headers = dict(default_headers or {})

    def url(self, path: str) -> str:
        return self.config.base_url + path

    def build(
        self, client: Union[httpx.Client, httpx.AsyncClient], spec: RequestSpec, request_id: str, body: Any
    ) -> httpx.Request:
        headers = {
            "accept": "application/json",
            "authorization": f"Bearer {self.config.api_key}",
            "user-agent": f"evalgate-python/{VERSION} python/{platform.python_version()} httpx/{httpx.__version__}",
            "x-request-id": request_id,
            **self.default_headers,
            **spec.headers,
            **(spec.options.headers if spec.options else {}),
        }
        timeout = self.timeout_of(spec)
        limits = httpx.Timeout(timeout, read=spec.read_timeout) if spec.streaming else httpx.Timeout(timeout)
        kwargs: Dict[str, Any] = {"params": _query(spec.query), "headers": headers, "timeout": limits}
        if spec.upload is not None:
            headers["content-type"] = spec.upload.content_type
            headers.update(spec.upload.headers)
            kwargs["content"] = body
        elif spec.json is not None:
            headers["content-type"] = "application/json"
            kwargs["content"] = json.dumps(spec.json).encode("utf-8")
        return client.build_request(spec.method, self.url(spec.path), **kwargs)

    def timeout_of(self, spec: RequestSpec) -> float:
        if spec.options and spec.options.timeout is not None:
            return spec.options.timeout
        return self.config.timeout

    def retries_of(self, spec: RequestSpec) -> int:
        if spec.options and spec.options.max_retries is not None:
            return spec.options.max_retries
        return self.config.max_retries

    @staticmethod
    def idempotent(spec: RequestSpec) -> bool:
        return spec.idempotent if spec.idempotent is not None else spec.method != "POST"

    def again_after_exception(self, spec: RequestSpec, err: Exception, retries_left: bool) -> bool:
        if not retries_left:
            return False
        if self.idempotent(spec):
            return True
        return _failed_before_sending(err)

    def error_of(self, response: httpx.Response, request_id: str) -> EvalgateError:
        return error_from_response(
            response.status_code,
            response.headers,
            _parse_loose(response, response.text),
            response.headers.get("x-request-id", request_id),
        )

    def delay_for(
        self, spec: RequestSpec, response: httpx.Response, attempt: int, retries_left: bool
    ) -> Optional[float]:
        status = response.status_code
        if not (
            retries_left and status in RETRY_STATUSES and (self.idempotent(spec) or status in UNPROCESSED_STATUSES)
        ):
            return None
        return delay_after(response.headers, attempt)


class Transport(_Core):
    """Synchronous requests over one ``httpx.Client`` (connections are reused)."""

    def __init__(
        self, config: ResolvedConfig, default_headers: Optional[Mapping[str, str]], http_client: Optional[httpx.Client]
    ) -> None:
        super().__init__(config, default_headers)
        self.http = http_client or httpx.Client()

    def request(self, spec: RequestSpec) -> Any:
        response = self._send(spec, stream=False)
        return _parse_body(response, response.request.headers["x-request-id"])

    def stream(self, spec: RequestSpec) -> httpx.Response:
        """The successful response with its body unread (server-sent events); the caller closes it."""
        return self._send(spec, stream=True)

    def _send(self, spec: RequestSpec, stream: bool) -> httpx.Response:
        max_retries = self.retries_of(spec)
        replayable = spec.upload.replayable if spec.upload else True
        request_id = str(uuid.uuid4())
        attempt = 0
        while True:
            retries_left = attempt < max_retries and replayable
            body = spec.upload.open() if spec.upload else None
            try:
                response = self.http.send(self.build(self.http, spec, request_id, body), stream=stream)
            except httpx.HTTPError as err:
                if not self.again_after_exception(spec, err, retries_left):
                    raise _connection_error(err, request_id, self.timeout_of(spec)) from err
                time.sleep(backoff(attempt))
                attempt += 1
                continue
            if response.is_success:
                return response
            if stream:
                response.read()
                response.close()
            delay = self.delay_for(spec, response, attempt, retries_left)
            if delay is None:
                raise self.error_of(response, request_id)
            time.sleep(delay)
            attempt += 1

    def close(self) -> None:
        self.http.close()


class AsyncTransport(_Core):
    """Asynchronous requests over one ``httpx.AsyncClient``."""

    def __init__(
        self,
        config: ResolvedConfig,
        default_headers: Optional[Mapping[str, str]],
        http_client: Optional[httpx.AsyncClient],
    ) -> None:
        super().__init__(config, default_headers)
        self.http = http_client or httpx.AsyncClient()

    async def request(self, spec: RequestSpec) -> Any:
        response = await self._send(spec, stream=False)
        return _parse_body(response, response.request.headers["x-request-id"])

    async def stream(self, spec: RequestSpec) -> httpx.Response:
        return await self._send(spec, stream=True)

    def _open(self, upload: Upload) -> AsyncIterator[bytes]:
        if upload.open_async is not None:
            return upload.open_async()
        return _aiter(upload.open())

    async def _send(self, spec: RequestSpec, stream: bool) -> httpx.Response:
        max_retries = self.retries_of(spec)
        replayable = spec.upload.replayable if spec.upload else True
        request_id = str(uuid.uuid4())
        attempt = 0
        while True:
            retries_left = attempt < max_retries and replayable
            body = self._open(spec.upload) if spec.upload else None
            try:
                response = await self.http.send(self.build(self.http, spec, request_id, body), stream=stream)
            except httpx.HTTPError as err:
                if not self.again_after_exception(spec, err, retries_left):
                    raise _connection_error(err, request_id, self.timeout_of(spec)) from err
                await asyncio.sleep(backoff(attempt))
                attempt += 1
                continue
            if response.is_success:
                return response
            if stream:
                await response.aread()
                await response.aclose()
            delay = self.delay_for(spec, response, attempt, retries_left)
            if delay is None:
                raise self.error_of(response, request_id)
            await asyncio.sleep(delay)
            attempt += 1

    async def close(self) -> None:
        await self.http.aclose()


async def _aiter(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
