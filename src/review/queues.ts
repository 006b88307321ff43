import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../db/database.js';
import type { Database } from '../db/schema.js';
import type { AnnotationQueueTable } from '../db/schema-review.js';
import { scaleOf } from '../evaluators/scale.js';
import { requireEvaluator } from '../evaluators/service.js';
import type { ListResponse, Page } from '../http/schemas.js';
import { ApiError } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { parseJson } from '../shared/json.js';
import type { Scale } from '../shared/scale.js';
import type { CreateQueue, PatchQueue, Queue } from './schemas.js';

export type QueueRow = Selectable<AnnotationQueueTable>;
type Db = Kysely<Database>;

/** A rubric evaluator as reviews need it: its id, name, scale and pass threshold. */
export interface RubricEvaluator {
  id: string;
  name: string;
  scale: Scale;
  pass_threshold: number | null;
  passing_labels: string[] | null;
}

const DEFAULT_CLAIM_SECONDS = 1800;

function nameTaken(name: string): ApiError {
  return new ApiError('conflict', `An annotation queue named '${name}' already exists in this project`, {
    name,
  });
}

/** A queue of the project by id or name; 404 otherwise (another project's queue included). */
export async function requireQueue(db: Db, projectId: string, ref: string): Promise<QueueRow> {
  const row = await db
    .selectFrom('annotation_queues')
    .selectAll()
    .where('project_id', '=', projectId)
    .where(ref.startsWith('aq_') ? 'id' : 'name', '=', ref)
    .executeTakeFirst();
  if (!row) throw ApiError.notFound('Annotation queue', ref);
  return row;
}

/** The rubric's evaluators, in order (ids resolved within the project: 422 for one that is not there). */
export async function rubricOf(
  db: Db,
  projectId: string,
  refs: readonly string[],
): Promise<RubricEvaluator[]> {
  const out: RubricEvaluator[] = [];
  for (const [i, ref] of refs.entries()) {
    let row: Awaited<ReturnType<typeof requireEvaluator>>;
    try {
      row = await requireEvaluator(db, projectId, ref);
    } catch {
      throw ApiError.invalid(['body', 'evaluators', i], `Evaluator '${ref}' not found in this project`);
    }
    const grader = parseJson<{ passing_labels?: string[] } | null>(row.grader, null);
    out.push({
      id: row.id,
      name: row.name,
      scale: scaleOf(row),
      pass_threshold: row.pass_threshold,
      passing_labels: grader?.passing_labels ?? null,
    });
  }
  if (new Set(out.map((e) => e.id)).size !== out.length) {
    throw ApiError.invalid(['body', 'evaluators'], 'An evaluator appears twice in the rubric');
  }
  return out;
}

/** The queue's rubric as stored (evaluator ids), resolved now. */
export function queueRubric(db: Db, queue: QueueRow): Promise<RubricEvaluator[]> {
  return rubricOf(db, queue.project_id, parseJson<string[]>(queue.evaluators, []));
}

async function countsOf(db: Db, queueId: string): Promise<Queue['counts']> {
  const [states, reviews] = await Promise.all([
    db
      .selectFrom('annotation_items')
      .select(['state', (eb) => eb.fn.countAll<number | string>().as('n')])
      .where('queue_id', '=', queueId)
      .groupBy('state')
      .execute(),
    db
      .selectFrom('annotation_reviews')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('queue_id', '=', queueId)
      .where('superseded_by', 'is', null)
      .executeTakeFirstOrThrow(),
  ]);
  const by = (s: string) => Number(states.find((r) => r.state === s)?.n ?? 0);
  const open = by('open');
  const done = by('done');
  const flagged = by('flagged');
  return { total: open + done + flagged, open, done, flagged, reviews: Number(reviews.n) };
}

export async function toQueue(db: Db, row: QueueRow): Promise<Queue> {
  const ids = parseJson<string[]>(row.evaluators, []);
  const evaluators = await db
    .selectFrom('evaluators')
    .select(['id', 'name', 'type', 'scale', 'grader', 'mode'])
    .where('id', 'in', ids.length ? ids : [''])
    .execute();
  const byId = new Map(evaluators.map((e) => [e.id, e]));
  return {
    object: 'annotation_queue',
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    description: row.description,
    rubric: {
      // An evaluator deleted since stays in the rubric by id, with no scale to score on.
      evaluators: ids.map((id) => {
        const e = byId.get(id);
        return { id, name: e?.name ?? id, scale: e ? scaleOf(e) : {} };
      }),
      comment: row.comment === 1,
    },
    reviewers_per_item: row.reviewers_per_item,
    claim_seconds: row.claim_seconds,
    counts: await countsOf(db, row.id),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export async function createQueue(db: Db, projectId: string, body: CreateQueue): Promise<Queue> {
  const rubric = await rubricOf(db, projectId, body.evaluators);
  const now = nowIso();
  const row: QueueRow = {
    id: newId('aq'),
    project_id: projectId,
    name: body.name,
    description: body.description ?? null,
    evaluators: JSON.stringify(rubric.map((e) => e.id)),
    comment: body.comment ? 1 : 0,
    reviewers_per_item: body.reviewers_per_item ?? 1,
    claim_seconds: body.claim_seconds ?? DEFAULT_CLAIM_SECONDS,
    created_at: now,
    updated_at: now,
  };
  try {
    await db.insertInto('annotation_queues').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(body.name);
    throw err;
  }
  return toQueue(db, row);
}

export async function listQueues(db: Db, projectId: string, page: Page): Promise<ListResponse<Queue>> {
  const [rows, count] = await Promise.all([
    db
      .selectFrom('annotation_queues')
      .selectAll()
      .where('project_id', '=', projectId)
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    db
      .selectFrom('annotation_queues')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('project_id', '=', projectId)
      .executeTakeFirstOrThrow(),
  ]);
  const data: Queue[] = [];
  for (const row of rows) data.push(await toQueue(db, row));
  return { object: 'list', data, total: Number(count.n) };
}

export async function patchQueue(db: Db, projectId: string, ref: string, body: PatchQueue): Promise<Queue> {
  const current = await requireQueue(db, projectId, ref);
  const patch: Partial<QueueRow> = { updated_at: nowIso() };
  if (body.name !== undefined) patch.name = body.name;
  if (body.description !== undefined) patch.description = body.description;
  if (body.comment !== undefined) patch.comment = body.comment ? 1 : 0;
  if (body.claim_seconds !== undefined) patch.claim_seconds = body.claim_seconds;
  if (body.evaluators !== undefined) {
    const rubric = await rubricOf(db, projectId, body.evaluators);
    patch.evaluators = JSON.stringify(rubric.map((e) => e.id));
  }
  try {
    await db.updateTable('annotation_queues').set(patch).where('id', '=', current.id).execute();
  } catch (err) {
    if (isUniqueViolation(err) && body.name !== undefined) throw nameTaken(body.name);
    throw err;
  }
  return toQueue(db, { ...current, ...patch });
}

/** Deletes a queue with its items, claims and reviews (the reviews are its human scores: gone with it). */
export async function deleteQueue(db: Db, projectId: string, ref: string): Promise<{ id: string }> {
  const row = await requireQueue(db, projectId, ref);
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('annotation_settlements').where('queue_id', '=', row.id).execute();
    await tx.deleteFrom('annotation_reviews').where('queue_id', '=', row.id).execute();
    await tx.deleteFrom('annotation_assignments').where('queue_id', '=', row.id).execute();
    await tx.deleteFrom('annotation_items').where('queue_id', '=', row.id).execute();
    await tx.deleteFrom('annotation_queues').where('id', '=', row.id).execute();
  });
  return { id: row.id };
}
