import type { Launch } from '../engine/plan.js';
import { ApiError } from '../shared/errors.js';
import { parseJson } from '../shared/json.js';
import type { EvaluatorComparison } from './schemas.js';
import { pairedInterval } from './statistics.js';

/**
 * The pure parts of a comparison: which launches pair up, and the figures of one pair from the counts and
 * sums the database computed (./compare.ts).
 */

/** Differences within this distance are ties. */
export const TIE = 1e-9;

export type MatchBy = 'item_id' | 'position';
export type Count = number | string | null;

export interface PairStats {
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

export interface RegressionRow {
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

export const num = (v: Count | undefined) => Number(v ?? 0);

const samePrompt = (a: Launch, b: Launch) =>
  a.prompt?.id === b.prompt?.id && a.prompt?.version === b.prompt?.version;

/**
 * Launch i of the run goes with the baseline's launch of the same model slug (a launch without
 * generation has the slug null, so two such launches match) and, among those, of the same prompt version
 * first (experiments). Two single-launch runs with different models match each other too: comparing one
 * model against another is the usual question.
 */
export function matchLaunches(run: Launch[], baseline: Launch[]): [Launch, Launch][] {
  const taken = new Set<number>();
  const pairs: [Launch, Launch][] = [];
  for (const launch of run) {
    const free = baseline.filter((b) => !taken.has(b.index) && b.model === launch.model);
    const other = free.find((b) => samePrompt(b, launch)) ?? free[0];
    if (other) {
      taken.add(other.index);
      pairs.push([launch, other]);
    }
  }
  if (pairs.length === 0 && run.length === 1 && baseline.length === 1) return [[run[0]!, baseline[0]!]];
  return pairs;
}

/** A launch as a comparison names it: its index, model and (an experiment's) prompt version. */
export const launchView = (l: Launch) => ({
  index: l.index,
  model: l.model,
  ...(l.prompt ? { prompt: l.prompt } : {}),
});

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

export const mean = (xs: (number | null)[]) => {
  const real = xs.filter((x): x is number => x !== null);
  return real.length ? real.reduce((a, b) => a + b, 0) / real.length : null;
};

/** One evaluator's figures over a launch pair: the paired differences, their interval, the pass rates. */
export function pairFigures(
  result: { by: MatchBy; stats: PairStats | undefined; regressions: RegressionRow[] },
  matched: number,
): Omit<EvaluatorComparison, 'evaluator' | 'launch' | 'baseline_launch' | 'unmatched'> {
  const s = result.stats;
  const wins = num(s?.wins);
  const losses = num(s?.losses);
  const paired = pairedInterval(matched, num(s?.sum_d), num(s?.sum_d2), num(s?.min_d) === num(s?.max_d));
  const verdicts = num(s?.verdicts);
  const runRate = verdicts > 0 ? num(s?.run_passed) / verdicts : null;
  const baseRate = verdicts > 0 ? num(s?.base_passed) / verdicts : null;
  const ci = paired.interval;
  return {
    matched_by: result.by,
    matched,
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
  };
}

/** A comparison within one run: what varies between the launches compared, and the reference. */
export interface WithinRun {
  by: 'prompt_version' | 'model';
  /** `by: prompt_version`: `name@version`, `name@label` or `name`; `by: model`: a model slug. */
  reference?: string | undefined;
}

const invalid = (field: string, msg: string) => ApiError.invalid(['query', field], msg, 'nothing_in_common');

/** Whether launch `l` renders the prompt version `reference` names (`name@version`, `name@label`, `name`). */
function rendersVersion(l: Launch, reference: string): boolean {
  if (!l.prompt) return false;
  const at = reference.lastIndexOf('@');
  const ref = at > 0 ? reference.slice(0, at) : reference;
  const which = at > 0 ? reference.slice(at + 1) : null;
  if (l.prompt.name !== ref && l.prompt.id !== ref) return false;
  if (which === null) return true;
  return /^\d+$/.test(which) ? l.prompt.version === Number(which) : l.prompt.label === which;
}

const versionKey = (l: Launch) => (l.prompt ? `${l.prompt.id}@${l.prompt.version}` : '');

/**
 * The launch pairs of a comparison within one run: the reference's launch of each group against every
 * other launch of the group. `by: prompt_version` groups by model (the reference: a prompt version, by
 * default the first the run names); `by: model` groups by prompt version (the reference: a model, by
 * default the run's first).
 */
export function pairsWithin(launches: Launch[], within: WithinRun): [Launch, Launch][] {
  const first = launches[0];
  if (within.by === 'prompt_version' && !launches.some((l) => l.prompt)) {
    throw invalid('by', 'The run names no prompt versions: compare by model, or with another run');
  }
  const isReference =
    within.by === 'prompt_version'
      ? (l: Launch) =>
          within.reference !== undefined
            ? rendersVersion(l, within.reference)
            : versionKey(l) === versionKey(first!)
      : (l: Launch) => l.model === (within.reference ?? first?.model);
  const groupOf = within.by === 'prompt_version' ? (l: Launch) => l.model ?? '' : versionKey;
  const references = launches.filter(isReference);
  if (references.length === 0) {
    throw invalid('reference', `No launch of the run renders the reference '${within.reference}'`);
  }
  const pairs: [Launch, Launch][] = [];
  for (const reference of references) {
    for (const l of launches) {
      if (l.index !== reference.index && !isReference(l) && groupOf(l) === groupOf(reference)) {
        pairs.push([l, reference]);
      }
    }
  }
  if (pairs.length === 0) {
    const what =
      within.by === 'prompt_version'
        ? 'another prompt version on the same model'
        : 'another model with the same prompt version';
    throw invalid('by', `No launch of the run has ${what} to compare with the reference`);
  }
  return pairs;
}
