from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Literal, Optional

import httpx

from .._errors import APIConnectionError, APIConnectionTimeoutError, EvalgateError, WaitTimeoutError, is_recoverable
from .._http import RequestSpec, backoff
from .._objects import Progress, Run, RunComparison, is_terminal
from .._sse import aparse_events, parse_events
from ..types import CreateRun, DataSource, RunEvent
from ._base import RequestOptions, Resource, merge_body, operation, seg

ProgressHook = Callable[[Dict[str, Any]], None]
StatusHook = Callable[[str], None]


class Runs(Resource):
    """``/v1/evaluation/runs``: launch evaluation runs, follow them, read their results."""

    def _run(self, body: Any) -> Run:
        return Run.of(body, self)

    @operation("GET", "/v1/evaluation/runs")
    def list(
        self,
        *,
        container: Optional[str] = None,
        status: Optional[str] = None,
        name: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Newest first, optionally of one container, status or name; items are :class:`Run` objects."""
        query = {"container": container, "status": status, "name": name, "limit": limit, "offset": offset}
        return self._list("/v1/evaluation/runs", query, request_options, self._run)

    @operation("POST", "/v1/evaluation/runs")
    def create(
        self,
        body: Optional[CreateRun] = None,
        *,
        container: Optional[str] = None,
        evaluators: Optional[List[str]] = None,
        sample: Optional[DataSource] = None,
        ground_truth: Optional[DataSource] = None,
        baseline: Optional[DataSource] = None,
        generate: Optional[List[str]] = None,
        idempotency_key: Optional[str] = None,
        request_options: Optional[RequestOptions] = None,
        **fields: Any,
    ) -> Run:
        """Launches a run. It is sent with an ``Idempotency-Key`` (yours, or one generated per call) that
        every retry reuses, so a retry after a lost response never launches a second run.

        ``generate=["model", …]`` is short for ``sample={"type": "generate", "models": [...]}``: fresh
        completions of each model (one launch each) for the inputs of ``ground_truth``."""
        if generate is not None:
            if sample is not None or (body or {}).get("sample") is not None:
                raise TypeError("runs.create() takes sample= or generate=, not both")
            if isinstance(generate, str):
                generate = [generate]
            sample = {"type": "generate", "models": list(generate)}
        given = {
            "container": container,
            "evaluators": evaluators,
            "sample": sample,
            "ground_truth": ground_truth,
            "baseline": baseline,
        }
        payload = merge_body(body, {**{k: v for k, v in given.items() if v is not None}, **fields})
        return self._call(
            "POST",
            "/v1/evaluation/runs",
            json=payload,
            headers={"idempotency-key": idempotency_key or str(uuid.uuid4())},
            idempotent=True,
            options=request_options,
            wrap=self._run,
        )

    @operation("GET", "/v1/evaluation/runs/{run_id}")
    def get(self, run_id: str, *, request_options: Optional[RequestOptions] = None) -> Run:
        return self._call("GET", f"/v1/evaluation/runs/{seg(run_id)}", options=request_options, wrap=self._run)

    @operation("PATCH", "/v1/evaluation/runs/{run_id}")
    def update(self, run_id: str, *, name: Optional[str], request_options: Optional[RequestOptions] = None) -> Run:
        """Renames a run, whatever its status; ``name=None`` removes its name."""
        return self._call(
            "PATCH",
            f"/v1/evaluation/runs/{seg(run_id)}",
            json={"name": name},
            options=request_options,
            wrap=self._run,
        )

    @operation("POST", "/v1/evaluation/runs/{run_id}/cancel")
    def cancel(self, run_id: str, *, request_options: Optional[RequestOptions] = None) -> Run:
        """Stops a queued or running run (partial results are kept); a ConflictError once it has ended."""
        # Safe to send again: a second cancel changes nothing.
        return self._call(
            "POST",
            f"/v1/evaluation/runs/{seg(run_id)}/cancel",
            idempotent=True,
            options=request_options,
            wrap=self._run,
        )

    @operation("GET", "/v1/evaluation/runs/{run_id}/samples")
    def samples(
        self,
        run_id: str,
        *,
        launch: Optional[int] = None,
        evaluator: Optional[str] = None,
        passed: Optional[bool] = None,
        errored: Optional[bool] = None,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> Any:
        """Per-sample results (one per launch, evaluator and position); ``.to_pandas()`` on the page. Each
        row carries its evaluator's name (``evaluator``, None once deleted) beside ``evaluator_id``."""
        query = {
            "launch": launch,
            "evaluator": evaluator,
            "passed": passed,
            "errored": errored,
            "status": status,
            "limit": limit,
            "offset": offset,
        }
        return self._list(
            f"/v1/evaluation/runs/{seg(run_id)}/samples", query, request_options, evaluator_names=True
        )

    @operation("GET", "/v1/evaluation/runs/{run_id}/compare")
    def compare(
        self,
        run_id: str,
        *,
        baseline: Optional[str] = None,
        by: Optional[Literal["prompt_version", "model"]] = None,
        reference: Optional[str] = None,
        limit: Optional[int] = None,
        request_options: Optional[RequestOptions] = None,
    ) -> RunComparison:
        """Paired score differences against a baseline run, per evaluator and launch; or, with ``by``,
        between the run's own launches: each prompt version against a reference version on the same
        model (``prompt_version``), or each model against a reference model (``model``)."""
        return self._call(
            "GET",
            f"/v1/evaluation/runs/{seg(run_id)}/compare",
            query={"baseline": baseline, "by": by, "reference": reference, "limit": limit},
            options=request_options,
            wrap=RunComparison,
        )

    def _events_spec(
        self, run_id: str, read_timeout: Optional[float], options: Optional[RequestOptions]
    ) -> RequestSpec:
        return RequestSpec(
            method="GET",
            path=f"/v1/evaluation/runs/{seg(run_id)}/events",
            headers={"accept": "text/event-stream"},
            options=options,
            streaming=True,
            read_timeout=read_timeout,
        )

    @operation("GET", "/v1/evaluation/runs/{run_id}/events")
    def events(self, run_id: str, *, request_options: Optional[RequestOptions] = None) -> Iterator[RunEvent]:
        """The run's server-sent events (``status``, ``progress``, ``queue``) as they come, as
        ``{"event", "data"}`` dicts; the iteration ends after the terminal ``status`` event."""
        return self._events(run_id, None, request_options)

    stream = events

    def _events(self, run_id: str, read_timeout: Optional[float], options: Optional[RequestOptions]) -> Iterator[Any]:
        response = self._client._transport.stream(self._events_spec(run_id, read_timeout, options))
        try:
            for event in parse_events(response.iter_lines()):
                yield event
                if event["event"] == "status" and is_terminal((event["data"] or {}).get("status")):
                    return
        except httpx.TimeoutException:
            raise APIConnectionTimeoutError(f"No event of run {run_id} within {read_timeout} s") from None
        except httpx.HTTPError as err:
            raise APIConnectionError(f"The event stream of run {run_id} broke: {err}") from err
        finally:
            response.close()

    def wait(
        self,
        run_id: str,
        *,
        timeout: Optional[float] = None,
        progress: bool = False,
        on_progress: Optional[ProgressHook] = None,
        on_status: Optional[StatusHook] = None,
    ) -> Run:
        """Returns the run once it has ended (completed, error or cancelled: check ``status``). Follows the
        event stream, reconnecting after a broken connection; ``WaitTimeoutError`` after ``timeout`` s.
        ``progress=True`` shows a tqdm bar (a plain line without tqdm)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: List[Optional[str]] = [None]
        bar = Progress(run_id, progress)

        def remaining() -> Optional[float]:
            if deadline is None:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeoutError(run_id, last[0], timeout or 0)
            return left

        reconnects = 0
        try:
            while True:
                try:
                    for event in self._events(run_id, remaining(), None):
                        _dispatch(event, last, bar, on_progress, on_status)
                        remaining()
                except EvalgateError as err:
                    if isinstance(err, WaitTimeoutError) or not is_recoverable(err):
                        raise
                run = self.get(run_id)
                if run.is_terminal():
                    return run
                remaining()
                # The stream ended early (a restarted server, a proxy's idle timeout): follow it again.
                time.sleep(backoff(min(reconnects, 4)))
                reconnects += 1
        finally:
            bar.close()


def _dispatch(
    event: Dict[str, Any],
    last: List[Optional[str]],
    bar: Progress,
    on_progress: Optional[ProgressHook],
    on_status: Optional[StatusHook],
) -> None:
    data = event.get("data") or {}
    if event["event"] == "progress":
        bar.on_progress(data.get("done", 0), data.get("total"))
        if on_progress:
            on_progress(data)
    elif event["event"] == "status" and data.get("status") != last[0]:
        last[0] = data.get("status")
        bar.on_status(last[0] or "")
        if on_status:
            on_status(last[0] or "")


class AsyncRuns(Runs):
    """As :class:`Runs`, for AsyncEvalgate: ``events`` is an async iterator, ``wait`` a coroutine."""

    @operation("GET", "/v1/evaluation/runs/{run_id}/events")
    def events(self, run_id: str, *, request_options: Optional[RequestOptions] = None) -> AsyncIterator[RunEvent]:  # type: ignore[override]
        return self._aevents(run_id, None, request_options)

    stream = events  # type: ignore[assignment]

    async def _aevents(
        self, run_id: str, read_timeout: Optional[float], options: Optional[RequestOptions]
    ) -> AsyncIterator[Any]:
        response = await self._client._transport.stream(self._events_spec(run_id, read_timeout, options))
        try:
            async for event in aparse_events(response.aiter_lines()):
                yield event
                if event["event"] == "status" and is_terminal((event["data"] or {}).get("status")):
                    return
        except httpx.TimeoutException:
            raise APIConnectionTimeoutError(f"No event of run {run_id} within {read_timeout} s") from None
        except httpx.HTTPError as err:
            raise APIConnectionError(f"The event stream of run {run_id} broke: {err}") from err
        finally:
            await response.aclose()

    async def wait(  # type: ignore[override]
        self,
        run_id: str,
        *,
        timeout: Optional[float] = None,
        progress: bool = False,
        on_progress: Optional[ProgressHook] = None,
        on_status: Optional[StatusHook] = None,
    ) -> Run:
        deadline = None if timeout is None else time.monotonic() + timeout
        last: List[Optional[str]] = [None]
        bar = Progress(run_id, progress)

        def remaining() -> Optional[float]:
            if deadline is None:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeoutError(run_id, last[0], timeout or 0)
            return left

        reconnects = 0
        try:
            while True:
                try:
                    async for event in self._aevents(run_id, remaining(), None):
                        _dispatch(event, last, bar, on_progress, on_status)
                        remaining()
                except EvalgateError as err:
                    if isinstance(err, WaitTimeoutError) or not is_recoverable(err):
                        raise
                run = await self.get(run_id)  # type: ignore[misc]  # a coroutine with AsyncEvalgate
                if run.is_terminal():
                    return run
                remaining()
                await asyncio.sleep(backoff(min(reconnects, 4)))
                reconnects += 1
        finally:
            bar.close()
