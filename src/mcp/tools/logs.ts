import { z } from 'zod';
import type { TaskLog } from '../../catalog/logs/schemas.js';
import { listLogs, settled, settleWithin } from '../../catalog/logs/service.js';
import { requireEvaluator } from '../../evaluators/service.js';
import { getSession } from '../../sessions/service.js';
import { ApiError } from '../../shared/errors.js';
import { getTrace } from '../../traces/reads.js';
import {
  compact,
  defineTool,
  links,
  type McpTool,
  nextCursor,
  PageArgs,
  pageFrom,
  requirePermission,
  seg,
  type ToolCall,
} from '../tool.js';

const Iso = (what: string) => z.iso.datetime({ offset: true }).describe(what);

/** A task log as an agent reads it: its content cut short, without the raw request and response. */
function logSummary(call: ToolCall, log: TaskLog) {
  return {
    id: log.id,
    seq: log.seq,
    model: log.model,
    status: log.status,
    created_at: log.created_at,
    latency_ms: log.latency_ms,
    cost: log.cost,
    input: compact(log.input, 500),
    output: compact(log.output, 500),
    error: log.error,
    session_id: log.session_id ?? null,
    links: links(call, `containers/${seg(log.container_id)}`, `/v1/containers/${seg(log.container_id)}/logs`),
  };
}

const searchTaskLogs = defineTool({
  name: 'search_task_logs',
  title: 'Search task logs',
  description:
    "A container's recorded model calls in the order they were made, filtered by model, time range, text in the input or output, and an evaluator's verdict or score in runs over them.",
  permission: 'logs:read',
  readOnly: true,
  input: z
    .object({
      container: z.string().min(1).max(200).describe('Container label or id'),
      model: z.string().min(1).max(300).optional().describe('Only calls of this model'),
      since: Iso('Only calls made at or after this time (ISO 8601)').optional(),
      until: Iso('Only calls made before this time (ISO 8601)').optional(),
      text: z.string().min(1).max(500).optional().describe('Text the input or output contains'),
      evaluator: z
        .string()
        .min(1)
        .max(300)
        .optional()
        .describe('Only calls this evaluator (id or name) scored in a run'),
      passed: z
        .boolean()
        .optional()
        .describe('With evaluator: only calls it passed (true) or failed (false)'),
      min_score: z.number().optional().describe('With evaluator: only scores at or above this'),
      max_score: z.number().optional().describe('With evaluator: only scores at or below this'),
      ...PageArgs,
    })
    .strict(),
  async run(call, args) {
    const { projectId } = call.principal;
    let scored: { evaluatorId: string; passed?: boolean; minScore?: number; maxScore?: number } | undefined;
    if (args.evaluator !== undefined) {
      requirePermission(call.principal, 'evaluators:read', 'the evaluator filter reads an evaluator');
      const evaluator = await requireEvaluator(call.ports.evaluators.db, projectId, args.evaluator);
      scored = {
        evaluatorId: evaluator.id,
        ...(args.passed === undefined ? {} : { passed: args.passed }),
        ...(args.min_score === undefined ? {} : { minScore: args.min_score }),
        ...(args.max_score === undefined ? {} : { maxScore: args.max_score }),
      };
    } else if (args.passed !== undefined || args.min_score !== undefined || args.max_score !== undefined) {
      throw ApiError.invalid(
        ['evaluator'],
        'passed, min_score and max_score filter by an evaluator: name it',
      );
    }
    await settled(call.ports.logs);
    const page = pageFrom(args);
    const list = await listLogs(
      call.ports.logs.db,
      projectId,
      args.container,
      {
        ...(args.model === undefined ? {} : { model: args.model }),
        ...(args.since === undefined ? {} : { since: args.since }),
        ...(args.until === undefined ? {} : { until: args.until }),
        ...(args.text === undefined ? {} : { text: args.text }),
        ...(scored === undefined ? {} : { scored }),
      },
      page,
    );
    const next = nextCursor(page, list.data.length, list.total);
    return {
      summary: `${list.total} task log(s) match; showing ${list.data.length} from position ${page.offset}${next ? ' (more: pass next_cursor)' : ''}`,
      content: { total: list.total, logs: list.data.map((log) => logSummary(call, log)), next_cursor: next },
    };
  },
});

const getTraceTool = defineTool({
  name: 'get_trace',
  title: 'Get a trace',
  description:
    'One trace of the project: its spans as a tree (timings, status, model calls with their task logs, tokens, cost); long attribute values are cut.',
  permission: 'logs:read',
  readOnly: true,
  input: z
    .object({ trace_id: z.string().min(1).max(200).describe('The W3C trace id (32 hex digits)') })
    .strict(),
  async run(call, args) {
    await call.ports.traces.store.flush();
    const trace = await getTrace(call.ports.traces.db, call.principal.projectId, args.trace_id);
    return {
      summary: `Trace ${args.trace_id}: ${trace.spans.length} span(s)`,
      content: {
        ...(compact(trace, 1_000) as Record<string, unknown>),
        links: links(call, `traces/${seg(args.trace_id)}`, `/v1/traces/${seg(args.trace_id)}`),
      },
    };
  },
});

const getSessionTool = defineTool({
  name: 'get_session',
  title: 'Get a session',
  description:
    "A session (a conversation or an agent run): its totals, scores, and a page of its turns (messages, tool calls with arguments and results); the next page's cursor when there are more.",
  permission: 'logs:read',
  readOnly: true,
  input: z
    .object({ session: z.string().min(1).max(300).describe('Session id or key'), ...PageArgs })
    .strict(),
  async run(call, args) {
    await settleWithin(call.ports.sessions.settle);
    const page = pageFrom({ ...args, limit: args.limit ?? 10 });
    const detail = await getSession(call.ports.sessions, call.principal.projectId, args.session, {
      turns_offset: page.offset,
      turns_limit: page.limit,
    });
    const next = nextCursor(page, detail.turns.length, detail.turn_count);
    return {
      summary: `Session ${detail.id}: ${detail.turn_count} turn(s), showing ${detail.turns.length} from ${page.offset}`,
      content: {
        ...(compact(detail, 1_000) as Record<string, unknown>),
        next_cursor: next,
        links: links(call, `sessions/${seg(detail.id)}`, `/v1/sessions/${seg(detail.id)}`),
      },
    };
  },
});

export const LOG_TOOLS: readonly McpTool[] = [searchTaskLogs, getTraceTool, getSessionTool];
