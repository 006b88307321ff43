"""What every resource shares: the request helpers, and the record of which API operation each method
calls (``tests/test_coverage.py`` checks it against the server's ``/openapi.json``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple, TypeVar

from .._http import QueryValue, RequestOptions, RequestSpec, seg

__all__ = ["Resource", "operation", "OPERATIONS", "seg", "RequestOptions", "merge_body"]

F = TypeVar("F", bound=Callable[..., Any])

#: Every (METHOD, /path/{template}) a client method calls, as the OpenAPI document spells it.
OPERATIONS: Set[Tuple[str, str]] = set()


def operation(method: str, path: str) -> Callable[[F], F]:
    """Marks a method as the client's way to call ``METHOD path`` (as written in /openapi.json)."""

    def mark(fn: F) -> F:
        OPERATIONS.add((method.upper(), path))
        ops: List[Tuple[str, str]] = list(getattr(fn, "__evalgate_operations__", []))
        ops.append((method.upper(), path))
        fn.__evalgate_operations__ = ops  # type: ignore[attr-defined]
        return fn

    return mark


def merge_body(body: Optional[Mapping[str, Any]], fields: Mapping[str, Any]) -> Dict[str, Any]:
    """A request body from a dict and/or keyword arguments (keywords win). ``None`` is sent as null."""
    out: Dict[str, Any] = dict(body or {})
    out.update(fields)
    return out


class Resource:
    """A group of API operations. The same class serves the sync and the async client: its methods
    return what the client's ``_call`` returns (a value, or a coroutine for AsyncEvalgate)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, QueryValue]] = None,
        json: Any = None,
        upload: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        idempotent: Optional[bool] = None,
        options: Optional[RequestOptions] = None,
        wrap: Optional[Callable[[Any], Any]] = None,
    ) -> Any:
        spec = RequestSpec(
            method=method,
            path=path,
            query=query,
            json=json,
            upload=upload,
            headers=dict(headers or {}),
            idempotent=idempotent,
            options=options,
        )
        return self._client._call(spec, wrap)

    def _list(
        self,
        path: str,
        query: Mapping[str, QueryValue],
        options: Optional[RequestOptions],
        wrap: Optional[Callable[[Any], Any]] = None,
        evaluator_names: bool = False,
    ) -> Any:
        return self._client._list(path, dict(query), options, wrap, evaluator_names)
