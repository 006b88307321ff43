import type { Kysely } from 'kysely';
import type { Need } from '../auth/content.js';
import { checkRange, DEFAULT_RANGE, parseRange } from '../catalog/range.js';
import type { Database } from '../db/schema.js';
import type { PlannedSide, RunPlan, SideName } from '../engine/plan.js';
import { formatRange, isGenerated } from '../engine/plan.js';
import type { GenerationOf, ItemReader } from '../engine/positions.js';
import type { ValidationIssue } from '../shared/errors.js';
import { containerSide, containerSource } from './container.js';
import { datasetSource } from './dataset.js';
import { evalFileSource, evalRowsSource } from './eval-rows.js';
import { generateSource } from './generate.js';
import { monitorSource } from './monitor.js';
import { sessionsSource } from './sessions.js';
import { simulateSource } from './simulate.js';
import { storedCompletionsSource } from './stored-completions.js';
import { storedResponsesSource } from './stored-responses.js';
import { tracesSource } from './traces.js';
import type { ResolveContext, SideBody, SideView, SourceKind } from './types.js';

/**
 * The source registry: every kind of data source a run side may have, by name. Whatever depends on a
 * side's kind (validation, resolution, permissions, counting, reading, generation, the API's view) asks
 * its kind here; nothing outside `src/sources/` names a kind in a condition. A side of a kind not
 * registered is an error (`UnknownSourceKind`), never read as another kind.
 */

/** A side whose kind is not registered (a plan written by a newer version, or a request's typo). */
export class UnknownSourceKind extends Error {
  override name = 'UnknownSourceKind';
  readonly code = 'unknown_source';
  constructor(readonly type: string) {
    super(`Unknown data source type '${type}'`);
  }
}

const KINDS = new Map<string, SourceKind>();

/** Registers a kind of source (once per name; registering another kind under a taken name throws). */
export function registerSource(kind: SourceKind): void {
  const taken = KINDS.get(kind.type);
  if (taken && taken !== kind) throw new Error(`a source kind '${kind.type}' is already registered`);
  KINDS.set(kind.type, kind);
}

for (const kind of [
  datasetSource,
  containerSource,
  generateSource,
  monitorSource,
  evalRowsSource,
  evalFileSource,
  storedCompletionsSource,
  storedResponsesSource,
  sessionsSource,
  tracesSource,
  simulateSource,
]) {
  registerSource(kind);
}

/** Every registered kind, in registration order. */
export function sourceKinds(): SourceKind[] {
  return [...KINDS.values()];
}

/** The kind of that name (UnknownSourceKind when none is registered). */
export function sourceKind(type: string): SourceKind {
  const kind = KINDS.get(type);
  if (!kind) throw new UnknownSourceKind(type);
  return kind;
}

/** The kind of a planned side. Plans stored before the registry marked eval rows by `shape: 'eval'`. */
export function kindOf(side: PlannedSide): SourceKind {
  if (!isGenerated(side) && side.shape === 'eval') return evalFileSource;
  return sourceKind(side.type);
}

// ---- Run requests ------------------------------------------------------------------------------------

/** The kind a request's side names; a side without `type` generates (the contract's default). */
export function requestKind(body: SideBody): SourceKind | undefined {
  const kind = KINDS.get(body.type ?? generateSource.type);
  return kind?.request ? kind : undefined;
}

/** Whether a request's side generates (no items of its own). */
export function requestGenerates(body: SideBody | null | undefined): boolean {
  return Boolean(body && requestKind(body)?.request?.generates);
}

/** The source fields of a side body: every field some requestable kind takes. */
function sourceFields(): string[] {
  return [
    ...new Set(sourceKinds().flatMap((k) => [...(k.request?.fields ?? []), ...(k.request?.optional ?? [])])),
  ];
}

/** Every problem of a side's body: its type, the fields its kind requires or refuses, its range. */
function bodyIssues(name: SideName, body: SideBody): ValidationIssue[] {
  const kind = requestKind(body);
  const type = body.type ?? generateSource.type;
  if (!kind) {
    const known = sourceKinds()
      .filter((k) => k.request)
      .map((k) => k.type);
    return [{ loc: ['body', name, 'type'], msg: `type must be one of ${known.join(', ')}`, type: 'enum' }];
  }
  const issues: ValidationIssue[] = [];
  const allowed = kind.request?.fields ?? [];
  const optional = kind.request?.optional ?? [];
  for (const field of sourceFields()) {
    const given = body[field] !== undefined;
    if (optional.includes(field)) continue;
    if (allowed.includes(field) && !given) {
      issues.push({
        loc: ['body', name, field],
        msg: `Field required for a ${type} data source`,
        type: 'missing',
      });
    } else if (!allowed.includes(field) && given) {
      issues.push({
        loc: ['body', name, field],
        msg: `Not allowed in a ${type} data source`,
        type: 'extra_forbidden',
      });
    }
  }
  if (body.range) {
    const checked = checkRange(body.range);
    if (!checked.ok) issues.push({ loc: ['body', name, 'range'], msg: checked.msg, type: checked.type });
  }
  return issues;
}

/** The sides' problems (contract 4.3), all at once: each side's shape, then the rules across sides. */
export function sidesIssues(sides: Partial<Record<SideName, SideBody | null>>): ValidationIssue[] {
  const names: SideName[] = ['sample', 'ground_truth', 'baseline'];
  const issues: ValidationIssue[] = [];
  for (const name of names) {
    const body = sides[name];
    if (body) issues.push(...bodyIssues(name, body));
  }
  if (requestGenerates(sides.sample) && requestGenerates(sides.ground_truth)) {
    issues.push({
      loc: ['body'],
      msg: 'At least one of sample and ground_truth must not be of type generate, so that there is input data to evaluate',
      type: 'value_error',
    });
  }
  for (const name of names) {
    const body = sides[name];
    const extra = body ? requestKind(body)?.request?.issues : undefined;
    if (body && extra) issues.push(...extra(name, body));
  }
  return issues;
}

/** A request's side resolved (404 for a resource the project has not); omitted: the container's logs. */
export async function resolveSide(
  ctx: ResolveContext,
  projectId: string,
  name: SideName,
  body: SideBody | null | undefined,
  containerId: string,
): Promise<PlannedSide> {
  const defaultRange = parseRange(DEFAULT_RANGE, ['body', name, 'range']);
  if (!body) return containerSide(containerId, defaultRange);
  const range = body.range ? parseRange(body.range, ['body', name, 'range']) : defaultRange;
  const kind = requestKind(body);
  if (!kind?.request) throw new UnknownSourceKind(String(body.type));
  return kind.request.resolve(ctx, { projectId, name, body, range });
}

// ---- Permissions, views, creation --------------------------------------------------------------------

/**
 * What reading these kinds needs (and, `creating`, what creating a run over them needs besides), each
 * permission once, in the kinds' registration order.
 */
export function readNeeds(kinds: readonly SourceKind[], creating = false): Need[] {
  const order = sourceKinds();
  const sorted = [...new Set(kinds)].sort((a, b) => order.indexOf(a) - order.indexOf(b));
  const needs: Need[] = [
    ...sorted.flatMap((k) =>
      k.reads.map((r) => ({ permission: r.permission, why: `the run reads ${r.what}` })),
    ),
    ...(creating ? sorted.flatMap((k) => k.creates ?? []) : []),
  ];
  return firstOfEach(needs);
}

/**
 * What reading a run's samples needs: each side's reads, said of that side (an omitted side is the
 * container's task logs, which a run "over a dataset" reads too), each permission once.
 */
export function sampleNeeds(sides: RunPlan['sides']): Need[] {
  const named: [SideName, PlannedSide | null][] = [
    ['sample', sides.sample],
    ['ground_truth', sides.ground_truth],
    ['baseline', sides.baseline ?? null],
  ];
  return firstOfEach(
    named.flatMap(([name, side]) =>
      side === null
        ? []
        : kindOf(side).reads.map((r) => ({
            permission: r.permission,
            why: `the run's samples show what its ${name} side reads: ${r.what}`,
          })),
    ),
  );
}

function firstOfEach(needs: Need[]): Need[] {
  const out = new Map<string, Need>();
  for (const need of needs) if (!out.has(need.permission)) out.set(need.permission, need);
  return [...out.values()];
}

/** The kinds of a request's sides; an omitted sample or ground truth reads the container's task logs. */
export function requestKinds(sides: Partial<Record<SideName, SideBody | null>>): SourceKind[] {
  const of = (body: SideBody | null | undefined) => (body ? requestKind(body) : containerSource);
  const out = [of(sides.sample), of(sides.ground_truth)];
  if (sides.baseline) out.push(of(sides.baseline));
  return out.filter((k): k is SourceKind => k !== undefined);
}

/** The kinds a plan's sides read. */
export function planKinds(sides: RunPlan['sides']): SourceKind[] {
  return [sides.sample, sides.ground_truth, ...(sides.baseline ? [sides.baseline] : [])].map(kindOf);
}

/**
 * The API's view of a planned side. A side of a kind this process does not know (a plan written by a
 * newer version) is shown by its type and range alone: reading a run never fails on it, executing it does.
 */
export function sideView(side: PlannedSide | null): SideView | null {
  if (!side) return null;
  const known = KINDS.has(side.type) || (!isGenerated(side) && side.shape === 'eval');
  return known ? kindOf(side).view(side) : { type: side.type, range: formatRange(side.range) };
}

/** Whether any of the sides reads recorded traffic (creation then waits for the task-log writer). */
export function readsRecorded(sides: readonly (PlannedSide | null)[]): boolean {
  return sides.some((s) => s !== null && kindOf(s).recorded === true);
}

/** The side whose models define a run's launches: the generated one of sample and ground truth. */
export function generatedSide(sides: RunPlan['sides']): 'sample' | 'ground_truth' | null {
  return isGenerated(sides.sample) ? 'sample' : isGenerated(sides.ground_truth) ? 'ground_truth' : null;
}

// ---- OpenAI eval runs --------------------------------------------------------------------------------

/** The kind an OpenAI eval run's `data_source.source.type` stands for (undefined: none). */
export function evalSourceKind(sourceType: string): SourceKind | undefined {
  return sourceKinds().find((k) => k.eval?.sourceType === sourceType);
}

// ---- The engine's ports ------------------------------------------------------------------------------

/**
 * The ground-truth rule, decided here once: a ground truth that is the very same source and slice as the
 * sample, of a kind whose items are no reference for themselves (task logs), gives scorers none.
 */
export function noReference(sides: RunPlan['sides']): boolean {
  const { sample, ground_truth: truth } = sides;
  if (isGenerated(sample) || isGenerated(truth)) return false;
  return (
    kindOf(truth).selfIsNoReference === true &&
    kindOf(sample) === kindOf(truth) &&
    sample.ref === truth.ref &&
    sample.range.start === truth.range.start &&
    sample.range.end === truth.range.end
  );
}

/** What the engine reads and generates through: each side's kind. */
export interface SourcePorts {
  readItems: ItemReader;
  countItems(side: Parameters<ItemReader>[0]): Promise<number>;
  generation: GenerationOf;
  noReference(sides: RunPlan['sides']): boolean;
}

export function sourcePorts(db: Kysely<Database>): SourcePorts {
  return {
    readItems: (side, range) => {
      const kind = kindOf(side);
      if (!kind.read) throw new Error(`a ${kind.type} side has no items to read`);
      return kind.read(db, side, range);
    },
    countItems: (side) => {
      const kind = kindOf(side);
      if (!kind.count) throw new Error(`a ${kind.type} side has no items to count`);
      return kind.count(db, side);
    },
    generation: (side) => {
      const kind = kindOf(side);
      if (!kind.generation) throw new Error(`a ${kind.type} side does not generate`);
      return kind.generation(side);
    },
    noReference,
  };
}
