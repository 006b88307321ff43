import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { parseJson } from '../shared/json.js';
import type { MonitorRow } from './repository.js';
import type { Bucket, EvaluatorStats, MonitorResults, MonitorSample } from './schemas.js';

/** A call's bucket: the prefix of its ISO time (stored in one canonical form), the same on both databases. */
const PREFIX: Record<Bucket, { length: number; suffix: string }> = {
  minute: { length: 16, suffix: ':00.000Z' },
  hour: { length: 13, suffix: ':00:00.000Z' },
  day: { length: 10, suffix: 'T00:00:00.000Z' },
};

/** The sample variance of the scores (rounding can take it just below zero: clamped where it is used). */
const VARIANCE = sql`((sum(s.score * s.score) - sum(s.score) * sum(s.score) / count(s.score)) / (count(s.score) - 1))`;

interface Window {
  since?: string;
  until?: string;
}

const iso = (t: string) => new Date(t).toISOString();

/**
 * The rows of selected calls that could not be scored, which a monitor counts as errors: the call itself
 * failed (`error`, with the call's code: never judged), the scoring failed (`error`), or there was
 * nothing to score (`missing`: no output, or the log is gone). So every selected call ends scored or
 * errored.
 */
export const UNSCORED = sql`s.status in ('error', 'missing')`;

/** A sample's error: the scoring's own, or for a call with nothing to score, why (`missing_data`). */
function sampleError(r: {
  status: string;
  error: string | null;
  missing_reason: string | null;
}): { code: string; message: string } | null {
  if (r.status === 'missing')
    return { code: 'missing_data', message: r.missing_reason ?? 'nothing to score at this position' };
  return parseJson<{ code: string; message: string } | null>(r.error, null);
}

function windowSql(w: Window): RawBuilder<unknown> {
  const parts = [sql`1 = 1`];
  if (w.since) parts.push(sql`ms.log_created_at >= ${iso(w.since)}`);
  if (w.until) parts.push(sql`ms.log_created_at < ${iso(w.until)}`);
  return sql.join(parts, sql` and `);
}

interface StatRow {
  evaluator_id: string;
  bucket?: string;
  num_scored: number | string;
  num_passed: number | string | null;
  num_failed: number | string | null;
  num_errors: number | string | null;
  avg_score: number | string | null;
  stdev: number | string | null;
  n_score: number | string;
}

/**
 * Per-evaluator counts, mean and sample standard deviation of the scores, computed by the database over
 * the monitor's stored rows of calls recorded in the window; grouped by evaluator, or by evaluator and
 * bucket.
 */
async function stats(
  db: Kysely<Database>,
  m: MonitorRow,
  w: Window,
  bucket: Bucket | null,
): Promise<StatRow[]> {
  const b = bucket ? PREFIX[bucket] : null;
  const bucketCol = b ? sql`, substr(ms.log_created_at, 1, ${sql.lit(b.length)}) as bucket` : sql``;
  const groupBy = b ? sql`, substr(ms.log_created_at, 1, ${sql.lit(b.length)})` : sql``;
  const result = await sql<StatRow>`
    select s.evaluator_id ${bucketCol},
      sum(case when s.status = 'scored' then 1 else 0 end) as num_scored,
      sum(case when s.status = 'scored' and s.passed = 1 then 1 else 0 end) as num_passed,
      sum(case when s.status = 'scored' and s.passed = 0 then 1 else 0 end) as num_failed,
      sum(case when ${UNSCORED} then 1 else 0 end) as num_errors,
      avg(s.score) as avg_score,
      count(s.score) as n_score,
      case when count(s.score) > 1 then sqrt(case when ${VARIANCE} < 0 then 0 else ${VARIANCE} end) end as stdev
    from run_samples s
    join monitor_selections ms on ms.monitor_id = ${m.id} and ms.position = s.position
    where s.run_id = ${m.run_id} and ${windowSql(w)}
    group by s.evaluator_id ${groupBy}
    order by ${b ? sql`bucket, ` : sql``}s.evaluator_id`.execute(db);
  return result.rows;
}

function toStats(r: StatRow, names: Map<string, string>): EvaluatorStats {
  const n = Number(r.n_score);
  const stdev = r.stdev === null ? null : Number(r.stdev);
  return {
    evaluator: r.evaluator_id,
    name: names.get(r.evaluator_id) ?? r.evaluator_id,
    num_scored: Number(r.num_scored ?? 0),
    num_passed: Number(r.num_passed ?? 0),
    num_failed: Number(r.num_failed ?? 0),
    num_errors: Number(r.num_errors ?? 0),
    avg_score: r.avg_score === null ? null : Number(r.avg_score),
    stdev,
    stderr: stdev === null ? null : stdev / Math.sqrt(n),
  };
}

/** The evaluators' names as the monitor's run keeps them. */
export async function evaluatorNames(db: Kysely<Database>, runId: string): Promise<Map<string, string>> {
  const run = await db.selectFrom('runs').select('plan').where('id', '=', runId).executeTakeFirst();
  const plan = parseJson<{ evaluators?: { id: string; name: string }[] }>(run?.plan ?? null, {});
  return new Map((plan.evaluators ?? []).map((e) => [e.id, e.name]));
}

/** The monitor's evaluator named by id or name (a 422 on `query.evaluator` when it is not one of them). */
export async function sampleEvaluatorId(db: Kysely<Database>, m: MonitorRow, ref: string): Promise<string> {
  const names = await evaluatorNames(db, m.run_id);
  const id = [...names].find(([evId, name]) => evId === ref || name === ref)?.[0];
  if (!id) throw ApiError.invalid(['query', 'evaluator'], `'${ref}' is not one of the monitor's evaluators`);
  return id;
}

export async function monitorResults(
  db: Kysely<Database>,
  m: MonitorRow,
  w: Window,
  bucket: Bucket,
): Promise<MonitorResults> {
  const names = await evaluatorNames(db, m.run_id);
  const [totals, rows] = await Promise.all([stats(db, m, w, null), stats(db, m, w, bucket)]);
  const buckets: MonitorResults['buckets'] = [];
  for (const r of rows) {
    const start = `${r.bucket}${PREFIX[bucket].suffix}`;
    let last = buckets[buckets.length - 1];
    if (last?.start !== start) {
      last = { start, evaluators: [] };
      buckets.push(last);
    }
    last.evaluators.push(toStats(r, names));
  }
  return {
    object: 'monitor.results',
    monitor: m.id,
    bucket,
    totals: totals.map((r) => toStats(r, names)),
    buckets,
  };
}

export async function monitorSamples(
  db: Kysely<Database>,
  m: MonitorRow,
  filter: Window & { failed?: boolean; evaluatorId?: string },
  page: Page,
): Promise<ListResponse<MonitorSample>> {
  const where = [sql`s.run_id = ${m.run_id}`, windowSql(filter)];
  if (filter.failed) where.push(sql`((s.status = 'scored' and s.passed = 0) or ${UNSCORED})`);
  if (filter.evaluatorId) where.push(sql`s.evaluator_id = ${filter.evaluatorId}`);
  const from = sql`run_samples s join monitor_selections ms on ms.monitor_id = ${m.id} and ms.position = s.position
    where ${sql.join(where, sql` and `)}`;
  const [rows, count] = await Promise.all([
    sql<{
      item_id: string | null;
      evaluator_id: string;
      status: string;
      score: number | null;
      passed: number | null;
      reasoning: string | null;
      error: string | null;
      missing_reason: string | null;
      input: string | null;
      output: string | null;
      log_created_at: string;
      created_at: string;
    }>`select s.item_id, s.evaluator_id, s.status, s.score, s.passed, s.reasoning, s.error, s.missing_reason, s.input, s.output,
        ms.log_created_at, s.created_at
      from ${from} order by ms.position desc, s.evaluator_id limit ${page.limit} offset ${page.offset}`.execute(
      db,
    ),
    sql<{ n: number | string }>`select count(*) as n from ${from}`.execute(db),
  ]);
  return {
    object: 'list',
    data: rows.rows.map((r) => ({
      object: 'monitor.sample' as const,
      task_log_id: r.item_id ?? '',
      evaluator: r.evaluator_id,
      status: r.status === 'scored' || r.status === 'error' ? r.status : 'missing',
      score: r.score === null ? null : Number(r.score),
      passed: r.passed === null ? null : Number(r.passed) === 1,
      reasoning: r.reasoning,
      error: sampleError(r),
      input: parseJson<unknown>(r.input, null),
      output: parseJson<unknown>(r.output, null),
      log_created_at: r.log_created_at,
      scored_at: r.created_at,
    })),
    total: Number(count.rows[0]?.n ?? 0),
  };
}
