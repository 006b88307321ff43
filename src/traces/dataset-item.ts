import type { Kysely } from 'kysely';
import type { Drafted } from '../catalog/datasets/origins.js';
import { logDraft } from '../catalog/logs/dataset-item.js';
import type { Database } from '../db/schema.js';
import { ApiError } from '../shared/errors.js';
import {
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
} from '../shared/genai-attributes.js';
import { parseJson } from '../shared/json.js';
import { getTrace } from './reads.js';

/** The trace of a span of the project (an ingested span, or a gateway call by its span id or log id). */
async function traceOf(db: Kysely<Database>, projectId: string, spanId: string): Promise<string | null> {
  const span = await db
    .selectFrom('spans')
    .select('trace_id')
    .where('project_id', '=', projectId)
    .where('span_id', '=', spanId.toLowerCase())
    .executeTakeFirst();
  if (span) return span.trace_id;
  const log = await db
    .selectFrom('task_logs')
    .select('trace_id')
    .where('project_id', '=', projectId)
    .where((eb) => eb.or([eb('span_id', '=', spanId), eb('id', '=', spanId)]))
    .executeTakeFirst();
  return log?.trace_id ?? null;
}

const recorded = (v: unknown): unknown => (typeof v === 'string' ? parseJson<unknown>(v, v) : (v ?? null));

/**
 * A trace's span as a dataset item. A model call is its task log (input: the request messages, output:
 * the answer); another span (a tool execution, an agent step) gives its recorded input and output
 * attributes (GenAI: tool call arguments and result, input and output messages; OpenInference:
 * `input.value`, `output.value`). The metadata names the trace, the span and its operation.
 */
export async function spanDraft(
  db: Kysely<Database>,
  projectId: string,
  spanId: string,
  traceId?: string,
): Promise<Drafted | null> {
  const trace = traceId ?? (await traceOf(db, projectId, spanId));
  if (trace === null) return null;
  const detail = await getTrace(db, projectId, trace).catch((err: unknown) => {
    if (err instanceof ApiError && err.code === 'not_found') return null;
    throw err;
  });
  const span = detail?.spans.find((s) => s.span_id === spanId.toLowerCase() || s.span_id === spanId);
  if (!detail || !span) return null;
  const where = {
    trace_id: detail.id,
    span_id: span.span_id,
    span_name: span.name,
    operation: span.operation,
  };
  const logId = span.model_call?.task_log_id ?? null;
  const logged = logId === null ? null : await logDraft(db, projectId, logId);
  if (logged) {
    const { draft } = logged;
    return {
      draft: {
        ...draft,
        metadata: { ...draft.metadata, ...where },
        origin: { kind: 'span', id: span.span_id, trace_id: detail.id, task_log_id: logId },
      },
      needs: [],
    };
  }
  const a = span.attributes as Record<string, unknown>;
  const input = a[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] ?? a[ATTR_GEN_AI_INPUT_MESSAGES] ?? a['input.value'];
  const output = a[ATTR_GEN_AI_TOOL_CALL_RESULT] ?? a[ATTR_GEN_AI_OUTPUT_MESSAGES] ?? a['output.value'];
  const tool = a[ATTR_GEN_AI_TOOL_NAME];
  return {
    draft: {
      input: recorded(input),
      output: recorded(output),
      expected: null,
      metadata: { ...where, ...(typeof tool === 'string' ? { tool } : {}), status: span.status.code },
      origin: { kind: 'span', id: span.span_id, trace_id: detail.id },
    },
    needs: [],
  };
}
