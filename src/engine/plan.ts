import type { Range } from '../catalog/items.js';
import type { EvaluatorTable } from '../db/schema.js';
import type { SubGrader } from '../scoring/graders/schemas.js';
import type { TrajectoryConfig } from '../scoring/trajectory/spec.js';
import type { Scale } from '../shared/scale.js';

export type SideName = 'sample' | 'ground_truth' | 'baseline';

/**
 * A side after resolution, as stored in the run's plan. Its `type` names a source kind of the source
 * registry (`src/sources/`), which alone knows what each kind means; the engine only tells the two
 * shapes apart by `ref`: a side it reads items from, or a side whose items models generate.
 */
export type PlannedSide = ReadSide | GenerateSide;

/** A side read from stored items (a dataset, a container's task logs, a monitor's selection, eval rows…). */
export interface ReadSide {
  type: string;
  /** The resource the items are read from (a dataset, container or monitor id). */
  ref: string;
  /** Always empty: kept so that stored plans keep one shape. */
  models: string[];
  range: Range;
  /** Plans stored before the source registry: `eval` marked a dataset of OpenAI eval rows. */
  shape?: 'eval';
  /** Which of the source's items the side reads (the sessions kind's filter), fixed at creation. */
  filter?: Record<string, unknown>;
  /** The request left the side out: it reads what an omitted side resolves to, and adds no positions. */
  omitted?: true;
  /**
   * `session`: each item of the side goes with the sample's item of the session it names (its
   * `metadata.session_id` or `metadata.session_key`), not with the item at its position; it adds no
   * positions. Absent: items are paired by position.
   */
  pairing?: 'session';
}

/** A side whose items models generate, each from the other side's item at the same position. */
export interface GenerateSide {
  type: string;
  ref: null;
  /** Model slugs, one launch each (none: the side is empty). */
  models: string[];
  range: Range;
  /**
   * How each item's request is built, when not the plain chat request over the item's input: data only
   * the generate source kind reads (the engine asks it for a `Generation`).
   */
  request?: Record<string, unknown>;
  /**
   * An experiment's side: the prompt version each launch renders (`prompts[i]` goes with `models[i]`);
   * absent for plain generation.
   */
  prompts?: LaunchPrompt[];
}

/** The stored prompt version a launch renders its requests from, fixed at the run's creation. */
export interface LaunchPrompt {
  id: string;
  name: string;
  version: number;
  /** The label the request named, resolved to `version` at the run's birth; null when it named a version. */
  label: string | null;
}

/** Whether the side's items are generated (no ref of its own) rather than read. */
export function isGenerated(side: PlannedSide): side is GenerateSide {
  return side.ref === null;
}

/** The evaluator as it was when the run was created: later edits do not change a run. */
export interface EvaluatorSnapshot {
  id: string;
  name: string;
  type: EvaluatorTable['type'];
  mode: string;
  model: string | null;
  prompt: string | null;
  api: string | null;
  inference_parameters: Record<string, unknown>;
  pass_threshold: number | null;
  source: string | null;
  requirements: string[];
  /** The grader of evaluators of the grader types (string_check, text_similarity, score_model, label_model). */
  grader?: SubGrader | null;
  /** The configuration of trajectory graders (tool_call_match, trajectory_length). */
  trajectory?: TrajectoryConfig | null;
  /**
   * The scale its scores are on, as it was at creation: a judge's verdict off it is an error. Absent
   * from plans stored before scales were checked (their verdicts are taken as they come).
   */
  scale?: Scale | null;
}

export interface Launch {
  index: number;
  /** The model generating the launch's side, or null for a launch without generation. */
  model: string | null;
  /** The prompt version the launch renders (an experiment's launches); absent otherwise. */
  prompt?: LaunchPrompt;
}

/** Everything execution needs, fixed at creation and stored with the run. */
export interface RunPlan {
  projectId: string;
  containerId: string;
  sides: { sample: PlannedSide; ground_truth: PlannedSide; baseline: PlannedSide | null };
  /** The side whose models define the launches, if any. */
  generated: 'sample' | 'ground_truth' | null;
  launches: Launch[];
  evaluators: EvaluatorSnapshot[];
  /** The response cache for the run's model calls (the run's `cache` option); absent: none. */
  cache?: { mode: 'use' | 'refresh'; ttlSeconds: number } | null;
}

export function formatRange(r: Range): string {
  return `${r.start}:${r.end}`;
}

export function launchesOf(plan: Pick<RunPlan, 'sides' | 'generated'>): Launch[] {
  if (plan.generated === null) return [{ index: 0, model: null }];
  const side = plan.sides[plan.generated];
  const prompts = isGenerated(side) ? side.prompts : undefined;
  return side.models.map((model, index) => {
    const prompt = prompts?.[index];
    return prompt ? { index, model, prompt } : { index, model };
  });
}

/** Where the items of a non-generate side at run position `p` sit in that side's own list. */
export interface Layout {
  /** Positions the launch evaluates. */
  positions: number;
  /** Positions the ranges ask for; fewer real positions mean the source ran out. */
  expected: number;
  /** Offset added to a position to get the index in each side's full list (null for generate sides). */
  offsets: Record<SideName, number | null>;
}

const clampLen = (available: number, r: Range) => Math.max(0, Math.min(available, r.end) - r.start);

/**
 * Lays out positions from the number of items each non-generate side has. Non-generate sides are aligned
 * by position within their own ranges. A generate side takes its inputs from the other side's slice and
 * applies its own range to it.
 */
export function layout(
  plan: Pick<RunPlan, 'sides' | 'generated'>,
  counts: Partial<Record<SideName, number>>,
): Layout {
  const { sample, ground_truth, baseline } = plan.sides;
  const offsets: Record<SideName, number | null> = {
    sample: isGenerated(sample) ? null : sample.range.start,
    ground_truth: isGenerated(ground_truth) ? null : ground_truth.range.start,
    baseline: baseline && !isGenerated(baseline) ? baseline.range.start : null,
  };
  if (plan.generated !== null) {
    const gen = plan.sides[plan.generated];
    const sourceName: SideName = plan.generated === 'sample' ? 'ground_truth' : 'sample';
    const source = plan.sides[sourceName];
    const sourceLen = clampLen(counts[sourceName] ?? 0, source.range);
    const positions = Math.max(0, Math.min(sourceLen, gen.range.end) - gen.range.start);
    offsets[sourceName] = source.range.start + gen.range.start;
    // What the ranges ask for: the generate side's range over the slice its inputs come from.
    const asked = source.range.end - source.range.start;
    const expected = Math.max(0, Math.min(asked, gen.range.end) - gen.range.start);
    return { positions, expected, offsets };
  }
  // An omitted side, or one paired by session with the sample, adds no positions of its own.
  const own = [sample, ground_truth].map((side, i) => ({
    side,
    count: i === 0 ? counts.sample : counts.ground_truth,
  }));
  const placing = own.filter(({ side }) => !addsNoPositions(side));
  const sides = placing.length > 0 ? placing : own;
  return {
    positions: Math.max(...sides.map(({ side, count }) => clampLen(count ?? 0, side.range))),
    expected: Math.max(...sides.map(({ side }) => side.range.end - side.range.start)),
    offsets,
  };
}

/** Whether a side's items are placed by the other side's positions (see `ReadSide.omitted`, `pairing`). */
export function addsNoPositions(side: PlannedSide): boolean {
  return !isGenerated(side) && (side.omitted === true || side.pairing !== undefined);
}
