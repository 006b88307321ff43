from __future__ import annotations

import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .._errors import APIConnectionError, APIError
from ..prompt_template import render_messages
from ..types import Prompt, PromptDiff, PromptLabel, PromptVersion
from ._base import RequestOptions, Resource, merge_body, operation, seg

__all__ = ["Prompts", "AsyncPrompts", "FetchedPrompt", "PROMPT_COMPILED_HEADER"]

#: The header that tells the gateway a request's messages were compiled from a stored version.
PROMPT_COMPILED_HEADER = "X-Evalgate-Prompt-Compiled"


class FetchedPrompt:
    """A prompt version fetched for local use: ``compile(variables)`` renders its messages as the server
    does (typed variables checked); ``headers`` go with a gateway call made with the compiled messages,
    so that its task log names this version. ``stale`` is true when the server could not be reached and
    this is the last version fetched."""

    def __init__(self, prompt: Mapping[str, Any], stale: bool = False) -> None:
        self.prompt = prompt
        self.stale = stale

    @property
    def id(self) -> str:
        return str(self.prompt["id"])

    @property
    def name(self) -> str:
        return str(self.prompt["name"])

    @property
    def version(self) -> int:
        return int(self.prompt["version"]["version"])

    @property
    def model(self) -> Optional[str]:
        return self.prompt["version"].get("model")

    @property
    def parameters(self) -> Dict[str, Any]:
        return dict(self.prompt["version"].get("parameters") or {})

    def compile(self, variables: Optional[Mapping[str, Any]] = None) -> List[Dict[str, Any]]:
        """The messages rendered at ``variables``; raises ``PromptVariableError`` for a missing or
        mistyped one."""
        version = self.prompt["version"]
        return render_messages(version["messages"], version.get("variables") or {}, dict(variables or {}))

    @property
    def headers(self) -> Dict[str, str]:
        """``X-Evalgate-Prompt-Compiled: <id>@<version>`` for the gateway call made with the compiled messages."""
        return {PROMPT_COMPILED_HEADER: f"{self.id}@{self.version}"}


def _unreachable(err: Exception) -> bool:
    # No connection, or a proxy in front answering that the server is down.
    return isinstance(err, APIConnectionError) or (isinstance(err, APIError) and err.status >= 502)


class Prompts(Resource):
    """``/v1/prompts``: versioned prompts, their labels, diffs and rollbacks, and ``get_prompt``, a
    cached fetch for applications that call their model provider directly."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self._cache: Dict[Tuple[str, str, str], Tuple[Mapping[str, Any], float]] = {}

    @operation("GET", "/v1/prompts")
    def list(
        self,
        *,
        name: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first; ``name`` keeps names containing it. Iterating fetches every page."""
        return self._list("/v1/prompts", {"name": name, "limit": limit, "offset": offset}, request_options)

    @operation("POST", "/v1/prompts")
    def create(
        self,
        body: Optional[Mapping[str, Any]] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> Prompt:
        """A prompt with its first version: ``name``, ``messages`` and optionally ``variables`` (name →
        ``string``/``number``/``boolean``/``json``), ``model``, ``parameters``, ``tools``,
        ``response_format``, ``commit_message``, ``labels``."""
        return self._call("POST", "/v1/prompts", json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/prompts/{prompt}")
    def get(
        self,
        prompt: str,
        *,
        label: Optional[str] = None,
        version: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Prompt:
        """By id or name, at a label or a version (default: the latest)."""
        query = {"label": label, "version": version}
        return self._call("GET", f"/v1/prompts/{seg(prompt)}", query=query, options=request_options)

    @operation("POST", "/v1/prompts/{prompt}/versions")
    def create_version(
        self,
        prompt: str,
        body: Optional[Mapping[str, Any]] = None,
        *,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> PromptVersion:
        """The next version (versions are immutable); ``labels`` move to it."""
        path = f"/v1/prompts/{seg(prompt)}/versions"
        return self._call("POST", path, json=merge_body(body, fields), options=request_options)

    @operation("GET", "/v1/prompts/{prompt}/versions")
    def list_versions(
        self,
        prompt: str,
        *,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first; iterating fetches every page."""
        query = {"limit": limit, "offset": offset}
        return self._list(f"/v1/prompts/{seg(prompt)}/versions", query, request_options)

    @operation("GET", "/v1/prompts/{prompt}/versions/{version}")
    def get_version(
        self, prompt: str, version: int, *, request_options: Optional[RequestOptions] = None
    ) -> PromptVersion:
        return self._call("GET", f"/v1/prompts/{seg(prompt)}/versions/{int(version)}", options=request_options)

    @operation("GET", "/v1/prompts/{prompt}/diff")
    def diff(
        self, prompt: str, from_version: int, to_version: int, *, request_options: Optional[RequestOptions] = None
    ) -> PromptDiff:
        """What changed between two versions: messages (unified diffs), model, parameters, variables."""
        query = {"from": from_version, "to": to_version}
        return self._call("GET", f"/v1/prompts/{seg(prompt)}/diff", query=query, options=request_options)

    @operation("GET", "/v1/prompts/{prompt}/labels")
    def labels(self, prompt: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        """The labels (``latest`` aside) and each one's moves, newest first."""
        return self._call("GET", f"/v1/prompts/{seg(prompt)}/labels", options=request_options)

    @operation("PUT", "/v1/prompts/{prompt}/labels/{label}")
    def move_label(
        self, prompt: str, label: str, version: int, *, request_options: Optional[RequestOptions] = None
    ) -> PromptLabel:
        path = f"/v1/prompts/{seg(prompt)}/labels/{seg(label)}"
        return self._call("PUT", path, json={"version": version}, options=request_options)

    @operation("POST", "/v1/prompts/{prompt}/labels/{label}/rollback")
    def rollback_label(self, prompt: str, label: str, *, request_options: Optional[RequestOptions] = None) -> PromptLabel:
        """Moves the label back to the version its latest move took it from."""
        path = f"/v1/prompts/{seg(prompt)}/labels/{seg(label)}/rollback"
        return self._call("POST", path, options=request_options)

    @operation("DELETE", "/v1/prompts/{prompt}/labels/{label}")
    def delete_label(self, prompt: str, label: str, *, request_options: Optional[RequestOptions] = None) -> Any:
        return self._call("DELETE", f"/v1/prompts/{seg(prompt)}/labels/{seg(label)}", options=request_options)

    def _cached(self, key: Tuple[str, str, str], ttl: float) -> Optional[Mapping[str, Any]]:
        hit = self._cache.get(key)
        return hit[0] if hit and time.monotonic() - hit[1] < ttl else None

    def get_prompt(
        self, name: str, *, label: Optional[str] = None, version: Optional[int] = None, ttl: float = 60.0
    ) -> FetchedPrompt:
        """A prompt for local use, cached for ``ttl`` seconds. When the server cannot be reached the last
        version fetched is answered (``stale=True``); other errors (404, 403) are raised."""
        key = (name, label or "", str(version or ""))
        fresh = self._cached(key, ttl)
        if fresh is not None:
            return FetchedPrompt(fresh)
        try:
            prompt = self.get(name, label=label, version=version)
        except (APIConnectionError, APIError) as err:
            hit = self._cache.get(key)
            if hit and _unreachable(err):
                return FetchedPrompt(hit[0], stale=True)
            raise
        self._cache[key] = (prompt, time.monotonic())
        return FetchedPrompt(prompt)

    def clear_cache(self) -> None:
        self._cache.clear()


class AsyncPrompts(Prompts):
    """``Prompts`` of ``AsyncEvalgate``: ``get_prompt`` is awaited."""

    async def get_prompt(  # type: ignore[override]
        self, name: str, *, label: Optional[str] = None, version: Optional[int] = None, ttl: float = 60.0
    ) -> FetchedPrompt:
        key = (name, label or "", str(version or ""))
        fresh = self._cached(key, ttl)
        if fresh is not None:
            return FetchedPrompt(fresh)
        try:
            prompt = await self.get(name, label=label, version=version)  # type: ignore[misc]
        except (APIConnectionError, APIError) as err:
            hit = self._cache.get(key)
            if hit and _unreachable(err):
                return FetchedPrompt(hit[0], stale=True)
            raise
        self._cache[key] = (prompt, time.monotonic())
        return FetchedPrompt(prompt)
