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
import { toolStepsSource } from './tool-steps.js';
import { tracesSource } from './traces.js';
import type { ResolveContext, SideBody, SideView, SourceKind } from './types.js';

/**
 * The source registry: every kind of data source a run side may have, by name. Whatever depends on a
 * side's kind (validation, resolution, permissions, counting, reading, generation, the API's view) asks
 * its kind of a registry; nothing outside `src/sources/` names a kind in a condition. A side of a kind not
 * in the registry is an error (`UnknownSourceKind`), never read as another kind. A registry is a value
 * built once per app (`createSourceRegistry`, by the composition root): two apps in one process may know
 * different kinds, and nothing is registered after it is built.
 */

/** A side whose kind is not registered (a plan written by a newer version, or a request's typo). */
export class UnknownSourceKind extends Error {
  override name = 'UnknownSourceKind';
  readonly code = 'unknown_source';
  constructor(readonly type: string) {
    super(`Unknown data source type '${type}'`);
  }
}

/** The kinds this version ships, in the order their permissions are listed. */
export const BUILT_IN_SOURCES: readonly SourceKind[] = Object.freeze([
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
  toolStepsSource,
  simulateSource,
]);

/** The kinds of one registry by name, in registration order (read-only once built). */
type Table = ReadonlyMap<string, SourceKind>;

/** The kind of that name (UnknownSourceKind when none is registered). */
function named(table: Table, type: string): SourceKind {
  const kind = table.get(type);
  if (!kind) throw new UnknownSourceKind(type);
  return kind;
}

/** The kind of a planned side. Plans stored before the registry marked eval rows by `shape: 'eval'`. */
function kindOf(table: Table, side: PlannedSide): SourceKind {
  if (!isGenerated(side) && side.shape === 'eval') return evalFileSource;
  return named(table, side.type);
}

// ---- Run requests ------------------------------------------------------------------------------------

/** The kind a request's side names; a side without `type` generates (the contract's default). */
function requestKind(table: Table, body: SideBody): SourceKind | undefined {
  const kind = table.get(body.type ?? generateSource.type);
  return kind?.request ? kind : undefined;
}

/** Whether a request's side generates (no items of its own). */
function requestGenerates(table: Table, body: SideBody | null | undefined): boolean {
  return Boolean(body && requestKind(table, body)?.request?.generates);
}

/** The source fields of a side body: every field some requestable kind takes. */
function sourceFields(table: Table): string[] {
  return [
    ...new Set(
      [...table.values()].flatMap((k) => [...(k.request?.fields ?? []), ...(k.request?.optional ?? [])]),
    ),
  ];
}

/** Every problem of a side's body: its type, the fields its kind requires or refuses, its range. */
function bodyIssues(table: Table, name: SideName, body: SideBody): ValidationIssue[] {
  const kind = requestKind(table, body);
  const type = body.type ?? generateSource.type;
  if (!kind) {
    const known = [...table.values()].filter((k) => k.request).map((k) => k.type);
    return [{ loc: ['body', name, 'type'], msg: `type must be one of ${known.join(', ')}`, type: 'enum' }];
  }
  const issues: ValidationIssue[] = [];
  const allowed = kind.request?.fields ?? [];
  const optional = kind.request?.optional ?? [];
  for (const field of sourceFields(table)) {
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

type RequestSides = Partial<Record<SideName, SideBody | null>>;

/** The sides' problems (contract 4.3), all at once: each side's shape, then the rules across sides. */
function sidesIssues(table: Table, sides: RequestSides): ValidationIssue[] {
  const names: SideName[] = ['sample', 'ground_truth', 'baseline'];
  const issues: ValidationIssue[] = [];
  for (const name of names) {
    const body = sides[name];
    if (body) issues.push(...bodyIssues(table, name, body));
  }
  if (requestGenerates(table, sides.sample) && requestGenerates(table, sides.ground_truth)) {
    issues.push({
      loc: ['body'],
      msg: 'At least one of sample and ground_truth must not be of type generate, so that there is input data to evaluate',
      type: 'value_error',
    });
  }
  for (const name of names) {
    const body = sides[name];
    const extra = body ? requestKind(table, body)?.request?.issues : undefined;
    if (body && extra) issues.push(...extra(name, body));
  }
  return issues;
}

/** A request's side resolved (404 for a resource the project has not); omitted: the container's logs. */
async function resolveSide(
  table: Table,
  ctx: ResolveContext,
  projectId: string,
  name: SideName,
  body: SideBody | null | undefined,
  containerId: string,
): Promise<PlannedSide> {
  const defaultRange = parseRange(DEFAULT_RANGE, ['body', name, 'range']);
  if (!body) return containerSide(containerId, defaultRange);
  const range = body.range ? parseRange(body.range, ['body', name, 'range']) : defaultRange;
  const kind = requestKind(table, body);
  if (!kind?.request) throw new UnknownSourceKind(String(body.type));
  return kind.request.resolve(ctx, { projectId, name, body, range });
}

// ---- Permissions, views ------------------------------------------------------------------------------

/**
 * What reading these kinds needs (and, `creating`, what creating a run over them needs besides), each
 * permission once, in the kinds' registration order.
 */
function readNeeds(table: Table, kinds: readonly SourceKind[], creating = false): Need[] {
  const order = [...table.values()];
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
function sampleNeeds(table: Table, sides: RunPlan['sides']): Need[] {
  const named: [SideName, PlannedSide | null][] = [
    ['sample', sides.sample],
    ['ground_truth', sides.ground_truth],
    ['baseline', sides.baseline ?? null],
  ];
  return firstOfEach(
    named.flatMap(([name, side]) =>
      side === null
        ? []
        : kindOf(table, side).reads.map((r) => ({
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
function requestKinds(table: Table, sides: RequestSides): SourceKind[] {
  const of = (body: SideBody | null | undefined) => (body ? requestKind(table, body) : containerSource);
  const out = [of(sides.sample), of(sides.ground_truth)];
  if (sides.baseline) out.push(of(sides.baseline));
  return out.filter((k): k is SourceKind => k !== undefined);
}

/**
 * The API's view of a planned side. A side of a kind this registry does not know (a plan written by a
 * newer version) is shown by its type and range alone: reading a run never fails on it, executing it does.
 */
function sideView(table: Table, side: PlannedSide | null): SideView | null {
  if (!side) return null;
  const known = table.has(side.type) || (!isGenerated(side) && side.shape === 'eval');
  return known ? kindOf(table, side).view(side) : { type: side.type, range: formatRange(side.range) };
}

/** The side whose models define a run's launches: the generated one of sample and ground truth. */
export function generatedSide(sides: RunPlan['sides']): 'sample' | 'ground_truth' | null {
  return isGenerated(sides.sample) ? 'sample' : isGenerated(sides.ground_truth) ? 'ground_truth' : null;
}

// ---- The engine's ports ------------------------------------------------------------------------------

/**
 * The ground-truth rule, decided here once: a ground truth that is the very same source and slice as the
 * sample, of a kind whose items are no reference for themselves (task logs), gives scorers none.
 */
function noReference(table: Table, sides: RunPlan['sides']): boolean {
  const { sample, ground_truth: truth } = sides;
  if (isGenerated(sample) || isGenerated(truth)) return false;
  return (
    kindOf(table, truth).selfIsNoReference === true &&
    kindOf(table, sample) === kindOf(table, truth) &&
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

function sourcePorts(table: Table, db: Kysely<Database>): SourcePorts {
  return {
    readItems: (side, range) => {
      const kind = kindOf(table, side);
      if (!kind.read) throw new Error(`a ${kind.type} side has no items to read`);
      return kind.read(db, side, range);
    },
    countItems: (side) => {
      const kind = kindOf(table, side);
      if (!kind.count) throw new Error(`a ${kind.type} side has no items to count`);
      return kind.count(db, side);
    },
    generation: (side) => {
      const kind = kindOf(table, side);
      if (!kind.generation) throw new Error(`a ${kind.type} side does not generate`);
      return kind.generation(side);
    },
    noReference: (sides) => noReference(table, sides),
  };
}

// ---- The registry ------------------------------------------------------------------------------------

/** The kinds one app knows, and every rule that depends on a side's kind. */
export interface SourceRegistry {
  /** Every kind, in registration order. */
  all(): SourceKind[];
  /** The kind of that name (UnknownSourceKind when none is registered). */
  kind(type: string): SourceKind;
  /** The kind of a planned side (UnknownSourceKind when none is registered). */
  kindOf(side: PlannedSide): SourceKind;
  /** The kind a request's side names, when a request may name it; a side without `type` generates. */
  requestKind(body: SideBody): SourceKind | undefined;
  /** A run request's sides' problems (contract 4.3), all at once. */
  sidesIssues(sides: RequestSides): ValidationIssue[];
  /** A request's side resolved to a planned side; omitted: the container's logs. */
  resolveSide(
    ctx: ResolveContext,
    projectId: string,
    name: SideName,
    body: SideBody | null | undefined,
    containerId: string,
  ): Promise<PlannedSide>;
  /** The kinds of a request's sides; an omitted sample or ground truth reads the container's task logs. */
  requestKinds(sides: RequestSides): SourceKind[];
  /** The kinds a plan's sides read. */
  planKinds(sides: RunPlan['sides']): SourceKind[];
  /** What reading these kinds needs (`creating`: and creating a run over them), each permission once. */
  readNeeds(kinds: readonly SourceKind[], creating?: boolean): Need[];
  /** What reading a run's samples needs, each side's reads said of that side. */
  sampleNeeds(sides: RunPlan['sides']): Need[];
  /** The API's view of a planned side (an unknown kind: its type and range alone). */
  sideView(side: PlannedSide | null): SideView | null;
  /** Whether any of the sides reads recorded traffic (creation then waits for the task-log writer). */
  readsRecorded(sides: readonly (PlannedSide | null)[]): boolean;
  /** The kind an OpenAI eval run's `data_source.source.type` stands for (undefined: none). */
  evalSourceKind(sourceType: string): SourceKind | undefined;
  /** What the engine counts, reads and generates items through. */
  ports(db: Kysely<Database>): SourcePorts;
}

/**
 * A registry of these kinds (by default the built-in ones); two kinds of one name are refused. A test or
 * a deployment that needs another kind builds its own registry with it and hands it to the app.
 */
export function createSourceRegistry(kinds: readonly SourceKind[] = BUILT_IN_SOURCES): SourceRegistry {
  const table = new Map<string, SourceKind>();
  for (const kind of kinds) {
    const taken = table.get(kind.type);
    if (taken && taken !== kind) throw new Error(`a source kind '${kind.type}' is already registered`);
    table.set(kind.type, kind);
  }
  return Object.freeze({
    all: () => [...table.values()],
    kind: (type: string) => named(table, type),
    kindOf: (side: PlannedSide) => kindOf(table, side),
    requestKind: (body: SideBody) => requestKind(table, body),
    sidesIssues: (sides: RequestSides) => sidesIssues(table, sides),
    resolveSide: (...args: Parameters<SourceRegistry['resolveSide']>) => resolveSide(table, ...args),
    requestKinds: (sides: RequestSides) => requestKinds(table, sides),
    planKinds: (sides: RunPlan['sides']) =>
      [sides.sample, sides.ground_truth, ...(sides.baseline ? [sides.baseline] : [])].map((s) =>
        kindOf(table, s),
      ),
    readNeeds: (list: readonly SourceKind[], creating?: boolean) => readNeeds(table, list, creating),
    sampleNeeds: (sides: RunPlan['sides']) => sampleNeeds(table, sides),
    sideView: (side: PlannedSide | null) => sideView(table, side),
    readsRecorded: (sides: readonly (PlannedSide | null)[]) =>
      sides.some((s) => s !== null && kindOf(table, s).recorded === true),
    evalSourceKind: (sourceType: string) =>
      [...table.values()].find((k) => k.eval?.sourceType === sourceType),
    ports: (db: Kysely<Database>) => sourcePorts(table, db),
  });
}
