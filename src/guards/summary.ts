import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import type { GuardVerdictCounts, GuardVerdictSummary, VerdictSummaryQuery } from './schemas.js';
import { toVerdict } from './service.js';

/*
 * What the guards did over a window: per check name, how many calls each verdict ended (counted by the
 * database, grouped), and the check's latest verdicts with the model of their call.
 */

const DAY_MS = 86_400_000;
/** The checks a summary names (those with the most verdicts); the rest are left out. */
export const SUMMARY_GUARDS = 100;
const COUNTED = ['blocked', 'flagged', 'redacted', 'error'] as const;
type Counted = (typeof COUNTED)[number];

interface Window {
  since: string;
  until: string;
}

/** The window as stored timestamps compare (UTC ISO strings), or 422 when it is empty or reversed. */
function windowOf(query: VerdictSummaryQuery, now = Date.now()): Window {
  const until = query.until === undefined ? now : Date.parse(query.until);
  const since = query.since === undefined ? until - DAY_MS : Date.parse(query.since);
  if (Number.isNaN(until) || Number.isNaN(since) || since >= until) {
    throw ApiError.validation([
      { loc: ['query', 'since'], msg: '`since` must be before `until`', type: 'value_error' },
    ]);
  }
  return { since: new Date(since).toISOString(), until: new Date(until).toISOString() };
}

async function countsBy(db: Kysely<Database>, projectId: string, w: Window) {
  const rows = await db
    .selectFrom('guard_verdicts')
    .select(['guard', 'verdict', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('project_id', '=', projectId)
    .where('created_at', '>=', w.since)
    .where('created_at', '<', w.until)
    .where('verdict', 'in', [...COUNTED])
    .groupBy(['guard', 'verdict'])
    .execute();
  const byGuard = new Map<string, Record<Counted, number>>();
  for (const r of rows) {
    const counts = byGuard.get(r.guard) ?? { blocked: 0, flagged: 0, redacted: 0, error: 0 };
    counts[r.verdict as Counted] = Number(r.n);
    byGuard.set(r.guard, counts);
  }
  return [...byGuard.entries()]
    .map(([guard, c]) => ({ guard, ...c, total: c.blocked + c.flagged + c.redacted + c.error }))
    .sort((a, b) => b.total - a.total || a.guard.localeCompare(b.guard))
    .slice(0, SUMMARY_GUARDS);
}

/** The check's latest verdicts in the window (its index: project, guard, time), with the call's model. */
async function examplesOf(db: Kysely<Database>, projectId: string, guard: string, w: Window, n: number) {
  if (n === 0) return [];
  const rows = await db
    .selectFrom('guard_verdicts as v')
    .leftJoin('task_logs as t', (j) =>
      j.onRef('t.id', '=', 'v.task_log_id').onRef('t.project_id', '=', 'v.project_id'),
    )
    .selectAll('v')
    .select('t.model')
    .where('v.project_id', '=', projectId)
    .where('v.guard', '=', guard)
    .where('v.created_at', '>=', w.since)
    .where('v.created_at', '<', w.until)
    .orderBy('v.created_at', 'desc')
    .orderBy('v.id', 'desc')
    .limit(n)
    .execute();
  return rows.map(({ model, ...row }) => ({ ...toVerdict(row), model: model ?? null }));
}

export async function verdictSummary(
  db: Kysely<Database>,
  projectId: string,
  query: VerdictSummaryQuery,
): Promise<GuardVerdictSummary> {
  const w = windowOf(query);
  const counts = await countsBy(db, projectId, w);
  const n = query.examples ?? 3;
  const guards: GuardVerdictCounts[] = [];
  for (const c of counts) guards.push({ ...c, examples: await examplesOf(db, projectId, c.guard, w, n) });
  return { object: 'guard_verdict_summary', since: w.since, until: w.until, guards };
}
