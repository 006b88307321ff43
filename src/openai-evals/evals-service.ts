import type { Kysely } from 'kysely';
import type { Database, EvalTable } from '../db/schema.js';
import type { SubGrader } from '../scoring/graders/schemas.js';
import { ApiError } from '../shared/errors.js';
import { newId, nowIso } from '../shared/ids.js';
import { type JsonObject, parseJson } from '../shared/json.js';
import { badRequest } from './errors.js';
import { createIssues, updateIssues } from './evals-validation.js';

/** `data_source_config` as answered: the item schema (and sample schema) as one derived `schema`. */
export type DataSourceConfig =
  | { type: 'custom'; schema: JsonObject }
  | { type: 'logs' | 'stored_completions'; schema: JsonObject; metadata: Record<string, string> | null };

export interface EvalObject {
  id: string;
  object: 'eval';
  created_at: number;
  data_source_config: DataSourceConfig;
  metadata: Record<string, string> | null;
  name: string;
  testing_criteria: SubGrader[];
}

/** The sample of a stored or generated chat completion, as OpenAI's derived schemas describe it. */
const SAMPLE_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    model: { type: 'string' },
    choices: { type: 'array', items: { type: 'object' } },
    output_text: { type: 'string' },
    output_json: { type: 'object' },
    output_tools: { type: 'array', items: { type: 'object' } },
  },
  required: ['model', 'choices'],
};

const LOGS_ITEM_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    input: { type: 'array', items: { type: 'object' } },
    metadata: { type: 'object' },
    model: { type: 'string' },
  },
};

/** The schema an eval's config answers with: `{item, sample}` as OpenAI derives it. */
export function derivedConfig(config: JsonObject): DataSourceConfig {
  if (config.type === 'custom') {
    const withSample = config.include_sample_schema === true;
    const schema: JsonObject = {
      type: 'object',
      properties: {
        item: config.item_schema as JsonObject,
        ...(withSample ? { sample: SAMPLE_SCHEMA } : {}),
      },
      required: withSample ? ['item', 'sample'] : ['item'],
    };
    return { type: 'custom', schema };
  }
  return {
    type: config.type === 'logs' ? 'logs' : 'stored_completions',
    schema: {
      type: 'object',
      properties: { item: LOGS_ITEM_SCHEMA, sample: SAMPLE_SCHEMA },
      required: ['item', 'sample'],
    },
    metadata: (config.metadata as Record<string, string> | undefined) ?? null,
  };
}

const unix = (iso: string) => Math.floor(Date.parse(iso) / 1000);

export function toEval(row: EvalTable): EvalObject {
  return {
    id: row.id,
    object: 'eval',
    created_at: unix(row.created_at),
    data_source_config: derivedConfig(parseJson<JsonObject>(row.data_source_config, {})),
    metadata: parseJson<Record<string, string> | null>(row.metadata, null),
    name: row.name,
    testing_criteria: parseJson<SubGrader[]>(row.testing_criteria, []),
  };
}

export async function findEvalRow(db: Kysely<Database>, projectId: string, id: string) {
  return db
    .selectFrom('evals')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The eval, in the caller's project (another project's eval is not found). */
export async function requireEvalRow(
  db: Kysely<Database>,
  projectId: string,
  id: string,
): Promise<EvalTable> {
  const row = await findEvalRow(db, projectId, id);
  if (!row) throw ApiError.notFound('Eval', id);
  return row;
}

export async function createEval(
  db: Kysely<Database>,
  projectId: string,
  body: unknown,
): Promise<EvalObject> {
  const issues = createIssues(body);
  if (issues.length) throw badRequest(issues);
  const b = body as JsonObject;
  const now = nowIso();
  const row: EvalTable = {
    id: newId('eval'),
    project_id: projectId,
    name: typeof b.name === 'string' ? b.name : '',
    metadata: b.metadata ? JSON.stringify(b.metadata) : null,
    data_source_config: JSON.stringify(b.data_source_config),
    testing_criteria: JSON.stringify(b.testing_criteria),
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('evals').values(row).execute();
  return toEval(row);
}

export async function updateEval(
  db: Kysely<Database>,
  projectId: string,
  id: string,
  body: unknown,
): Promise<EvalObject> {
  const issues = updateIssues(body ?? {});
  if (issues.length) throw badRequest(issues);
  await requireEvalRow(db, projectId, id);
  const b = (body ?? {}) as JsonObject;
  const set: Partial<EvalTable> = { updated_at: nowIso() };
  if (typeof b.name === 'string') set.name = b.name;
  if (b.metadata !== undefined) set.metadata = b.metadata === null ? null : JSON.stringify(b.metadata);
  await db.updateTable('evals').set(set).where('id', '=', id).where('project_id', '=', projectId).execute();
  return toEval(await requireEvalRow(db, projectId, id));
}

export async function deleteEval(db: Kysely<Database>, projectId: string, id: string) {
  await requireEvalRow(db, projectId, id);
  await db.deleteFrom('eval_runs').where('eval_id', '=', id).execute();
  await db.deleteFrom('evals').where('id', '=', id).where('project_id', '=', projectId).execute();
  return { object: 'eval.deleted', deleted: true, eval_id: id };
}

export interface CursorQuery {
  after?: string;
  limit?: number;
  order?: 'asc' | 'desc';
}

/** OpenAI's cursor page: `data`, `first_id`, `last_id`, `has_more` over rows fetched one past the limit. */
export function cursorPage<T extends { id: string }>(rows: T[], limit: number) {
  const data = rows.slice(0, limit);
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: rows.length > limit,
  };
}

export async function listEvals(
  db: Kysely<Database>,
  projectId: string,
  query: CursorQuery & { order_by?: 'created_at' | 'updated_at' },
) {
  const limit = query.limit ?? 20;
  const order = query.order ?? 'asc';
  const column = query.order_by ?? 'created_at';
  const cmp = order === 'desc' ? '<' : '>';
  let q = db.selectFrom('evals').selectAll().where('project_id', '=', projectId);
  if (query.after !== undefined) {
    const after = await findEvalRow(db, projectId, query.after);
    if (!after)
      throw badRequest([{ loc: ['query', 'after'], msg: `No eval '${query.after}'`, type: 'value_error' }]);
    const pivot = after[column];
    q = q.where((eb) =>
      eb.or([eb(column, cmp, pivot), eb.and([eb(column, '=', pivot), eb('id', cmp, after.id)])]),
    );
  }
  const rows = await q
    .orderBy(column, order)
    .orderBy('id', order)
    .limit(limit + 1)
    .execute();
  return cursorPage(rows.map(toEval), limit);
}
