import { type Kysely, sql } from 'kysely';
import type { Database, EvalRunTable } from '../db/schema.js';
import type { RunPlan } from '../engine/plan.js';
import type { ErrorBody } from '../shared/errors.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import type { RunStatus } from '../shared/run-status.js';
import { isPostgres } from './stored-completions-repository.js';

export interface EvalRunObject {
  id: string;
  object: 'eval.run';
  created_at: number;
  data_source: JsonObject;
  error: ErrorBody | null;
  eval_id: string;
  metadata: Record<string, string> | null;
  model: string;
  name: string;
  per_model_usage: {
    model_name: string;
    invocation_count: number;
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    cached_tokens: number;
  }[];
  per_testing_criteria_results: { testing_criteria: string; passed: number; failed: number }[];
  /** A path on the dashboard; the route prefixes the server's origin. */
  report_url: string;
  result_counts: { total: number; errored: number; failed: number; passed: number };
  status: 'queued' | 'in_progress' | 'completed' | 'canceled' | 'failed';
}

export const OPENAI_STATUS: Record<RunStatus, EvalRunObject['status']> = {
  queued: 'queued',
  running: 'in_progress',
  completed: 'completed',
  cancelled: 'canceled',
  error: 'failed',
};

const n = (v: unknown) => Number(v ?? 0);

/**
 * An item's verdict over its criteria, in SQL: errored when any criterion errored (or had nothing to
 * grade), else failed when any failed, else passed.
 */
export function itemVerdicts(db: Kysely<Database>, runId: string) {
  return db
    .selectFrom('run_samples')
    .select([
      'position',
      sql<number>`sum(case when status <> 'scored' then 1 else 0 end)`.as('errors'),
      sql<number>`sum(case when status = 'scored' and passed = 0 then 1 else 0 end)`.as('fails'),
    ])
    .where('run_id', '=', runId)
    .groupBy('position');
}

async function resultCounts(db: Kysely<Database>, runId: string) {
  const row = await db
    .selectFrom(itemVerdicts(db, runId).as('v'))
    .select([
      sql<number>`count(*)`.as('total'),
      sql<number>`sum(case when errors > 0 then 1 else 0 end)`.as('errored'),
      sql<number>`sum(case when errors = 0 and fails > 0 then 1 else 0 end)`.as('failed'),
      sql<number>`sum(case when errors = 0 and fails = 0 then 1 else 0 end)`.as('passed'),
    ])
    .executeTakeFirst();
  return { total: n(row?.total), errored: n(row?.errored), failed: n(row?.failed), passed: n(row?.passed) };
}

async function criteriaResults(db: Kysely<Database>, runId: string, plan: RunPlan | null) {
  const rows = await db
    .selectFrom('run_samples')
    .select([
      'evaluator_id',
      sql<number>`sum(case when status = 'scored' and passed = 1 then 1 else 0 end)`.as('passed'),
      sql<number>`sum(case when status = 'scored' and passed = 0 then 1 else 0 end)`.as('failed'),
    ])
    .where('run_id', '=', runId)
    .groupBy('evaluator_id')
    .execute();
  const by = new Map(rows.map((r) => [r.evaluator_id, r]));
  return (plan?.evaluators ?? []).map((ev) => ({
    testing_criteria: ev.name,
    passed: n(by.get(ev.id)?.passed),
    failed: n(by.get(ev.id)?.failed),
  }));
}

/**
 * A generation's cached prompt tokens, from the usage it stored (the upstream's
 * `prompt_tokens_details.cached_tokens`), 0 when it reported none or not a number.
 */
function cachedTokens(db: Kysely<Database>) {
  return isPostgres(db)
    ? sql<number>`(case when json_typeof(usage::json #> '{prompt_tokens_details,cached_tokens}') = 'number' then (usage::json #>> '{prompt_tokens_details,cached_tokens}')::float8 else 0 end)`
    : sql<number>`(case when json_type(usage, '$.prompt_tokens_details.cached_tokens') in ('integer', 'real') then json_extract(usage, '$.prompt_tokens_details.cached_tokens') else 0 end)`;
}

async function modelUsage(db: Kysely<Database>, runId: string, given: string) {
  const rows = await db
    .selectFrom('run_generations')
    .select([
      'model',
      sql<number>`count(*)`.as('calls'),
      sql<number>`sum(prompt_tokens)`.as('prompt_tokens'),
      sql<number>`sum(completion_tokens)`.as('completion_tokens'),
      sql<number>`sum(${cachedTokens(db)})`.as('cached_tokens'),
    ])
    .where('run_id', '=', runId)
    .where('error', 'is', null)
    .groupBy('model')
    .execute();
  return rows.map((r) => ({
    model_name: given || r.model,
    invocation_count: n(r.calls),
    prompt_tokens: n(r.prompt_tokens),
    completion_tokens: n(r.completion_tokens),
    total_tokens: n(r.prompt_tokens) + n(r.completion_tokens),
    cached_tokens: n(r.cached_tokens),
  }));
}

const unix = (iso: string) => Math.floor(Date.parse(iso) / 1000);

export async function toEvalRun(
  db: Kysely<Database>,
  projectId: string,
  link: EvalRunTable,
): Promise<EvalRunObject> {
  const run = await db
    .selectFrom('runs')
    .select(['status', 'plan', 'error', 'name'])
    .where('id', '=', link.run_id)
    .executeTakeFirst();
  const plan = parseJson<RunPlan | null>(run?.plan ?? null, null);
  const [counts, criteria, usage] = await Promise.all([
    resultCounts(db, link.run_id),
    criteriaResults(db, link.run_id, plan),
    modelUsage(db, link.run_id, link.model),
  ]);
  return {
    id: link.run_id,
    object: 'eval.run',
    created_at: unix(link.created_at),
    data_source: parseJson<JsonObject>(link.data_source, {}),
    error: parseJson<ErrorBody | null>(run?.error ?? null, null),
    eval_id: link.eval_id,
    metadata: parseJson<Record<string, string> | null>(link.metadata, null),
    model: link.model,
    // The run's own name (renamed with the run), else the name it was created with.
    name: run?.name ?? link.name,
    per_model_usage: usage,
    per_testing_criteria_results: criteria,
    report_url: `/projects/${projectId}/runs/${link.run_id}`,
    result_counts: counts,
    status: OPENAI_STATUS[run?.status ?? 'error'],
  };
}
