import fs from 'node:fs';
import { isTerminal, type Run } from '../client/index.js';
import { CliExit, usage } from './client-context.js';
import { markdownSummary, resultRows } from './run-results.js';

/**
 * CI gating: `--fail-under accuracy=0.8`, `--fail-under avg_score=0.7`, or per evaluator
 * `--fail-under helpfulness.accuracy=0.8` (repeatable). A gate without an evaluator applies to every
 * evaluator of every launch; one with an evaluator (name or id) to that evaluator in every launch.
 * Exit codes: 0 every figure meets its gate, 1 one is below (or missing), 2 the run ended error/cancelled.
 */

export const METRICS = ['accuracy', 'avg_score'] as const;
export type Metric = (typeof METRICS)[number];

export interface Gate {
  evaluator: string | null;
  metric: Metric;
  threshold: number;
  text: string;
}

export interface GateResult {
  passed: boolean;
  text: string;
}

export function parseGates(specs: string[]): Gate[] {
  return specs.map((spec) => {
    const at = spec.lastIndexOf('=');
    const target = at > 0 ? spec.slice(0, at) : '';
    const raw = at > 0 ? spec.slice(at + 1).trim() : '';
    const threshold = Number(raw);
    const metric = METRICS.find((m) => target === m || target.endsWith(`.${m}`));
    if (!metric || raw === '' || !Number.isFinite(threshold)) {
      throw usage(
        `--fail-under takes [EVALUATOR.]accuracy=NUMBER or [EVALUATOR.]avg_score=NUMBER, got "${spec}"`,
      );
    }
    // accuracy is a ratio: 80 (or 80%) would gate nothing but a perfect run, silently.
    if (metric === 'accuracy' && (raw.endsWith('%') || threshold > 1 || threshold < 0)) {
      const hint = Number(raw.replace(/%$/, '')) / 100;
      throw usage(
        `--fail-under: accuracy is a ratio from 0 to 1, got "${raw}"` +
          (Number.isFinite(hint) && hint >= 0 && hint <= 1 ? ` (did you mean ${target}=${hint}?)` : ''),
      );
    }
    const evaluator = target === metric ? null : target.slice(0, -(metric.length + 1));
    if (evaluator === '')
      throw usage(`--fail-under: an evaluator name is missing before ".${metric}" in "${spec}"`);
    return { evaluator, metric, threshold, text: raw };
  });
}

/** Every figure each gate covers, checked. */
export function checkGates(run: Run, gates: Gate[]): GateResult[] {
  const rows = resultRows(run);
  const results: GateResult[] = [];
  for (const gate of gates) {
    const covered = rows.filter(
      (r) => gate.evaluator === null || r.evaluator === gate.evaluator || r.evaluatorId === gate.evaluator,
    );
    if (covered.length === 0) {
      const what = gate.evaluator === null ? 'no results' : `no results for evaluator '${gate.evaluator}'`;
      results.push({ passed: false, text: `${gate.metric} cannot be checked: run ${run.id} has ${what}` });
      continue;
    }
    for (const r of covered) {
      const value = gate.metric === 'accuracy' ? r.accuracy : r.avgScore;
      const where = `(launch ${r.launch}${r.model ? `, model ${r.model}` : ''})`;
      const shown = value === null ? 'n/a' : String(Number(value.toFixed(4)));
      const passed = value !== null && value >= gate.threshold;
      results.push({
        passed,
        text: `${r.evaluator} ${gate.metric} ${shown} ${passed ? '≥' : '<'} ${gate.text} ${where}`,
      });
    }
  }
  return results;
}

export type SummaryTarget = { to: 'stdout' } | { to: 'file'; path: string; append: boolean };

/**
 * `--summary markdown` (stdout, or appended to $GITHUB_STEP_SUMMARY when that is set) or
 * `--summary markdown=PATH` (written to PATH).
 */
export function summaryTarget(spec: string | undefined, json: boolean): SummaryTarget | null {
  if (spec === undefined) return null;
  const [format, ...rest] = spec.split('=');
  if (format !== 'markdown') throw usage(`--summary takes markdown or markdown=PATH, got "${spec}"`);
  const path = rest.join('=');
  if (path) return { to: 'file', path, append: false };
  const step = process.env.GITHUB_STEP_SUMMARY;
  if (step) return { to: 'file', path: step, append: true };
  if (json)
    throw usage('--summary markdown would mix with --json on stdout: give a file, --summary markdown=PATH');
  return { to: 'stdout' };
}

function writeSummary(target: SummaryTarget, text: string): void {
  if (target.to === 'stdout') process.stdout.write(`\n${text}`);
  else if (target.append) fs.appendFileSync(target.path, `${text}\n`);
  else fs.writeFileSync(target.path, text);
}

/**
 * What follows a run's result in CI: the markdown summary when asked, then the exit code — 2 for a run
 * that ended in error or was cancelled, 1 for a figure under its gate (the first on one line, and how
 * many more), nothing (0) otherwise. Throws CliExit for the non-zero codes.
 */
export function finishRun(
  run: Run,
  options: { gates: Gate[]; summary: SummaryTarget | null; requireEnd: boolean },
): void {
  const ended = isTerminal(run.status);
  const results = run.status === 'completed' ? checkGates(run, options.gates) : [];
  if (options.summary) writeSummary(options.summary, markdownSummary(run, results));
  // A plain `runs get` is a read: it succeeds whatever the run's state.
  if (!options.requireEnd && options.gates.length === 0) return;
  if (run.status === 'error' || run.status === 'cancelled') {
    const reason = run.error ? `: ${run.error.code}: ${run.error.message}` : '';
    throw new CliExit(2, [`run ${run.id} ended ${run.status}${reason}`]);
  }
  if (!ended) {
    throw new CliExit(1, [`run ${run.id} is ${run.status}: its results cannot be checked yet`]);
  }
  const failed = results.filter((r) => !r.passed);
  if (failed.length > 0) {
    const more = failed.length > 1 ? ` (and ${failed.length - 1} more below their thresholds)` : '';
    throw new CliExit(1, [`${failed[0]!.text}${more}`]);
  }
}
