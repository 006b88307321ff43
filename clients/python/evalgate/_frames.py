"""pandas conversions (pandas is optional: ``pip install evalgate[pandas]``)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List


def pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("to_pandas() needs pandas: pip install 'evalgate[pandas]'") from None
    return pd


def records_frame(items: Iterable[Any]) -> Any:
    """One row per item, nested objects kept as they are (``pd.json_normalize`` them if you like)."""
    pd = pandas()
    return pd.DataFrame.from_records([dict(i) for i in items])


def results_rows(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A run's ``results``: one row per launch (model) and evaluator."""
    rows = []
    for entry in results.get("per_model") or []:
        model = entry.get("model") or {}
        slug = model.get("slug") or model.get("id") or model.get("label") if isinstance(model, dict) else None
        for evaluator_id, stats in (entry.get("per_eval") or {}).items():
            row: Dict[str, Any] = {
                "launch_index": entry.get("launch_index"),
                "model": slug,
                "evaluator_id": evaluator_id,
            }
            row.update(stats or {})
            rows.append(row)
    return rows


def comparison_rows(comparison: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A comparison: one row per evaluator and launch."""
    rows = []
    for c in comparison.get("comparisons") or []:
        ci = c.get("confidence_interval")
        pass_rate = c.get("pass_rate") or {}
        rows.append(
            {
                "evaluator_id": c["evaluator"]["id"],
                "evaluator": c["evaluator"]["name"],
                "launch_index": c["launch"]["index"],
                "model": c["launch"].get("model"),
                "matched": c.get("matched"),
                "unmatched": c.get("unmatched"),
                "mean_difference": c.get("mean_difference"),
                "stdev": c.get("stdev"),
                "ci_lower": ci.get("lower") if isinstance(ci, dict) else None,
                "ci_upper": ci.get("upper") if isinstance(ci, dict) else None,
                "verdict": c.get("verdict"),
                "wins": c.get("wins"),
                "ties": c.get("ties"),
                "losses": c.get("losses"),
                "pass_rate": pass_rate.get("run"),
                "baseline_pass_rate": pass_rate.get("baseline"),
                "pass_rate_change": pass_rate.get("change"),
                "regressions": len(c.get("regressions") or []),
            }
        )
    return rows
