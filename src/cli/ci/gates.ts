import type { Run, RunComparison } from '../../client/index.js';
import { studentTQuantile } from '../../runs/statistics.js';
import { type ResultRow, resultRows } from '../run-results.js';
import type { GateRules } from './experiment-schema.js';

/**
 * The gate rules of an experiment applied to its run and to the paired comparison with its baseline
 * (`GET /v1/evaluation/runs/{id}/compare`, the same comparison as `evalgate runs compare`): one outcome
 * per evaluator × launch, each rule passed, failed or skipped (a drop rule without a baseline).
 */

type Comparison = RunComparison['comparisons'][number];

export type RuleStatus = 'passed' | 'failed' | 'skipped';

export interface RuleOutcome {
  /** The rule as written: `min`, `max_drop`, `drop_at_confidence`, `max_error_rate`, `max_missing_rate`. */
  rule: string;
  status: RuleStatus;
  text: string;
}

export interface Figures {
  avg_score: number | null;
  accuracy: number | null;
}

export interface EvaluatorOutcome {
  evaluator: string;
  evaluator_id: string;
  launch: number;
  model: string | null;
  candidate: Figures & { total: number; errors: number; missing: number };
  baseline: Figures | null;
  /** The paired mean score difference (candidate − baseline) and its interval. */
  delta: {
    mean: number | null;
    interval: { level: number; lower: number; upper: number } | null;
    matched: number;
    verdict: Comparison['verdict'];
    pass_rate_change: number | null;
  } | null;
  rules: RuleOutcome[];
  passed: boolean;
}

/** A gate that cannot be applied (an evaluator the run has no results for): the job could not run. */
export class GateSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GateSetupError';
  }
}

const num = (v: number | null, digits = 3): string => (v === null ? 'n/a' : v.toFixed(digits));
const signedNum = (v: number | null): string => (v === null ? 'n/a' : `${v >= 0 ? '+' : ''}${v.toFixed(3)}`);

/** The paired interval at `level`: the server's (95 %) as it is, another level from its mean and spread. */
export function intervalAt(
  c: Comparison,
  level: number,
): { level: number; lower: number; upper: number } | null {
  if (c.confidence_interval && Math.abs(c.confidence_interval.level - level) < 1e-9)
    return c.confidence_interval;
  if (c.mean_difference === null || c.stdev === null || c.matched < 2) return null;
  const half = studentTQuantile(1 - (1 - level) / 2, c.matched - 1) * (c.stdev / Math.sqrt(c.matched));
  return { level, lower: c.mean_difference - half, upper: c.mean_difference + half };
}

function rate(part: number, total: number): number | null {
  return total > 0 ? part / total : null;
}

function applyRules(row: ResultRow, rules: GateRules, c: Comparison | null, why: string): RuleOutcome[] {
  const out: RuleOutcome[] = [];
  const metric = rules.metric ?? 'avg_score';
  const value = metric === 'accuracy' ? row.accuracy : row.avgScore;
  if (rules.min !== undefined) {
    const passed = value !== null && value >= rules.min;
    out.push({
      rule: 'min',
      status: passed ? 'passed' : 'failed',
      text: `${metric} ${num(value)} ${passed ? '≥' : '<'} ${rules.min}`,
    });
  }
  if (rules.max_drop !== undefined) {
    const change = c === null ? null : metric === 'accuracy' ? c.pass_rate.change : c.mean_difference;
    if (change === null)
      out.push({ rule: 'max_drop', status: 'skipped', text: `${metric} drop not checked: ${why}` });
    else {
      const passed = change >= -rules.max_drop;
      out.push({
        rule: 'max_drop',
        status: passed ? 'passed' : 'failed',
        text: `${metric} change ${signedNum(change)} ${passed ? 'within' : 'beyond'} the allowed drop of ${rules.max_drop}`,
      });
    }
  }
  if (rules.drop_at_confidence !== undefined) {
    const level = rules.drop_at_confidence;
    const interval = c === null ? null : intervalAt(c, level);
    const pct = `${Number((level * 100).toFixed(2))} %`;
    if (interval === null) {
      const reason = c === null ? why : `fewer than 2 matched samples (${c.matched})`;
      out.push({
        rule: 'drop_at_confidence',
        status: 'skipped',
        text: `drop at ${pct} not tested: ${reason}`,
      });
    } else {
      const dropped = interval.upper < 0;
      const range = `[${signedNum(interval.lower)}, ${signedNum(interval.upper)}]`;
      out.push({
        rule: 'drop_at_confidence',
        status: dropped ? 'failed' : 'passed',
        text: dropped
          ? `score dropped at ${pct} confidence: the ${pct} interval ${range} lies below 0`
          : `no drop at ${pct} confidence: interval ${range}`,
      });
    }
  }
  const bound = (rule: string, count: number, max: number | undefined, what: string) => {
    if (max === undefined) return;
    const r = rate(count, row.total);
    const passed = r !== null && r <= max;
    out.push({
      rule,
      status: passed ? 'passed' : 'failed',
      text:
        r === null
          ? `${what} rate cannot be checked: no samples`
          : `${what} rate ${num(r)} (${count}/${row.total}) ${passed ? '≤' : '>'} ${max}`,
    });
  };
  bound('max_error_rate', row.errors, rules.max_error_rate, 'error');
  bound('max_missing_rate', row.missing, rules.max_missing_rate, 'missing');
  return out;
}

/**
 * Every evaluator × launch of the run with its figures, the baseline's, the paired difference and the
 * gates' outcomes. Throws GateSetupError for a gate on an evaluator the run has no results for.
 */
export function evaluateGates(
  run: Run,
  baseline: Run | null,
  comparison: RunComparison | null,
  gates: Record<string, GateRules>,
): EvaluatorOutcome[] {
  const rows = resultRows(run);
  for (const name of Object.keys(gates)) {
    if (!rows.some((r) => r.evaluator === name || r.evaluatorId === name)) {
      const has = [...new Set(rows.map((r) => r.evaluator))].join(', ') || 'none';
      throw new GateSetupError(
        `gate on evaluator '${name}': run ${run.id} has no results for it (its evaluators: ${has})`,
      );
    }
  }
  const baseRows = baseline ? resultRows(baseline) : [];
  return rows.map((row) => {
    const c =
      comparison?.comparisons.find(
        (x) => x.evaluator.id === row.evaluatorId && x.launch.index === row.launch,
      ) ?? null;
    const base = c
      ? baseRows.find((b) => b.evaluatorId === row.evaluatorId && b.launch === c.baseline_launch.index)
      : undefined;
    const why = baseline === null ? 'no baseline' : `the baseline has no results of ${row.evaluator} to pair`;
    const rules = gates[row.evaluator] ?? gates[row.evaluatorId];
    const outcomes = rules ? applyRules(row, rules, c, why) : [];
    return {
      evaluator: row.evaluator,
      evaluator_id: row.evaluatorId,
      launch: row.launch,
      model: row.model,
      candidate: {
        avg_score: row.avgScore,
        accuracy: row.accuracy,
        total: row.total,
        errors: row.errors,
        missing: row.missing,
      },
      baseline: base ? { avg_score: base.avgScore, accuracy: base.accuracy } : null,
      delta: c
        ? {
            mean: c.mean_difference,
            interval: c.confidence_interval,
            matched: c.matched,
            verdict: c.verdict,
            pass_rate_change: c.pass_rate.change,
          }
        : null,
      rules: outcomes,
      passed: outcomes.every((o) => o.status !== 'failed'),
    };
  });
}
