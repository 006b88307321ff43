"""Response objects with notebook comforts: runs that wait and render, results and comparisons as frames.

They are plain ``dict`` subclasses, so they compare, serialise and print as the JSON the server sent
(their keys are those of the typed models in ``evalgate.types``).
"""

from __future__ import annotations

import html
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from ._frames import comparison_rows, pandas, results_rows

if TYPE_CHECKING:  # pragma: no cover
    pass

TERMINAL_STATUSES = ("completed", "error", "cancelled")


def is_terminal(status: Optional[str]) -> bool:
    return status in TERMINAL_STATUSES


class RunResults(Dict[str, Any]):
    """A run's ``results``: ``overall``, ``per_model`` (per launch, per evaluator id) and more."""

    def rows(self) -> list:
        """One dict per launch (model) and evaluator: accuracy, avg_score, num_passed, num_failed, …"""
        return results_rows(self)

    def to_pandas(self) -> Any:
        """One row per launch (model) and evaluator."""
        return pandas().DataFrame.from_records(self.rows())


class RunComparison(Dict[str, Any]):
    """``runs.compare()``: paired differences against a baseline, per evaluator and launch."""

    def to_pandas(self) -> Any:
        """One row per evaluator and launch: mean difference, its interval, verdict, pass rates."""
        return pandas().DataFrame.from_records(comparison_rows(self))


class MonitorResults(Dict[str, Any]):
    """``monitors.results()``: per-evaluator ``totals`` and ``buckets`` (``start`` and ``evaluators``)."""

    def rows(self) -> List[Dict[str, Any]]:
        """One dict per bucket and evaluator: start, evaluator, num_scored, num_passed, avg_score, …"""
        return [
            {"start": bucket.get("start"), **stats}
            for bucket in self.get("buckets") or []
            for stats in bucket.get("evaluators") or []
        ]

    def to_pandas(self) -> Any:
        """One row per bucket and evaluator (``start`` parsed as a UTC timestamp)."""
        pd = pandas()
        frame = pd.DataFrame.from_records(self.rows())
        if "start" in frame:
            frame["start"] = pd.to_datetime(frame["start"], utc=True)
        return frame


_AGREEMENT_FIGURES = ("percent_agreement", "kappa", "weighted_kappa", "pearson", "spearman", "mae")


def _agreement_rows(agreement: Dict[str, Any], compared: bool) -> List[Dict[str, Any]]:
    evaluator = agreement.get("evaluator") or {}
    rows = []
    for group in agreement.get("groups") or []:
        row: Dict[str, Any] = {
            "evaluator_id": evaluator.get("id"),
            "evaluator": evaluator.get("name"),
            "compared": compared,
            "prompt_hash": group.get("prompt_hash"),
            "n": group.get("n"),
        }
        intervals = group.get("intervals") or {}
        for name in _AGREEMENT_FIGURES:
            row[name] = group.get(name)
            interval = intervals.get(name) or [None, None]
            row[f"{name}_low"], row[f"{name}_high"] = interval[0], interval[1]
        rows.append(row)
    return rows


class Agreement(Dict[str, Any]):
    """Judge–human agreement: an evaluator's (``review.agreement()``, with the ``compare`` evaluator's
    beside it when asked) or a queue's rubric evaluators' (``annotation_queues.agreement()``)."""

    def rows(self) -> List[Dict[str, Any]]:
        """One dict per evaluator and judge prompt (hash): n, percent agreement, κ, weighted κ, Pearson,
        Spearman, MAE, and each figure's 95 % interval as ``<figure>_low`` / ``<figure>_high``."""
        if "evaluators" in self:
            return [r for a in self.get("evaluators") or [] for r in _agreement_rows(a, False)]
        rows = _agreement_rows(self, False)
        if self.get("compare"):
            rows += _agreement_rows(self["compare"], True)
        return rows

    def to_pandas(self) -> Any:
        """One row per evaluator and judge prompt (hash), the figures and their intervals as columns."""
        return pandas().DataFrame.from_records(self.rows())


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape("—" if value is None else str(value))


class Run(Dict[str, Any]):
    """An evaluation run (the JSON of ``GET /v1/evaluation/runs/{id}``), with ``wait()`` and a summary
    when displayed in Jupyter. ``results`` is a :class:`RunResults`."""

    _runs: Any = None

    @classmethod
    def of(cls, body: Dict[str, Any], runs: Any) -> Run:
        run = cls(body)
        if isinstance(run.get("results"), dict):
            run["results"] = RunResults(run["results"])
        run._runs = runs
        return run

    @property
    def id(self) -> str:
        return self["id"]

    @property
    def status(self) -> str:
        return self["status"]

    @property
    def results(self) -> Optional[RunResults]:
        return self.get("results")

    def is_terminal(self) -> bool:
        return is_terminal(self.get("status"))

    def wait(
        self,
        *,
        timeout: Optional[float] = None,
        progress: bool = True,
        on_progress: Optional[Callable[[Dict[str, Any]], None]] = None,
        on_status: Optional[Callable[[str], None]] = None,
    ) -> Any:
        """Waits until the run has ended (a tqdm bar when tqdm is installed, a plain line otherwise) and
        returns it afresh; with AsyncEvalgate, a coroutine to await. Check ``status``: an ``error`` run
        does not raise. ``on_progress({done, total})`` and ``on_status(status)`` follow its events."""
        return self._runs.wait(
            self["id"], timeout=timeout, progress=progress, on_progress=on_progress, on_status=on_status
        )

    def _repr_html_(self) -> str:
        rows = [
            ("run", self.get("id")),
            ("status", self.get("status")),
            ("container", self.get("container")),
            ("evaluators", ", ".join(self.get("evaluators") or [])),
            ("created", self.get("created_at")),
            ("finished", self.get("finished_at")),
            ("spend (USD)", self.get("spend")),
        ]
        error = self.get("error")
        if error:
            rows.append(("error", f"{error.get('code')}: {error.get('message')}"))
        head = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{_cell(v)}</td></tr>" for k, v in rows)
        out = f"<table class='evalgate-run'>{head}</table>"
        results = self.get("results")
        if isinstance(results, dict):
            lines = results_rows(results)
            cols = [
                "model",
                "evaluator_id",
                "accuracy",
                "avg_score",
                "num_passed",
                "num_failed",
                "num_errors",
                "num_total",
            ]
            header = "".join(f"<th>{c}</th>" for c in cols)
            body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in cols) + "</tr>" for r in lines)
            out += f"<table class='evalgate-results'><tr>{header}</tr>{body}</table>"
        return out

    def __repr__(self) -> str:
        return f"Run(id={self.get('id')!r}, status={self.get('status')!r})"


class Progress:
    """A run's progress: a tqdm bar when tqdm is installed and enabled, a plain line otherwise."""

    def __init__(self, run_id: str, enabled: bool) -> None:
        self.enabled = enabled
        self.run_id = run_id
        self.bar: Any = None
        self.status: Optional[str] = None
        self.done = 0
        self.total: Optional[int] = None
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=None, desc=run_id, unit="pos", leave=True)

    def on_status(self, status: str) -> None:
        self.status = status
        self._show()

    def on_progress(self, done: int, total: Optional[int]) -> None:
        self.done, self.total = done, total
        self._show()

    def _show(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            if self.total is not None and self.bar.total != self.total:
                self.bar.total = self.total
            self.bar.n = self.done
            self.bar.set_postfix_str(self.status or "", refresh=False)
            self.bar.refresh()
            return
        total = "?" if self.total is None else self.total
        sys.stderr.write(f"\r{self.run_id}: {self.status or '…'} {self.done}/{total}")
        sys.stderr.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        else:
            sys.stderr.write("\n")
            sys.stderr.flush()
