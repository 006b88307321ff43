import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { cachedStatement } from '../../db/statements.js';
import { parseJson } from '../../shared/json.js';
import type { RunStatus } from '../../shared/run-status.js';
import type { Layout, RunPlan } from '../plan.js';
import type { RunError } from './transitions.js';

type Db = Kysely<Database>;

/**
 * What execution knows of a run, decoded once from its row (plan and layout parsed, flags as booleans).
 * The engine reads a run by id alone: it acts for whoever submitted it. Reads on a caller's behalf go
 * through the runs feature (`runs/repository.ts` `findRun`), always scoped to the caller's project.
 */
export interface RunRecord {
  id: string;
  projectId: string;
  status: RunStatus;
  environment: string;
  /** Null only for a row whose plan cannot be read (it is then not executed). */
  plan: RunPlan | null;
  /** Fixed by the first `prepareRun`; null before. */
  layout: Layout | null;
  cancelRequested: boolean;
  abandoned: RunError | null;
  createdAt: string;
  startedAt: string | null;
}

export async function loadRun(db: Db, id: string): Promise<RunRecord | undefined> {
  const row = await db
    .selectFrom('runs')
    .select([
      'id',
      'project_id',
      'status',
      'environment',
      'plan',
      'layout',
      'cancel_requested',
      'abandoned',
      'created_at',
      'started_at',
    ])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    projectId: row.project_id,
    status: row.status,
    environment: row.environment,
    plan: parseJson<RunPlan | null>(row.plan, null),
    layout: parseJson<Layout | null>(row.layout, null),
    cancelRequested: row.cancel_requested === 1,
    abandoned: parseJson<RunError | null>(row.abandoned, null),
    createdAt: row.created_at,
    startedAt: row.started_at,
  };
}

/** What a chunk checks before it starts: whether the run still runs, and how (the flags, undecoded). */
// Read before every chunk: a cached statement (db/statements.ts).
const flagsOf = cachedStatement('runs.flags', (db, id: string) =>
  db.selectFrom('runs').select(['status', 'cancel_requested', 'abandoned']).where('id', '=', id),
);

export async function runFlags(
  db: Db,
  id: string,
): Promise<{ status: RunStatus; cancel_requested: number; abandoned: string | null } | undefined> {
  return (await flagsOf(db, id)).rows[0];
}

/** The run's counters as numbers (PostgreSQL returns bigint columns as text). */
export interface RunCounters {
  done_positions: number;
  total_positions: number;
  judge_calls: number;
  judge_prompt_tokens: number;
  judge_completion_tokens: number;
  judge_unpriced_calls: number;
  judge_cost: number;
  generation_calls: number;
  generation_prompt_tokens: number;
  generation_completion_tokens: number;
  generation_unpriced_calls: number;
  generation_cost: number;
}

export const COUNTER_COLUMNS = [
  'done_positions',
  'total_positions',
  'judge_calls',
  'judge_prompt_tokens',
  'judge_completion_tokens',
  'judge_unpriced_calls',
  'judge_cost',
  'generation_calls',
  'generation_prompt_tokens',
  'generation_completion_tokens',
  'generation_unpriced_calls',
  'generation_cost',
] as const;

export function countersOf(row: Record<(typeof COUNTER_COLUMNS)[number], unknown>): RunCounters {
  const out = {} as RunCounters;
  for (const c of COUNTER_COLUMNS) out[c] = Number(row[c] ?? 0);
  return out;
}

export async function findRunCounters(db: Db, runId: string): Promise<RunCounters | undefined> {
  const row = await db.selectFrom('runs').select(COUNTER_COLUMNS).where('id', '=', runId).executeTakeFirst();
  return row ? countersOf(row) : undefined;
}
