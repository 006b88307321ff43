import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
import { storedResponseOf } from '../capture/stored-responses.js';
import type { Database } from '../db/schema.js';
import { RESPONSES } from '../llm/dialects/responses/index.js';
import type { ValidationIssue } from '../shared/errors.js';
import { isObject, type JsonObject, parseJson } from '../shared/json.js';
import { metadataIssues } from './evals-validation.js';
import { clientMetadataOf, isoOf, isPostgres, metadataPair } from './stored-completions-repository.js';

/*
 * The `responses` source of an eval run: the project's stored responses (task logs of the responses
 * route, not made with `store: false`, not deleted, answered), selected by the SDK's filters, each
 * applied in SQL over the log's columns (`model`, `created_at`, `metadata`) and the recorded request.
 */

type Loc = (string | number)[];

const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

/** Every filter of the SDK's `EvalResponsesSource`; anything else is refused, never ignored. */
const FIELDS: Record<string, (v: unknown) => string | null> = {
  type: () => null,
  metadata: () => null,
  model: (v) => (typeof v === 'string' ? null : 'must be a string'),
  instructions_search: (v) => (typeof v === 'string' ? null : 'must be a string'),
  created_after: (v) => (Number.isInteger(v) ? null : 'must be a Unix time in seconds'),
  created_before: (v) => (Number.isInteger(v) ? null : 'must be a Unix time in seconds'),
  reasoning_effort: (v) =>
    typeof v === 'string' && EFFORTS.includes(v) ? null : `must be one of ${EFFORTS.join(', ')}`,
  temperature: (v) => (typeof v === 'number' ? null : 'must be a number'),
  top_p: (v) => (typeof v === 'number' ? null : 'must be a number'),
  tools: (v) =>
    Array.isArray(v) && v.every((t) => typeof t === 'string') ? null : 'must be a list of tool names',
  users: (v) =>
    Array.isArray(v) && v.every((u) => typeof u === 'string') ? null : 'must be a list of user identifiers',
};

/** Every problem of a `responses` source (`null` stands for a filter not given, as in the SDK). */
export function responsesSourceIssues(source: JsonObject, loc: Loc): ValidationIssue[] {
  const issues = metadataIssues(source.metadata, [...loc, 'metadata']);
  for (const [key, value] of Object.entries(source)) {
    const check = FIELDS[key];
    if (!check) {
      issues.push({
        loc: [...loc, key],
        msg: 'Extra field not allowed: not a filter of a responses source',
        type: 'extra_forbidden',
      });
    } else if (value !== null && value !== undefined) {
      const msg = check(value);
      if (msg) issues.push({ loc: [...loc, key], msg, type: 'value_error' });
    }
  }
  return issues;
}

/** The route of the calls whose answers are stored responses, as a literal of the query. */
const ROUTE = sql.lit(RESPONSES.name);

/** A stored response (the route and `store` as the gateway writes them on the log's metadata). */
function storedResponse(db: Kysely<Database>): Expression<SqlBool> {
  return isPostgres(db)
    ? sql<SqlBool>`((metadata::jsonb ->> 'route') = ${ROUTE} and coalesce(metadata::jsonb -> 'store', 'true'::jsonb) <> 'false'::jsonb)`
    : sql<SqlBool>`(json_extract(metadata, '$.route') = ${ROUTE} and coalesce(json_type(metadata, '$.store'), '') <> 'false')`;
}

/** A text field of the recorded request (`path` like `{reasoning,effort}`), null when absent. */
function requestText(db: Kysely<Database>, path: string[]) {
  return isPostgres(db)
    ? sql<string | null>`(request::json #>> ${sql.lit(`{${path.join(',')}}`)})`
    : sql<string | null>`json_extract(request, ${sql.lit(`$.${path.join('.')}`)})`;
}

/** A number field of the recorded request, null when absent or not a number. */
function requestNumber(db: Kysely<Database>, key: string) {
  return isPostgres(db)
    ? sql<
        number | null
      >`(case when json_typeof(request::json -> ${sql.lit(key)}) = 'number' then (request::json ->> ${sql.lit(key)})::float8 end)`
    : sql<
        number | null
      >`(case when json_type(request, ${sql.lit(`$.${key}`)}) in ('integer', 'real') then json_extract(request, ${sql.lit(`$.${key}`)}) end)`;
}

/** The request declared at least one of the tools named (a function tool by name, others by type). */
function usesTools(db: Kysely<Database>, names: string[]): Expression<SqlBool> {
  const list = sql.join(names);
  return isPostgres(db)
    ? sql<SqlBool>`exists (select 1 from json_array_elements(case when json_typeof(request::json -> 'tools') = 'array' then request::json -> 'tools' else '[]'::json end) as t(value)
        where (case when json_typeof(t.value) = 'object' then coalesce(t.value ->> 'name', t.value ->> 'type') end) in (${list}))`
    : sql<SqlBool>`exists (select 1 from json_each(task_logs.request, '$.tools') as t
        where (case when t.type = 'object' then coalesce(json_extract(t.value, '$.name'), json_extract(t.value, '$.type')) end) in (${list}))`;
}

const given = <T>(v: unknown, ok: (x: unknown) => x is T): T | undefined =>
  v !== null && v !== undefined && ok(v) ? v : undefined;
const isString = (x: unknown): x is string => typeof x === 'string';
const isNumber = (x: unknown): x is number => typeof x === 'number';
const isStrings = (x: unknown): x is string[] => Array.isArray(x);

/** The rows of a checked `responses` source, oldest first: `{item, sample}` per stored response. */
export async function selectResponseRows(
  db: Kysely<Database>,
  projectId: string,
  source: JsonObject,
  evalFilter: Record<string, string>,
): Promise<JsonObject[]> {
  let q = db
    .selectFrom('task_logs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where(storedResponse(db))
    .where('status', '=', 'success');
  const metadata = { ...evalFilter, ...((source.metadata as Record<string, string> | null) ?? {}) };
  for (const [key, value] of Object.entries(metadata)) q = q.where(metadataPair(db, key, value));
  const model = given(source.model, isString);
  if (model !== undefined) q = q.where('model', '=', model);
  const after = given(source.created_after, isNumber);
  if (after !== undefined) q = q.where('created_at', '>=', isoOf(after));
  // Both bounds are inclusive (the SDK's words); created_at holds milliseconds.
  const before = given(source.created_before, isNumber);
  if (before !== undefined) q = q.where('created_at', '<', isoOf(before + 1));
  const search = given(source.instructions_search, isString);
  if (search !== undefined) {
    const at = isPostgres(db) ? sql.raw('strpos') : sql.raw('instr');
    q = q.where(sql<SqlBool>`${at}(lower(${requestText(db, ['instructions'])}), lower(${search})) > 0`);
  }
  const effort = given(source.reasoning_effort, isString);
  if (effort !== undefined)
    q = q.where(sql<SqlBool>`${requestText(db, ['reasoning', 'effort'])} = ${effort}`);
  for (const key of ['temperature', 'top_p'] as const) {
    const value = given(source[key], isNumber);
    if (value !== undefined) q = q.where(sql<SqlBool>`${requestNumber(db, key)} = ${value}`);
  }
  // A list filter keeps the responses matching any of its values (an empty list filters nothing).
  const users = given(source.users, isStrings);
  if (users?.length) q = q.where(sql<SqlBool>`${requestText(db, ['user'])} in (${sql.join(users)})`);
  const tools = given(source.tools, isStrings);
  if (tools?.length) q = q.where(usesTools(db, tools));
  const logs = await q.orderBy('created_at').orderBy('id').execute();
  return logs.map((log) => {
    const stored = storedResponseOf(log);
    const instructions = stored.request.instructions;
    const sent = parseJson<unknown>(log.input, []);
    const messages = (Array.isArray(sent) ? sent : []).filter(isObject);
    // The instructions went first as a system message: the item holds them apart.
    const first = messages[0];
    const input =
      typeof instructions === 'string' && first?.role === 'system' && first.content === instructions
        ? messages.slice(1)
        : messages;
    const item: JsonObject = {
      id: stored.id,
      input,
      ...(typeof instructions === 'string' ? { instructions } : {}),
      metadata: clientMetadataOf(parseJson<JsonObject>(log.metadata, {})),
      model: log.model,
    };
    return { item, sample: stored.response() };
  });
}
