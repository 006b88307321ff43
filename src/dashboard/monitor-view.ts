/**
 * What the dashboard shows of a monitor beyond the API's object: its container by label, and per
 * evaluator what was stored (scored, errors, missing) with, when it has scored nothing, the reason why
 * (the sandbox cannot run code here, no call selected yet, calls waiting, nothing to score).
 */
import type { Kysely } from 'kysely';
import { labelsOf } from '../catalog/containers/repository.js';
import type { Database } from '../db/schema.js';
import type { ScorerRegistry } from '../engine/scorers/registry.js';
import { typesOf } from '../evaluators/repository.js';
import { evaluatorNames } from '../monitors/results.js';
import type { Monitor } from '../monitors/schemas.js';
import { type EvaluatorTally, tallyByEvaluator } from '../runs/service.js';

export interface MonitorEvaluatorState {
  evaluator: string;
  name: string;
  /** judge, code or a grader type; null once the evaluator was deleted. */
  type: string | null;
  num_scored: number;
  num_errors: number;
  num_missing: number;
  /** Why nothing was scored or failed; null when something was. */
  why: string | null;
}

export type DashboardMonitor = Monitor & { container_label: string | null };
export type DashboardMonitorDetail = DashboardMonitor & { evaluator_states: MonitorEvaluatorState[] };

/** Whether code evaluators can run where this server's runs execute, and if not why. */
export type SandboxProbe = () => Promise<{ available: boolean; reason?: string }>;

/** The monitors with their containers' labels (one query for the page). */
export async function withContainerLabels(
  db: Kysely<Database>,
  monitors: Monitor[],
): Promise<DashboardMonitor[]> {
  const labels = await labelsOf(db, [...new Set(monitors.map((m) => m.container))]);
  return monitors.map((m) => ({ ...m, container_label: labels.get(m.container) ?? null }));
}

/** The line of a scorer's message that says what happened (a traceback's last), without the position note. */
function lastLine(message: string): string {
  const lines = message
    .split('\n')
    .map((l) => l.replace(/\s*\(this position has no ground_truth\)$/, '').trim())
    .filter(Boolean);
  return lines.at(-1) ?? message;
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** Whether an evaluator of this type runs code in the sandbox (the scorer registry says). */
const runsCode = (scorerKinds: ScorerRegistry, type: string | null) =>
  type !== null && scorerKinds.capabilitiesOf({ type }).sandbox;

function whyNothing(
  m: Monitor,
  type: string | null,
  c: EvaluatorTally,
  sandbox: { available: boolean; reason?: string } | null,
  code: boolean,
): string | null {
  if (c.scored > 0 || c.errors > 0) return null;
  if (code && sandbox && !sandbox.available) {
    return `Code evaluators cannot run on this server: ${sandbox.reason ?? 'no sandbox'}.`;
  }
  if (m.selected === 0) {
    return m.enabled
      ? 'No call selected yet: none of the container’s calls since the monitor started matched its filter and sampling rate.'
      : 'Paused before any call was selected.';
  }
  if (c.missing > 0) {
    const lead = `${plural(c.missing, 'selected call')} gave this evaluator nothing to score (missing)`;
    if (type === 'code') {
      return (
        `${lead}: a monitor’s calls have no ground truth, so evaluate() receives ground_truth=None` +
        `${c.missingMessage ? ` (${lastLine(c.missingMessage)})` : ''}.`
      );
    }
    return `${lead}: the call has no output, or the evaluator needs an expected answer a live call lacks.`;
  }
  if (m.lag_seconds > 0) {
    return `${plural(m.selected, 'selected call')}, waiting to be scored (the oldest for ${m.lag_seconds.toFixed(0)} s).`;
  }
  return null;
}

/** A monitor's page: the API's object, its container's label and the state of each evaluator. */
export async function monitorDetail(
  db: Kysely<Database>,
  monitor: Monitor,
  runId: string,
  sandbox: SandboxProbe,
  scorerKinds: ScorerRegistry,
): Promise<DashboardMonitorDetail> {
  const [[labelled], names, counts, typeOf] = await Promise.all([
    withContainerLabels(db, [monitor]),
    evaluatorNames(db, runId),
    tallyByEvaluator(db, runId),
    typesOf(db, monitor.evaluators),
  ]);
  const needsSandbox = monitor.evaluators.some((id) => runsCode(scorerKinds, typeOf.get(id) ?? null));
  const status = needsSandbox ? await sandbox() : null;
  const evaluator_states = monitor.evaluators.map((id): MonitorEvaluatorState => {
    const c = counts.get(id) ?? { scored: 0, errors: 0, missing: 0, missingMessage: null };
    const type = typeOf.get(id) ?? null;
    return {
      evaluator: id,
      name: names.get(id) ?? id,
      type,
      num_scored: c.scored,
      num_errors: c.errors,
      num_missing: c.missing,
      why: whyNothing(monitor, type, c, status, runsCode(scorerKinds, type)),
    };
  });
  return { ...(labelled as DashboardMonitor), evaluator_states };
}
