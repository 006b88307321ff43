import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { RunPlan } from './plan.js';

export type BreakReason = 'expected_count_reached' | 'source_exhausted' | 'cancelled' | 'error';

/** Per launch, what execution learnt that the stored rows cannot tell: layout and how it ended. */
export interface LaunchOutcome {
  index: number;
  expected: number;
  positions: number;
  callId: string | null;
}

interface Row {
  launch_index: number | string;
  evaluator_id: string;
  total: number | string;
  scored: number | string | null;
  passed: number | string | null;
  failed: number | string | null;
  errors: number | string | null;
  missing: number | string | null;
  inconsistent: number | string | null;
  avg_score: number | string | null;
  avg_sq: number | string | null;
  min_score: number | string | null;
  max_score: number | string | null;
}

/** The contract's per-evaluator fields plus Evalgate's extras (spread, inconsistent verdicts, name). */
export interface PerEvalResult {
  evaluator_name: string;
  accuracy: number | null;
  avg_score: number | null;
  avg_accuracy: number | null;
  num_total: number;
  num_scored: number;
  num_passed: number;
  num_failed: number;
  num_errors: number;
  num_missing: number;
  num_inconsistent?: number;
  stdev: number | null;
  stderr: number | null;
  break_reason: string;
  expected_count: number;
  /**
   * One aggregate per judge prompt hash, present when the evaluator's rows were scored by more than one
   * prompt; the combined `avg_score` and `accuracy` are then null: a changed prompt is never averaged in.
   */
  by_prompt_hash?: PromptHashAggregate[];
}

/** The figures of the rows one judge prompt scored. */
export interface PromptHashAggregate {
  prompt_hash: string;
  num_scored: number;
  num_passed: number;
  num_failed: number;
  avg_score: number | null;
  accuracy: number | null;
}
type PerEvalMap = Record<string, PerEvalResult>;

/** One launch's results (contract section 2.6's `per_model[i]`). */
export interface LaunchResult {
  model: { slug: string } | null;
  per_eval: PerEvalMap;
  avg_score: number | null;
  avg_accuracy: number | null;
  launch_index: number;
  launch_call_id: string | null;
}

export interface RunResults {
  overall: { avg_score: number | null; avg_accuracy: number | null };
  metadata: { positions: number };
  per_model: LaunchResult[];
  launch_count: number;
}

const num = (v: number | string | null | undefined) => Number(v ?? 0);
const mean = (xs: (number | null)[]) => {
  const real = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  return real.length ? real.reduce((a, b) => a + b, 0) / real.length : null;
};

/**
 * Per launch and evaluator, the scored rows' figures per judge prompt hash, grouped by the database; only
 * the pairs scored by more than one prompt are kept (one prompt: the evaluator's own figures say it all).
 */
async function promptHashAggregates(
  db: Kysely<Database>,
  runId: string,
): Promise<Map<string, PromptHashAggregate[]>> {
  const rows = await db
    .selectFrom('run_samples')
    .select([
      'launch_index',
      'evaluator_id',
      'prompt_hash',
      sql<number>`count(*)`.as('scored'),
      sql<number>`sum(case when passed = 1 then 1 else 0 end)`.as('passed'),
      sql<number>`sum(case when passed = 0 then 1 else 0 end)`.as('failed'),
      sql<number>`avg(score)`.as('avg_score'),
    ])
    .where('run_id', '=', runId)
    .where('status', '=', 'scored')
    .where('prompt_hash', 'is not', null)
    .groupBy(['launch_index', 'evaluator_id', 'prompt_hash'])
    .orderBy('launch_index')
    .orderBy('evaluator_id')
    .orderBy('prompt_hash')
    .execute();
  const out = new Map<string, PromptHashAggregate[]>();
  for (const r of rows) {
    const key = `${num(r.launch_index)}:${r.evaluator_id}`;
    const passed = num(r.passed);
    const failed = num(r.failed);
    const list = out.get(key) ?? [];
    list.push({
      prompt_hash: String(r.prompt_hash),
      num_scored: num(r.scored),
      num_passed: passed,
      num_failed: failed,
      avg_score: r.avg_score === null ? null : Number(r.avg_score),
      accuracy: passed + failed > 0 ? passed / (passed + failed) : null,
    });
    out.set(key, list);
  }
  for (const [key, list] of out) if (list.length < 2) out.delete(key);
  return out;
}

/**
 * Results of contract section 2.6, computed with SQL aggregates over the stored per-sample rows (never
 * from in-memory lists), so they are right after a restart and for runs of any size.
 */
export async function aggregate(
  db: Kysely<Database>,
  runId: string,
  plan: RunPlan,
  launches: LaunchOutcome[],
  ending: 'completed' | 'cancelled' | 'error',
): Promise<RunResults> {
  const rows = (await db
    .selectFrom('run_samples')
    .select([
      'launch_index',
      'evaluator_id',
      sql<number>`count(*)`.as('total'),
      sql<number>`sum(case when status = 'scored' then 1 else 0 end)`.as('scored'),
      sql<number>`sum(case when passed = 1 then 1 else 0 end)`.as('passed'),
      sql<number>`sum(case when passed = 0 then 1 else 0 end)`.as('failed'),
      sql<number>`sum(case when status = 'error' then 1 else 0 end)`.as('errors'),
      sql<number>`sum(case when status = 'missing' then 1 else 0 end)`.as('missing'),
      sql<number>`sum(case when inconsistent = 1 then 1 else 0 end)`.as('inconsistent'),
      sql<number>`avg(case when status = 'scored' then score end)`.as('avg_score'),
      sql<number>`avg(case when status = 'scored' then score * score end)`.as('avg_sq'),
      sql<number>`min(case when status = 'scored' then score end)`.as('min_score'),
      sql<number>`max(case when status = 'scored' then score end)`.as('max_score'),
    ])
    .where('run_id', '=', runId)
    .groupBy(['launch_index', 'evaluator_id'])
    .execute()) as Row[];
  const byKey = new Map(rows.map((r) => [`${num(r.launch_index)}:${r.evaluator_id}`, r]));
  const hashes = await promptHashAggregates(db, runId);

  const perModel = launches.map((launch) => {
    const perEval: PerEvalMap = {};
    for (const ev of plan.evaluators) {
      const r = byKey.get(`${launch.index}:${ev.id}`);
      const scored = num(r?.scored);
      const passed = num(r?.passed);
      const failed = num(r?.failed);
      const avg = r && r.avg_score !== null ? Number(r.avg_score) : null;
      let stdev: number | null = null;
      if (avg !== null && scored > 1) {
        // Identical scores give exactly 0, not the rounding left by mean(x²) − mean(x)².
        const same = Number(r?.min_score) === Number(r?.max_score);
        const variance = same ? 0 : ((Number(r?.avg_sq) - avg * avg) * scored) / (scored - 1);
        stdev = Math.sqrt(Math.max(0, variance));
      }
      const accuracy = passed + failed > 0 ? passed / (passed + failed) : null;
      const total = num(r?.total);
      let breakReason: string;
      if (ending === 'cancelled') breakReason = 'cancelled';
      else if (ending === 'error') breakReason = 'error';
      else breakReason = launch.positions < launch.expected ? 'source_exhausted' : 'expected_count_reached';
      const split = hashes.get(`${launch.index}:${ev.id}`);
      const mixed = split !== undefined && split.length > 1;
      perEval[ev.id] = {
        evaluator_name: ev.name,
        accuracy: mixed ? null : accuracy,
        avg_score: mixed ? null : avg,
        avg_accuracy: mixed ? null : accuracy,
        num_total: total,
        num_scored: scored,
        num_passed: passed,
        num_failed: failed,
        num_errors: num(r?.errors),
        num_missing: num(r?.missing),
        ...(ev.mode === 'pairwise' ? { num_inconsistent: num(r?.inconsistent) } : {}),
        stdev,
        stderr: stdev !== null ? stdev / Math.sqrt(scored) : null,
        break_reason: breakReason,
        expected_count: launch.expected,
        ...(mixed ? { by_prompt_hash: split } : {}),
      };
    }
    const evals = Object.values(perEval);
    const planned = plan.launches[launch.index];
    const model = planned?.model ?? null;
    return {
      model: model === null ? null : { slug: model },
      // An experiment's launch says which prompt version made it.
      ...(planned?.prompt ? { prompt: planned.prompt } : {}),
      per_eval: perEval,
      avg_score: mean(evals.map((e) => e?.avg_score ?? null)),
      avg_accuracy: mean(evals.map((e) => e?.accuracy ?? null)),
      launch_index: launch.index,
      launch_call_id: launch.callId,
    };
  });

  return {
    overall: {
      avg_score: mean(perModel.map((m) => m.avg_score)),
      avg_accuracy: mean(perModel.map((m) => m.avg_accuracy)),
    },
    metadata: { positions: launches.reduce((a, l) => a + l.positions, 0) },
    per_model: perModel,
    launch_count: launches.length,
  };
}
