"""``Evalgate`` and ``AsyncEvalgate``: the configuration, the resources, and how their calls are sent."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

import httpx

from ._config import ConfigEndpoint, ResolvedConfig, resolve_config
from ._errors import NotFoundError, PermissionDeniedError
from ._http import AsyncTransport, RequestOptions, RequestSpec, Transport, seg
from ._pagination import AsyncPager, Page
from .resources import (
    ApiKeys,
    AsyncDatasets,
    AsyncRuns,
    Containers,
    Datasets,
    Evaluators,
    Guards,
    Models,
    Monitors,
    Projects,
    Prompts,
    AsyncPrompts,
    Runs,
    Sessions,
    AnnotationQueues,
    EvaluatorReview,
    TaskLogs,
    Traces,
)
from .resources._base import operation
from .types import Health

Wrap = Optional[Callable[[Any], Any]]

_SETTINGS = (
    "api_key",
    "base_url",
    "environment",
    "region",
    "endpoint",
    "timeout",
    "max_retries",
    "config_path",
    "default_headers",
    "env",
)


def _settings(arguments: Dict[str, Any]) -> Dict[str, Any]:
    return {name: arguments[name] for name in _SETTINGS}


def _unnamed(body: Dict[str, Any], names: Dict[str, Optional[str]]) -> List[str]:
    """The evaluator ids of a page of run samples whose names are not known yet."""
    ids = {row.get("evaluator_id") for row in body.get("data") or [] if isinstance(row, dict)}
    return sorted(i for i in ids if isinstance(i, str) and i not in names)


def _name_rows(body: Dict[str, Any], names: Dict[str, Optional[str]]) -> None:
    """Puts each sample's evaluator name (``evaluator``) right after its ``evaluator_id``, so that tables
    of samples (``to_pandas()``) show both side by side."""
    rows = body.get("data") or []
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or "evaluator_id" not in row:
            continue
        named: Dict[str, Any] = {}
        for key, value in row.items():
            if key == "evaluator":
                continue
            named[key] = value
            if key == "evaluator_id":
                named["evaluator"] = names.get(value)
        rows[index] = named


def _evaluator_path(evaluator_id: str) -> str:
    return f"/v1/evaluators/{seg(evaluator_id)}"


class _Base:
    _config: ResolvedConfig

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        environment: Optional[str] = None,
        region: Optional[str] = None,
        endpoint: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        config_path: Optional[str] = None,
        default_headers: Optional[Mapping[str, str]] = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self._config = resolve_config(
            api_key=api_key,
            base_url=base_url,
            environment=environment,
            region=region,
            endpoint=endpoint,
            timeout=timeout,
            max_retries=max_retries,
            config_path=config_path,
            env=env,
        )
        self._default_headers = dict(default_headers or {})
        self.containers = Containers(self)
        self.evaluators = Evaluators(self)
        self.datasets = Datasets(self)
        self.models = Models(self)
        self.logs = TaskLogs(self)
        self.api_keys = ApiKeys(self)
        self.projects = Projects(self)
        self.runs: Runs = Runs(self)
        self.monitors = Monitors(self)
        self.guards = Guards(self)
        self.sessions = Sessions(self)
        self.annotation_queues = AnnotationQueues(self)
        self.review = EvaluatorReview(self)
        self.traces = Traces(self)
        self.prompts: Prompts = Prompts(self)

    # The settings in force (the key is not among them: it stays out of logs and reprs).
    @property
    def base_url(self) -> str:
        return self._config.base_url

    @property
    def environment(self) -> Optional[str]:
        return self._config.environment

    @property
    def region(self) -> Optional[str]:
        return self._config.region

    @property
    def endpoint(self) -> Optional[ConfigEndpoint]:
        """The config-file endpoint in use (for the base URL or the key), if any."""
        return self._config.endpoint

    @property
    def timeout(self) -> float:
        return self._config.timeout

    @property
    def max_retries(self) -> int:
        return self._config.max_retries

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"


class Evalgate(_Base):
    """The synchronous client. Settings come from the arguments, else ``EVALGATE_*`` environment
    variables, else the user config file (``~/.config/evalgate/config.json``), else the defaults."""

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        environment: Optional[str] = None,
        region: Optional[str] = None,
        endpoint: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        config_path: Optional[str] = None,
        default_headers: Optional[Mapping[str, str]] = None,
        env: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(**_settings(locals()))
        self._transport = Transport(self._config, self._default_headers, http_client)

    def _call(self, spec: RequestSpec, wrap: Wrap) -> Any:
        body = self._transport.request(spec)
        return wrap(body) if wrap else body

    def _list(
        self,
        path: str,
        query: Dict[str, Any],
        options: Optional[RequestOptions],
        wrap: Wrap,
        evaluator_names: bool = False,
    ) -> Page[Any]:
        first = query.get("offset") or 0
        names: Dict[str, Optional[str]] = {}

        def fetch(offset: int) -> Dict[str, Any]:
            spec = RequestSpec("GET", path, query={**query, "offset": offset or None}, options=options)
            body = self._transport.request(spec)
            if evaluator_names:
                for evaluator_id in _unnamed(body, names):
                    names[evaluator_id] = self._evaluator_name(evaluator_id, options)
                _name_rows(body, names)
            return body

        return Page(fetch, fetch(first), first, wrap)

    def _evaluator_name(self, evaluator_id: str, options: Optional[RequestOptions]) -> Optional[str]:
        """The evaluator's name; None once it was deleted, or for a key that may not read evaluators."""
        try:
            return self._transport.request(RequestSpec("GET", _evaluator_path(evaluator_id), options=options))["name"]
        except (NotFoundError, PermissionDeniedError):
            return None

    @operation("GET", "/healthz")
    def health(self, *, request_options: Optional[RequestOptions] = None) -> Health:
        """``GET /healthz``: ``{"ok": true}`` while the server and its dependencies answer."""
        return self._call(RequestSpec("GET", "/healthz", options=request_options), None)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Evalgate:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncEvalgate(_Base):
    """The asynchronous client: the same resources and settings, every call awaited; lists are awaited
    for their first page or iterated with ``async for`` over every item."""

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        environment: Optional[str] = None,
        region: Optional[str] = None,
        endpoint: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        config_path: Optional[str] = None,
        default_headers: Optional[Mapping[str, str]] = None,
        env: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(**_settings(locals()))
        self.runs = AsyncRuns(self)
        self.prompts = AsyncPrompts(self)
        self.datasets = AsyncDatasets(self)
        self._transport = AsyncTransport(self._config, self._default_headers, http_client)

    async def _call(self, spec: RequestSpec, wrap: Wrap) -> Any:
        body = await self._transport.request(spec)
        return wrap(body) if wrap else body

    def _list(
        self,
        path: str,
        query: Dict[str, Any],
        options: Optional[RequestOptions],
        wrap: Wrap,
        evaluator_names: bool = False,
    ) -> AsyncPager[Any]:
        first = query.get("offset") or 0
        names: Dict[str, Optional[str]] = {}

        async def fetch(offset: int) -> Dict[str, Any]:
            spec = RequestSpec("GET", path, query={**query, "offset": offset or None}, options=options)
            body = await self._transport.request(spec)
            if evaluator_names:
                for evaluator_id in _unnamed(body, names):
                    names[evaluator_id] = await self._evaluator_name(evaluator_id, options)
                _name_rows(body, names)
            return body

        return AsyncPager(fetch, first, wrap)

    async def _evaluator_name(self, evaluator_id: str, options: Optional[RequestOptions]) -> Optional[str]:
        try:
            spec = RequestSpec("GET", _evaluator_path(evaluator_id), options=options)
            return (await self._transport.request(spec))["name"]
        except (NotFoundError, PermissionDeniedError):
            return None

    @operation("GET", "/healthz")
    async def health(self, *, request_options: Optional[RequestOptions] = None) -> Health:
        return await self._call(RequestSpec("GET", "/healthz", options=request_options), None)

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> AsyncEvalgate:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
