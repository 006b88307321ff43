import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Launch, RunPlan } from '../engine/plan.js';
import { ApiError } from '../shared/errors.js';
import { parseJson } from '../shared/json.js';
import {
  launchView,
  type MatchBy,
  matchLaunches,
  mean,
  num,
  type PairStats,
  pairFigures,
  pairsWithin,
  type RegressionRow,
  TIE,
  type WithinRun,
} from './compare-figures.js';
import type { RunRow } from './repository.js';
import type { CompareQuery, EvaluatorComparison, RunComparison } from './schemas.js';
import { requireRun } from './service.js';

/** The stored rows of one side: a run, one of its launches, the evaluators compared. */
interface Side {
  runId: string;
  launch: number;
}

export function planOf(run: RunRow): RunPlan {
  const plan = parseJson<RunPlan | null>(run.plan, null);
  if (plan === null) throw new Error(`Run ${run.id} has no readable plan`);
  return plan;
}

/**
 * The match key of a stored row. By item id, with the k-th occurrence of an id matched to the k-th on the
 * other side (`occ`), so that repeated ids cannot pair one row twice; rows without an item id fall back to
 * their position. Positions are cast to text so that both key kinds share one column on both dialects.
 */
function keyOf(by: MatchBy): { key: RawBuilder<string>; occ: RawBuilder<number> } {
  if (by === 'position') return { key: sql<string>`'p:' || cast(position as text)`, occ: sql<number>`1` };
  const key = sql<string>`case when item_id is null then 'p:' || cast(position as text) else 'i:' || item_id end`;
  return { key, occ: sql<number>`row_number() over (partition by evaluator_id, ${key} order by position)` };
}

/**
 * `with m as …`: the matched pairs of rows of the run and the baseline, one row per pair. The rows of both
 * sides are grouped by their match key rather than joined: a GROUP BY sorts (SQLite) or hashes (PostgreSQL)
 * once, where SQLite would join two derived tables by a nested loop without an index.
 */
function matchedPairs(run: Side, base: Side, evaluatorIds: string[], by: MatchBy): RawBuilder<unknown> {
  const { key, occ } = keyOf(by);
  const rows = (s: Side, side: 'r' | 'b') => sql`
    select ${sql.lit(side)} as side, evaluator_id, position, status, score, passed, ${key} as k, ${occ} as occ
    from run_samples
    where run_id = ${s.runId} and launch_index = ${s.launch} and evaluator_id in (${sql.join(evaluatorIds)})`;
  const scored = sql`status = 'scored' and score is not null`;
  return sql`with keyed as (
      select evaluator_id,
        max(case when side = 'r' then position end) as run_position,
        max(case when side = 'b' then position end) as base_position,
        max(case when side = 'r' and ${scored} then score end) as run_score,
        max(case when side = 'b' and ${scored} then score end) as base_score,
        max(case when side = 'r' then passed end) as rp,
        max(case when side = 'b' then passed end) as bp
      from (${rows(run, 'r')} union all ${rows(base, 'b')}) sides
      group by evaluator_id, k, occ
    ),
    m as (
      select evaluator_id, run_position, base_position,
        case when run_score is not null and base_score is not null then 1 else 0 end as both_scored,
        run_score, base_score, run_score - base_score as d, rp, bp
      from keyed
      where run_position is not null and base_position is not null
    )`;
}

/** Counts, sums and sums of squares of the paired differences per evaluator, computed by the database. */
async function pairStats(
  db: Kysely<Database>,
  run: Side,
  base: Side,
  evaluatorIds: string[],
  by: MatchBy,
): Promise<PairStats[]> {
  const verdict = sql`both_scored = 1 and rp is not null and bp is not null`;
  const result = await sql<PairStats>`${matchedPairs(run, base, evaluatorIds, by)}
    select evaluator_id,
      count(*) as pairs,
      sum(both_scored) as n,
      sum(case when both_scored = 1 then d end) as sum_d,
      sum(case when both_scored = 1 then d * d end) as sum_d2,
      min(case when both_scored = 1 then d end) as min_d,
      max(case when both_scored = 1 then d end) as max_d,
      sum(case when both_scored = 1 and d > ${sql.lit(TIE)} then 1 else 0 end) as wins,
      sum(case when both_scored = 1 and d < ${sql.lit(-TIE)} then 1 else 0 end) as losses,
      sum(case when ${verdict} then 1 else 0 end) as verdicts,
      sum(case when ${verdict} and rp = 1 then 1 else 0 end) as run_passed,
      sum(case when ${verdict} and bp = 1 then 1 else 0 end) as base_passed
    from m
    group by evaluator_id`.execute(db);
  return result.rows;
}

/** The `limit` largest score drops per evaluator; only their rows' texts are read. */
async function regressions(
  db: Kysely<Database>,
  run: Side,
  base: Side,
  evaluatorIds: string[],
  by: MatchBy,
  limit: number,
): Promise<RegressionRow[]> {
  // The texts are read by primary key for the few rows kept: joined instead, SQLite may put the ranked
  // drops innermost and scan a whole side for every row.
  const field = (s: Side, column: string, position: 'run_position' | 'base_position') => sql`(
      select ${sql.ref(column)} from run_samples
      where run_id = ${s.runId} and launch_index = ${s.launch}
        and evaluator_id = kept.evaluator_id and position = kept.${sql.ref(position)})`;
  const result = await sql<RegressionRow>`${matchedPairs(run, base, evaluatorIds, by)},
    drops as (
      select evaluator_id, run_position, base_position, run_score, base_score,
        row_number() over (partition by evaluator_id order by d, run_position) as drop_rank
      from m
      where both_scored = 1 and d < ${sql.lit(-TIE)}
    ),
    kept as (select * from drops where drop_rank <= ${limit})
    select evaluator_id, run_position, base_position, run_score, base_score,
      ${field(run, 'item_id', 'run_position')} as item_id,
      ${field(run, 'input', 'run_position')} as input,
      ${field(run, 'expected', 'run_position')} as expected,
      ${field(run, 'output', 'run_position')} as run_output,
      ${field(run, 'reasoning', 'run_position')} as run_reasoning,
      ${field(base, 'output', 'base_position')} as base_output,
      ${field(base, 'reasoning', 'base_position')} as base_reasoning
    from kept
    order by evaluator_id, drop_rank`.execute(db);
  return result.rows;
}

/** Stored rows per evaluator of one side, for the unmatched counts. */
async function rowCounts(db: Kysely<Database>, side: Side, evaluatorIds: string[]) {
  const rows = await db
    .selectFrom('run_samples')
    .select(['evaluator_id', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('run_id', '=', side.runId)
    .where('launch_index', '=', side.launch)
    .where('evaluator_id', 'in', evaluatorIds)
    .groupBy('evaluator_id')
    .execute();
  return new Map(rows.map((r) => [r.evaluator_id, Number(r.n)]));
}

/**
 * Compares one launch pair: matched by item id where the two sides share any, by position for the
 * evaluators whose rows share none.
 */
async function compareLaunches(
  db: Kysely<Database>,
  run: Side,
  base: Side,
  evaluatorIds: string[],
  limit: number,
): Promise<Map<string, { by: MatchBy; stats: PairStats | undefined; regressions: RegressionRow[] }>> {
  const out = new Map<string, { by: MatchBy; stats: PairStats | undefined; regressions: RegressionRow[] }>();
  const byItem = new Map(
    (await pairStats(db, run, base, evaluatorIds, 'item_id')).map((s) => [s.evaluator_id, s]),
  );
  const itemIds = evaluatorIds.filter((id) => num(byItem.get(id)?.pairs) > 0);
  const positionIds = evaluatorIds.filter((id) => !itemIds.includes(id));
  const byPosition =
    positionIds.length > 0
      ? new Map((await pairStats(db, run, base, positionIds, 'position')).map((s) => [s.evaluator_id, s]))
      : new Map<string, PairStats>();
  for (const [by, ids, stats] of [
    ['item_id', itemIds, byItem],
    ['position', positionIds, byPosition],
  ] as const) {
    const withDrops = ids.filter((id) => num(stats.get(id)?.losses) > 0);
    const drops = withDrops.length > 0 ? await regressions(db, run, base, withDrops, by, limit) : [];
    for (const id of ids) {
      out.set(id, { by, stats: stats.get(id), regressions: drops.filter((d) => d.evaluator_id === id) });
    }
  }
  return out;
}

/**
 * "Is this run better than that one?": per shared evaluator and matched launch, the paired differences of
 * scores (run − baseline) at matched positions, their t-interval, wins/ties/losses, the pass-rate change
 * and the largest regressions. Aggregates and the top regressions are computed in SQL, so the rows read
 * into memory are bounded by the number of evaluators, launches and `limit`, not by the runs' sizes.
 * `authorize` sees both runs once they are found (e.g. to refuse a key that may not read their rows).
 */
export async function compareRuns(
  db: Kysely<Database>,
  projectId: string,
  runId: string,
  baselineId: string,
  limit: number,
  authorize: (run: RunRow) => void = () => {},
): Promise<RunComparison> {
  const runRow = await requireRun(db, projectId, runId);
  const baseRow = await requireRun(db, projectId, baselineId);
  authorize(runRow);
  authorize(baseRow);
  const plan = planOf(runRow);
  const basePlan = planOf(baseRow);
  const launchPairs = matchLaunches(plan.launches, basePlan.launches);
  if (launchPairs.length === 0) throw nothingInCommon('The two runs share no launch (model)');
  return compareLaunchPairs(db, { row: runRow, plan }, { row: baseRow, plan: basePlan }, launchPairs, limit);
}

export const nothingInCommon = (msg: string) =>
  ApiError.invalid(['query', 'baseline'], msg, 'nothing_in_common');

/**
 * The comparison of launch pairs (a launch of the run, one of the baseline: two runs, or two launches of
 * one run), per evaluator the two share. `grouping` says how the pairs were chosen.
 */
export async function compareLaunchPairs(
  db: Kysely<Database>,
  runOf: { row: RunRow; plan: RunPlan },
  baseOf: { row: RunRow; plan: RunPlan },
  launchPairs: [Launch, Launch][],
  limit: number,
  grouping: RunComparison['by'] = 'run',
): Promise<RunComparison> {
  const { row: runRow, plan } = runOf;
  const { row: baseRow, plan: basePlan } = baseOf;
  const baseEvaluatorIds = new Set(basePlan.evaluators.map((e) => e.id));
  const shared = plan.evaluators.filter((e) => baseEvaluatorIds.has(e.id));
  const sharedIds = shared.map((e) => e.id);
  if (shared.length === 0) throw nothingInCommon('The two runs share no evaluator');

  const comparisons: EvaluatorComparison[] = [];
  for (const [launch, baseLaunch] of launchPairs) {
    const run = { runId: runRow.id, launch: launch.index };
    const base = { runId: baseRow.id, launch: baseLaunch.index };
    const [results, runCounts, baseCounts] = await Promise.all([
      compareLaunches(db, run, base, sharedIds, limit),
      rowCounts(db, run, sharedIds),
      rowCounts(db, base, sharedIds),
    ]);
    for (const evaluator of shared) {
      // compareLaunches answers for every evaluator id it is given.
      const result = results.get(evaluator.id)!;
      const matched = num(result.stats?.n);
      comparisons.push({
        evaluator: { id: evaluator.id, name: evaluator.name },
        launch: launchView(launch),
        baseline_launch: launchView(baseLaunch),
        ...pairFigures(result, matched),
        unmatched: {
          run: (runCounts.get(evaluator.id) ?? 0) - matched,
          baseline: (baseCounts.get(evaluator.id) ?? 0) - matched,
        },
      });
    }
  }

  const total = (pick: (c: EvaluatorComparison) => number) => comparisons.reduce((a, c) => a + pick(c), 0);
  const matched = total((c) => c.matched);
  if (matched === 0) throw nothingInCommon('No position is scored in both runs');

  const pairedLaunches = new Set(launchPairs.map(([l]) => l.index));
  const pairedBaseLaunches = new Set(launchPairs.map(([, b]) => b.index));
  // Within one run a launch is compared on either side of a pair.
  const oneRun = runRow.id === baseRow.id;
  const inPairs = new Set([...pairedLaunches, ...(oneRun ? pairedBaseLaunches : [])]);
  const inBasePairs = new Set([...pairedBaseLaunches, ...(oneRun ? pairedLaunches : [])]);
  const runEvaluatorIds = new Set(plan.evaluators.map((e) => e.id));
  const evaluatorView = (e: { id: string; name: string }) => ({ id: e.id, name: e.name });
  return {
    object: 'evaluation.run_comparison',
    run_id: runRow.id,
    baseline_id: baseRow.id,
    by: grouping,
    run_status: runRow.status,
    baseline_status: baseRow.status,
    partial: runRow.status !== 'completed' || baseRow.status !== 'completed',
    summary: {
      comparisons: comparisons.length,
      matched,
      wins: total((c) => c.wins),
      ties: total((c) => c.ties),
      losses: total((c) => c.losses),
      mean_difference: mean(comparisons.map((c) => c.mean_difference)),
      pass_rate_change: mean(comparisons.map((c) => c.pass_rate.change)),
      better: total((c) => (c.verdict === 'better' ? 1 : 0)),
      worse: total((c) => (c.verdict === 'worse' ? 1 : 0)),
      inconclusive: total((c) => (c.verdict === 'inconclusive' ? 1 : 0)),
      // "better"/"worse" said of both units, named, so that the CLI and the dashboard say the same thing.
      comparisons_better: total((c) => (c.verdict === 'better' ? 1 : 0)),
      comparisons_worse: total((c) => (c.verdict === 'worse' ? 1 : 0)),
      positions_better: total((c) => c.wins),
      positions_worse: total((c) => c.losses),
    },
    comparisons,
    unmatched_evaluators: {
      run: plan.evaluators.filter((e) => !baseEvaluatorIds.has(e.id)).map(evaluatorView),
      baseline: basePlan.evaluators.filter((e) => !runEvaluatorIds.has(e.id)).map(evaluatorView),
    },
    unmatched_launches: {
      run: plan.launches.filter((l) => !inPairs.has(l.index)).map(launchView),
      baseline: basePlan.launches.filter((l) => !inBasePairs.has(l.index)).map(launchView),
    },
  };
}

/**
 * Within one run (an experiment's launches): each prompt version against a reference version on the same
 * model (`by: prompt_version`), or each model against a reference model with the same prompt version
 * (`by: model`), by the same paired comparison as two runs.
 */
export async function compareWithinRun(
  db: Kysely<Database>,
  projectId: string,
  runId: string,
  within: WithinRun,
  limit: number,
  authorize: (run: RunRow) => void = () => {},
): Promise<RunComparison> {
  const row = await requireRun(db, projectId, runId);
  authorize(row);
  const plan = planOf(row);
  const pairs = pairsWithin(plan.launches, within);
  return compareLaunchPairs(db, { row, plan }, { row, plan }, pairs, limit, within.by);
}

/** The comparison a query asks for: with a baseline run, or (`by`) between launches of the run. */
export function compareAsAsked(
  db: Kysely<Database>,
  projectId: string,
  runId: string,
  query: CompareQuery,
  authorize: (run: RunRow) => void = () => {},
): Promise<RunComparison> {
  const { baseline, by, reference } = query;
  const limit = query.limit ?? 10;
  if (by !== undefined && baseline !== undefined) {
    throw ApiError.invalid(['query', 'by'], 'Give a baseline run or by, not both');
  }
  if (by !== undefined) return compareWithinRun(db, projectId, runId, { by, reference }, limit, authorize);
  if (baseline === undefined) {
    throw ApiError.invalid(
      ['query', 'baseline'],
      'Give a baseline run, or by to compare launches of this run',
      'missing',
    );
  }
  return compareRuns(db, projectId, runId, baseline, limit, authorize);
}
