import type { Kysely } from 'kysely';
import type { Permission } from '../auth/permissions.js';
import type { Item, Range } from '../catalog/items.js';
import type { Database } from '../db/schema.js';
import type { GenerateSide, PlannedSide, ReadSide, SideName } from '../engine/plan.js';
import type { Generation } from '../engine/positions.js';

/** The request's body for one side of a run (`sample`, `ground_truth`, `baseline`): its kind's fields. */
export type SideBody = { type?: string | undefined; range?: string | null | undefined } & Readonly<
  Record<string, unknown>
>;

/** What resolving a side may look up in the caller's project. */
export interface ResolveContext {
  db: Kysely<Database>;
  findDataset(projectId: string, ref: string): Promise<{ id: string; version?: number } | undefined>;
  /** Resolves a model the side names: 404 naming it (at `loc`) when the project has no such model. */
  checkModel(projectId: string, ref: string, loc: (string | number)[]): Promise<void>;
}

/** One side of a run request, for its kind to resolve. */
export interface SideRequest {
  projectId: string;
  name: SideName;
  body: SideBody;
  /** The side's range, parsed (the contract's default when the body gives none). */
  range: Range;
}

/** A permission reading a side needs, and what the side reads (the 403's message names it). */
export interface ReadNeed {
  permission: Permission;
  /** What the side's items are, as a noun: "a container's task logs". */
  what: string;
}

/** A permission creating a run over a side needs besides, and why. */
export interface CreateNeed {
  permission: Permission;
  why: string;
}

/** The API's view of a side (`sample`, `ground_truth`, `baseline` of a run). */
export interface SideView {
  type: string;
  dataset?: string;
  /** A dataset side's version and split, fixed at the run's creation. */
  version?: number;
  split?: string;
  container?: string;
  models?: string[];
  /** An experiment's prompt versions (labels resolved when the run was created). */
  prompts?: { id: string; name: string; version: number; label: string | null }[];
  /** A generate side's sampling parameters (over a prompt version's own). */
  parameters?: Record<string, unknown>;
  /** A simulate side's simulated user, user messages at most, and tools. */
  user_model?: string;
  max_turns?: number;
  tools?: string;
  range: string;
}

/** Where the rows of an OpenAI eval run come from, for the kinds that feed eval runs. */
export interface EvalRowsSource {
  /** The `data_source.source.type` of the OpenAI request this kind stands for. */
  sourceType: string;
  /** `file`: an uploaded file read as it is; `inline`: the request's rows; `selected`: chosen when created. */
  rows: 'file' | 'inline' | 'selected';
}

/**
 * A kind of data source: everything the service knows about it, in one place. Run creation validates and
 * resolves a side through its kind, checks the permissions its kind needs, the engine counts and reads
 * (or generates) its items through it, and the API shows it through it. Adding a kind is one file with
 * one of these, listed in the registry (`BUILT_IN_SOURCES`).
 */
export interface SourceKind {
  /** The kind's name: a planned side's `type`. */
  readonly type: string;
  /** A kind a run request may name: the body's fields it takes, and how it resolves to a planned side. */
  readonly request?: {
    /** The side body's fields the kind requires (every other source field is refused). */
    readonly fields: readonly string[];
    /** Fields the kind takes when given (not required). */
    readonly optional?: readonly string[];
    /** A kind whose sides generate: a run needs at least one side that does not. */
    readonly generates?: boolean;
    /** Checks of the body beyond required and forbidden fields (the registry reports them with the rest). */
    issues?(name: SideName, body: SideBody): { loc: (string | number)[]; msg: string; type: string }[];
    resolve(ctx: ResolveContext, side: SideRequest): Promise<PlannedSide>;
  };
  /** What reading the side's items needs (creating a run over it, reading its samples or output items). */
  readonly reads: readonly ReadNeed[];
  /** What creating a run with such a side needs besides (a generate side calls models). */
  readonly creates?: readonly CreateNeed[];
  /** Sides over recorded traffic: run creation first waits for the task-log writer (read-your-writes). */
  readonly recorded?: boolean;
  /**
   * The ground-truth rule of task logs: a ground-truth side that is the very same source and slice as
   * the sample (what an omitted ground truth resolves to) is no reference, and scorers get none.
   */
  readonly selfIsNoReference?: boolean;
  /** The kinds that feed OpenAI eval runs. */
  readonly eval?: EvalRowsSource;
  /** The number of items the side's source holds (read kinds). */
  count?(db: Kysely<Database>, side: ReadSide): Promise<number>;
  /** The items of positions [range.start, range.end) of the side's source, in order (read kinds). */
  read?(db: Kysely<Database>, side: ReadSide, range: Range): Promise<Item[]>;
  /** How a generated side builds its requests (the generate kind). */
  generation?(side: GenerateSide): Generation;
  /** The API's view of the side. */
  view(side: PlannedSide): SideView;
  /**
   * The dashboard page that shows one of the side's items, its item id being the page's id (a session
   * run's items are sessions): the run's samples link there.
   */
  readonly itemPage?: 'sessions' | 'traces';
}
