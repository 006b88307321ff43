import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Launch, RunPlan } from '../engine/plan.js';
import { ApiError } from '../shared/errors.js';
import { parseJson } from '../shared/json.js';
import type { RunRow } from './repository.js';
import type { EvaluatorComparison, RunComparison } from './schemas.js';
import { requireRun } from './service.js';
import { pairedInterval } from './statistics.js';

/** Differences within this distance are ties. */
const TIE = 1e-9;

type MatchBy = 'item_id' | 'position';
type Count = number | string | null;

interface PairStats {
  evaluator_id: string;
  pairs: Count;
  n: Count;
  sum_d: number | string | null;
  sum_d2: number | string | null;
  min_d: number | string | null;
  max_d: number | string | null;
  wins: Count;
  losses: Count;
  verdicts: Count;
  run_passed: Count;
  base_passed: Count;
}

interface RegressionRow {
  evaluator_id: string;
  run_position: number | string;
  base_position: number | string;
  item_id: string | null;
  input: string | null;
  expected: string | null;
  run_output: string | null;
  run_score: number | string;
  run_reasoning: string | null;
  base_output: string | null;
  base_score: number | string;
  base_reasoning: string | null;
}

/** The stored rows of one side: a run, one of its launches, the evaluators compared. */
interface Side {
  runId: string;
  launch: number;
}

const num = (v: Count | undefined) => Number(v ?? 0);

function planOf(run: RunRow): RunPlan {
  const plan = parseJson<RunPlan | null>(run.plan, null);
  if (plan === null) throw new Error(`Run ${run.id} has no readable plan`);
  return plan;
}

/**
 * Launch i of the run goes with the baseline's launch of the same model slug (a launch without
 * generation has the slug null, so two such launches match). Two single-launch runs with different models
 * match each other too: comparing one model against another is the usual question.
 */
function matchLaunches(run: Launch[], baseline: Launch[]): [Launch, Launch][] {
  const taken = new Set<number>();
  const pairs: [Launch, Launch][] = [];
  for (const launch of run) {
    const other = baseline.find((b) => !taken.has(b.index) && b.model === launch.model);
    if (other) {
      taken.add(other.index);
      pairs.push([launch, other]);
    }
  }
  if (pairs.length === 0 && run.length === 1 && baseline.length === 1) return [[run[0]!, baseline[0]!]];
  return pairs;
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

function toRegression(r: RegressionRow): EvaluatorComparison['regressions'][number] {
  const runScore = Number(r.run_score);
  const baseScore = Number(r.base_score);
  return {
    item_id: r.item_id,
    input: parseJson<unknown>(r.input, null),
    expected: parseJson<unknown>(r.expected, null),
    difference: runScore - baseScore,
    run: {
      position: Number(r.run_position),
      output: parseJson<unknown>(r.run_output, null),
      score: runScore,
      reasoning: r.run_reasoning,
    },
    baseline: {
      position: Number(r.base_position),
      output: parseJson<unknown>(r.base_output, null),
      score: baseScore,
      reasoning: r.base_reasoning,
    },
  };
}

const mean = (xs: (number | null)[]) => {
  const real = xs.filter((x): x is number => x !== null);
  return real.length ? real.reduce((a, b) => a + b, 0) / real.length : null;
};

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
  const nothingInCommon = (msg: string) => ApiError.invalid(['query', 'baseline'], msg, 'nothing_in_common');

  const baseEvaluatorIds = new Set(basePlan.evaluators.map((e) => e.id));
  const shared = plan.evaluators.filter((e) => baseEvaluatorIds.has(e.id));
  const sharedIds = shared.map((e) => e.id);
  if (shared.length === 0) throw nothingInCommon('The two runs share no evaluator');
  const launchPairs = matchLaunches(plan.launches, basePlan.launches);
  if (launchPairs.length === 0) throw nothingInCommon('The two runs share no launch (model)');

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
      const s = result.stats;
      const matched = num(s?.n);
      const wins = num(s?.wins);
      const losses = num(s?.losses);
      const paired = pairedInterval(matched, num(s?.sum_d), num(s?.sum_d2), num(s?.min_d) === num(s?.max_d));
      const verdicts = num(s?.verdicts);
      const runRate = verdicts > 0 ? num(s?.run_passed) / verdicts : null;
      const baseRate = verdicts > 0 ? num(s?.base_passed) / verdicts : null;
      const ci = paired.interval;
      comparisons.push({
        evaluator: { id: evaluator.id, name: evaluator.name },
        launch: { index: launch.index, model: launch.model },
        baseline_launch: { index: baseLaunch.index, model: baseLaunch.model },
        matched_by: result.by,
        matched,
        unmatched: {
          run: (runCounts.get(evaluator.id) ?? 0) - matched,
          baseline: (baseCounts.get(evaluator.id) ?? 0) - matched,
        },
        mean_difference: paired.mean,
        stdev: paired.stdev,
        confidence_interval: ci,
        verdict: ci && ci.lower > 0 ? 'better' : ci && ci.upper < 0 ? 'worse' : 'inconclusive',
        wins,
        ties: matched - wins - losses,
        losses,
        pass_rate: {
          positions: verdicts,
          run: runRate,
          baseline: baseRate,
          change: runRate !== null && baseRate !== null ? runRate - baseRate : null,
        },
        regressions: result.regressions.map(toRegression),
      });
    }
  }

  const total = (pick: (c: EvaluatorComparison) => number) => comparisons.reduce((a, c) => a + pick(c), 0);
  const matched = total((c) => c.matched);
  if (matched === 0) throw nothingInCommon('No position is scored in both runs');

  const pairedLaunches = new Set(launchPairs.map(([l]) => l.index));
  const pairedBaseLaunches = new Set(launchPairs.map(([, b]) => b.index));
  const runEvaluatorIds = new Set(plan.evaluators.map((e) => e.id));
  const evaluatorView = (e: { id: string; name: string }) => ({ id: e.id, name: e.name });
  const launchView = (l: Launch) => ({ index: l.index, model: l.model });
  return {
    object: 'evaluation.run_comparison',
    run_id: runRow.id,
    baseline_id: baseRow.id,
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
      run: plan.launches.filter((l) => !pairedLaunches.has(l.index)).map(launchView),
      baseline: basePlan.launches.filter((l) => !pairedBaseLaunches.has(l.index)).map(launchView),
    },
  };
}
