import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { MonitorSeries } from '../observability/types.js';
import { UNSCORED } from './results.js';

/**
 * Every monitor's counts per evaluator and its lag, read from the database at scrape time: the same
 * figures from every process, whichever process scored the calls.
 */
export async function monitorSeries(db: Kysely<Database>): Promise<MonitorSeries[]> {
  const [counts, lags] = await Promise.all([
    sql<{
      monitor: string;
      name: string;
      evaluator: string;
      scored: number | string;
      passed: number | string | null;
      failed: number | string | null;
      errors: number | string | null;
      score_sum: number | string | null;
    }>`select m.id as monitor, m.name, s.evaluator_id as evaluator,
        sum(case when s.status = 'scored' then 1 else 0 end) as scored,
        sum(case when s.status = 'scored' and s.passed = 1 then 1 else 0 end) as passed,
        sum(case when s.status = 'scored' and s.passed = 0 then 1 else 0 end) as failed,
        sum(case when ${UNSCORED} then 1 else 0 end) as errors,
        sum(s.score) as score_sum
      from monitors m join run_samples s on s.run_id = m.run_id
      group by m.id, m.name, s.evaluator_id`.execute(db),
    sql<{ monitor: string; name: string; oldest: string | null }>`
      select m.id as monitor, m.name, (select min(ms.log_created_at) from monitor_selections ms
        where ms.monitor_id = m.id and not exists (select 1 from run_samples s where s.run_id = m.run_id
          and s.launch_index = 0 and s.position = ms.position)) as oldest
      from monitors m`.execute(db),
  ]);
  const now = Date.now();
  return [
    ...counts.rows.map((r) => ({
      monitor: r.monitor,
      name: r.name,
      evaluator: r.evaluator,
      scored: Number(r.scored),
      passed: Number(r.passed ?? 0),
      failed: Number(r.failed ?? 0),
      errors: Number(r.errors ?? 0),
      scoreSum: Number(r.score_sum ?? 0),
    })),
    ...lags.rows.map((r) => ({
      monitor: r.monitor,
      name: r.name,
      lagSeconds: r.oldest ? Math.max(0, (now - Date.parse(r.oldest)) / 1000) : 0,
    })),
  ];
}
