"""Asserting a run's results in a test suite: ``assert_run(run, {"helpfulness.accuracy": 0.8})``."""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from ._objects import Run, is_terminal

Threshold = Union[float, int, Tuple[str, float]]

_OPS: Dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}


class RunAssertionError(AssertionError):
    """Some thresholds were missed; ``failures`` lists one line per miss."""

    def __init__(self, message: str, failures: List[str]) -> None:
        super().__init__(message)
        self.failures = failures


def _evaluator_ids(run: Mapping[str, Any], names: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """Evaluator name (or id) → id, from ``names`` or by asking the server the run came from."""
    ids = {i: i for i in run.get("evaluators") or []}
    if names:
        ids.update(names)
        return ids
    runs = getattr(run, "_runs", None)
    client = getattr(runs, "_client", None)
    if client is not None and not hasattr(client, "__aenter__"):
        for evaluator_id in run.get("evaluators") or []:
            ids[client.evaluators.get(evaluator_id)["name"]] = evaluator_id
    return ids


def assert_run(
    run: Mapping[str, Any],
    thresholds: Mapping[str, Threshold],
    *,
    evaluators: Optional[Mapping[str, str]] = None,
    wait: bool = True,
    timeout: Optional[float] = None,
) -> Run:
    """Asserts thresholds on a run's results, for every launch (model) of it, and returns the run.

    Keys are ``"<evaluator>.<metric>"``: an evaluator name or id and a field of its results
    (``accuracy``, ``avg_score``, ``num_passed``, ``num_failed``, ``num_errors``, …), or
    ``"overall.avg_score"`` / ``"overall.avg_accuracy"``. A number means at least that; a tuple such as
    ``("<=", 0)`` picks another comparison. A run that has not ended is waited for first (sync client),
    and a run that did not complete fails. Names are resolved through the run's client, or through
    ``evaluators={"name": "evl_…"}`` (needed with AsyncEvalgate)."""
    if wait and isinstance(run, Run) and not is_terminal(run.get("status")) and run._runs is not None:
        if hasattr(run._runs._client, "__aenter__"):
            raise TypeError("assert_run cannot wait for a run of AsyncEvalgate: await run.wait() first")
        run = run.wait(timeout=timeout, progress=False)
    run_id = run.get("id")
    if run.get("status") != "completed":
        error = run.get("error") or {}
        raise RunAssertionError(
            f"Run {run_id} is {run.get('status')}, not completed"
            + (f": {error.get('code')}: {error.get('message')}" if error else ""),
            [],
        )
    results = run.get("results") or {}
    ids = _evaluator_ids(run, evaluators)
    failures: List[str] = []
    checked = 0
    for key, threshold in thresholds.items():
        name, _, metric = key.rpartition(".")
        if not name or not metric:
            raise ValueError(f"Threshold keys are '<evaluator>.<metric>', got '{key}'")
        op_name, bound = threshold if isinstance(threshold, tuple) else (">=", threshold)
        compare = _OPS.get(op_name)
        if compare is None:
            raise ValueError(f"Unknown comparison '{op_name}' in {key}; use one of {', '.join(_OPS)}")
        if name == "overall":
            cells: List[Tuple[str, Any]] = [("overall", (results.get("overall") or {}).get(metric))]
        else:
            evaluator_id = ids.get(name)
            if evaluator_id is None:
                raise ValueError(f"Run {run_id} has no evaluator '{name}' (it has: {', '.join(sorted(ids))})")
            cells = []
            for entry in results.get("per_model") or []:
                model = entry.get("model") or {}
                label = model.get("slug") or model.get("id") if isinstance(model, dict) else None
                stats = (entry.get("per_eval") or {}).get(evaluator_id) or {}
                cells.append(
                    (f"launch {entry.get('launch_index')}" + (f" ({label})" if label else ""), stats.get(metric))
                )
        for where, value in cells:
            checked += 1
            if value is None or not compare(value, bound):
                shown = "missing" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)
                failures.append(f"  {key} = {shown} [{where}], needs {op_name} {bound}")
    if failures:
        raise RunAssertionError(
            f"Run {run_id} missed {len(failures)} of {checked} threshold checks:\n" + "\n".join(failures), failures
        )
    return run if isinstance(run, Run) else Run(run)
