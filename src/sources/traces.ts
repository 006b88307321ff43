import type { Kysely } from 'kysely';
import { CONTENT_PERMISSION } from '../auth/content.js';
import type { Item, Range } from '../catalog/items.js';
import type { Database } from '../db/schema.js';
import type { ReadSide } from '../engine/plan.js';
import { sessionLogs } from '../sessions/service.js';
import type { TranscriptToolCall } from '../sessions/transcript.js';
import {
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
} from '../shared/genai-attributes.js';
import { isObject, parseJson } from '../shared/json.js';
import { conversationItem, projectOf, resolveFilteredContainer } from './conversation.js';
import type { SourceKind } from './types.js';
import { refView } from './view.js';

const TYPE = 'traces';

/** The container's traces the side's filter keeps (since, until, model, errors), as a query. */
function traceQuery(db: Kysely<Database>, projectId: string, side: ReadSide) {
  const f = side.filter ?? {};
  let q = db.selectFrom('traces').where('project_id', '=', projectId).where('container_id', '=', side.ref);
  if (typeof f.since === 'string') q = q.where('started_at', '>=', f.since);
  if (typeof f.until === 'string') q = q.where('started_at', '<', f.until);
  if (f.errors === true) q = q.where('error_count', '>', 0);
  if (f.errors === false) q = q.where('error_count', '=', 0);
  if (typeof f.model === 'string') {
    const model = f.model;
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('spans')
          .select('spans.span_id')
          .whereRef('spans.project_id', '=', 'traces.project_id')
          .whereRef('spans.trace_id', '=', 'traces.trace_id')
          .where('spans.model', '=', model),
      ),
    );
  }
  return q;
}

const text = (v: unknown): string | null =>
  v === undefined || v === null ? null : typeof v === 'string' ? v : JSON.stringify(v);

/**
 * The trace's tool executions (`execute_tool` spans, GenAI conventions) as tool calls: the tool's name,
 * its call id, arguments and result where the emitter recorded them; the turn is the last model call that
 * started before the tool did.
 */
async function toolSpans(
  db: Kysely<Database>,
  projectId: string,
  traceId: string,
  callStarts: string[],
): Promise<TranscriptToolCall[]> {
  const rows = await db
    .selectFrom('spans')
    .select(['span_id', 'name', 'attributes', 'started_at'])
    .where('project_id', '=', projectId)
    .where('trace_id', '=', traceId)
    .where('operation', '=', 'execute_tool')
    .orderBy('started_at')
    .execute();
  return rows.map((r) => {
    const a = parseJson<Record<string, unknown>>(r.attributes, {});
    const args = a[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS];
    const turn = callStarts.filter((s) => s <= r.started_at).length - 1;
    return {
      id: text(a[ATTR_GEN_AI_TOOL_CALL_ID]) ?? r.span_id,
      name: text(a[ATTR_GEN_AI_TOOL_NAME]) ?? r.name,
      arguments: typeof args === 'string' ? parseJson<unknown>(args, args) : (args ?? null),
      result: text(a[ATTR_GEN_AI_TOOL_CALL_RESULT]),
      turn: Math.max(0, turn),
    };
  });
}

/**
 * A container's traces (OTLP ingest and gateway calls that carried a `traceparent`), one position per
 * trace, oldest first (by start, then id): the trace's model calls as a conversation (input = the first
 * user message, output = the last answer) and its tool executions in the trajectory. The filter (since,
 * until, model, errors) is fixed when the run is created; `until` defaults to that moment.
 */
export const tracesSource: SourceKind = {
  type: TYPE,
  request: {
    fields: ['container'],
    optional: ['filter'],
    issues: (name, body) =>
      ['min_turns', 'max_turns', 'sessions', 'tools']
        .filter((k) => isObject(body.filter) && body.filter[k] !== undefined)
        .map((k) => ({
          loc: ['body', name, 'filter', k],
          msg: `'${k}' filters sessions or tool steps, not traces`,
          type: 'value_error',
        })),
    resolve: resolveFilteredContainer(TYPE),
  },
  reads: [{ permission: CONTENT_PERMISSION.trace, what: "a container's traces" }],
  recorded: true,
  // A trace is no reference for itself: the same traces as ground truth give scorers none.
  selfIsNoReference: true,
  async count(db, side) {
    const projectId = await projectOf(db, side.ref);
    if (projectId === null) return 0;
    const row = await traceQuery(db, projectId, side)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  },
  async read(db, side, range: Range) {
    const projectId = await projectOf(db, side.ref);
    if (projectId === null || range.end <= range.start) return [];
    const rows = await traceQuery(db, projectId, side)
      .select(['trace_id', 'span_count'])
      .orderBy('started_at')
      .orderBy('trace_id')
      .limit(range.end - range.start)
      .offset(range.start)
      .execute();
    const items: Item[] = [];
    for (const row of rows) {
      const logs = await sessionLogs(db, { traceId: row.trace_id, containerId: side.ref });
      const tools = await toolSpans(
        db,
        projectId,
        row.trace_id,
        logs.map((l) => l.created_at),
      );
      items.push(
        conversationItem(
          row.trace_id,
          logs,
          { trace_id: row.trace_id, span_count: Number(row.span_count) },
          tools,
        ),
      );
    }
    return items;
  },
  view: refView('container', TYPE),
  itemPage: 'traces',
};
