import type { Kysely, Selectable } from 'kysely';
import type { Database, RunTable } from '../../db/schema.js';
import { ApiError } from '../../shared/errors.js';
import { newId, nowIso } from '../../shared/ids.js';
import type { RunPlan } from '../plan.js';
import { insertLaunches } from './chunks.js';
import { fixLayout, queueRun, startRun } from './transitions.js';

/**
 * The one birth of a run: every new `runs` row is written here, from a plan and an origin, through the
 * transitions (`queueRun`, and for a monitor's run its launch and `startRun`). The plan holds the run's
 * sides, once; the API's `sample`/`ground_truth`/`baseline` views are derived from them when read.
 *
 * A new origin (a new way for runs to come into being) is one more member of `RunOrigin` below, with
 * what its row keeps; submitting the run to its executors stays with the caller (the queue is not the
 * store's), answered the same way for every origin by `runs/service.ts` `submitOrExplain`.
 */

type Db = Kysely<Database>;

/** A run as stored: the row just written (or found, for a repeated idempotent request). */
export type StoredRun = Selectable<RunTable>;

/** A request that may be repeated: the same key with the same request hash returns the same run. */
export interface Idempotency {
  key: string | null;
  /** A hash of the request (its body in a stable form), kept to tell a retry from a reused key. */
  requestHash: string;
}

/** What every run keeps of the request that made it. */
interface Asked {
  /** The run's id where the caller needs it before the birth (eval runs name their snapshot by it). */
  id: string;
  environment: string;
  name: string | null;
  metadata: unknown;
  /** The request as the run keeps it (`config`). */
  config: unknown;
  /** Ids of the datasets the run's sides read (for "dataset in use" checks). */
  datasetIds: readonly string[];
}

/** `POST /v1/evaluation/runs`. */
export interface ApiOrigin extends Asked {
  kind: 'api';
  idempotency: Idempotency;
}

/** `POST /v1/evals/{id}/runs`: an OpenAI-style eval run. */
export interface EvalOrigin extends Asked {
  kind: 'eval';
  evalId: string;
  idempotency: Idempotency;
}

/** A monitor's long-lived run: running from its birth, its chunks come as its monitor selects calls. */
export interface MonitorOrigin extends Asked {
  kind: 'monitor';
  monitorId: string;
  /** The process the run is started by. */
  processId: string;
}

export type RunOrigin = ApiOrigin | EvalOrigin | MonitorOrigin;

/** A birth's outcome: the stored run, and whether this call created it (false: an idempotent repeat). */
export interface Birth {
  run: StoredRun;
  created: boolean;
}

const readRun = (db: Db, id: string) =>
  db.selectFrom('runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/**
 * The run a repeated request made, found by its idempotency key in the project; 409
 * `idempotency_key_reused` when the key was used with another request. Undefined when the key is new.
 */
export async function repeatedRun(
  db: Db,
  projectId: string,
  idempotency: Idempotency,
): Promise<StoredRun | undefined> {
  if (idempotency.key === null) return undefined;
  const existing = await db
    .selectFrom('runs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('idempotency_key', '=', idempotency.key)
    .executeTakeFirst();
  if (existing && existing.request_hash !== idempotency.requestHash) {
    throw new ApiError(
      'idempotency_key_reused',
      'This Idempotency-Key was used with a different request body',
      {
        run_id: existing.id,
      },
    );
  }
  return existing;
}

/** The origin of a monitor's run, else null (told apart by what it carries, not by naming its kind). */
const monitorOf = (origin: RunOrigin): MonitorOrigin | null => ('monitorId' in origin ? origin : null);

function rowOf(plan: RunPlan, origin: RunOrigin, now: string) {
  const monitor = monitorOf(origin);
  const idempotency = 'idempotency' in origin ? origin.idempotency : null;
  return {
    id: origin.id,
    project_id: plan.projectId,
    container_id: plan.containerId,
    environment: origin.environment,
    evaluators: JSON.stringify(plan.evaluators.map((e) => e.id)),
    dataset_ids: JSON.stringify([...new Set(origin.datasetIds)]),
    config: JSON.stringify(origin.config),
    metadata: origin.metadata ? JSON.stringify(origin.metadata) : null,
    name: origin.name,
    plan: JSON.stringify(plan),
    results: null,
    metrics: monitor ? null : JSON.stringify({ progress: { done: 0, total: null } }),
    spend: 0,
    error: null,
    process_id: null,
    idempotency_key: idempotency?.key ?? null,
    request_hash: idempotency?.requestHash ?? null,
    cancel_requested: 0,
    created_at: now,
    started_at: null,
    finished_at: null,
    error_at: null,
    updated_at: now,
    monitor_id: monitor?.monitorId ?? null,
  };
}

/**
 * Creates a run from its plan and origin: stored `queued` by the queue transition (a monitor's run then
 * gets its one launch and starts at once). For a request with an idempotency key already used in the
 * project, the earlier run is returned (`created: false`), or 409 for another request under that key.
 * `db` may be a transaction (a monitor is created with its run), but then without an idempotency key.
 */
export async function createRun(db: Db, plan: RunPlan, origin: RunOrigin): Promise<Birth> {
  const now = nowIso();
  if (!(await queueRun(db, rowOf(plan, origin, now)))) {
    // Another request with the same key won the race (only a keyed request gets here).
    const repeated =
      'idempotency' in origin ? await repeatedRun(db, plan.projectId, origin.idempotency) : undefined;
    if (repeated) return { run: repeated, created: false };
    throw new Error(`Run ${origin.id} was neither stored nor found by its idempotency key`);
  }
  const monitor = monitorOf(origin);
  if (monitor) {
    await fixLayout(db, origin.id, {
      positions: 0,
      expected: 0,
      offsets: { sample: 0, ground_truth: null, baseline: null },
    });
    await insertLaunches(
      db,
      plan.launches.map((l) => ({
        run_id: origin.id,
        launch_index: l.index,
        model: l.model,
        call_id: newId('job'),
      })),
    );
    await startRun(db, origin.id, { startedAt: now, totalPositions: 0, processId: monitor.processId });
  }
  return { run: await readRun(db, origin.id), created: true };
}
