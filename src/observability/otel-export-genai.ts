import type { Attributes } from '@opentelemetry/api';
import { draftOf } from '../capture/log-row.js';
import type { TaskLogRecord } from '../capture/types.js';
import { operationOf } from '../llm/dialects/registry.js';
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY,
  ATTR_GEN_AI_REQUEST_SEED,
  ATTR_GEN_AI_REQUEST_STOP_SEQUENCES,
  ATTR_GEN_AI_REQUEST_TEMPERATURE,
  ATTR_GEN_AI_REQUEST_TOP_P,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
  ATTR_GEN_AI_TOOL_DEFINITIONS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
} from '../shared/genai-attributes.js';

/**
 * A recorded gateway call as a GenAI client span of the current semantic conventions (≥ 1.37): what the
 * span carries, computed off the request path from the call's task log record.
 */
/** A score to emit as a `gen_ai.evaluation.result` event, parented to the evaluated call's span. */
export interface EvaluationEvent {
  traceId: string;
  spanId: string;
  /** The evaluator's name (`gen_ai.evaluation.name`) and id (`evalgate.evaluator.id`; null: a guard's check). */
  name: string;
  evaluatorId: string | null;
  score: number | null;
  label: string | null;
  explanation: string | null;
  responseId: string | null;
  attributes: Attributes;
  /** Epoch ms of the score. */
  timeMs: number;
}

export interface GenAiSpan {
  name: string;
  traceId: string | null;
  spanId: string | null;
  /** The caller's span (from a `traceparent`): the call's span is its child. */
  parentSpanId: string | null;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  error: { type: string; message: string } | null;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function parse(text: string | undefined): unknown {
  if (text === undefined) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A message's content as typed parts: text, tool_call, tool_call_response (GenAI ≥ 1.37 message parts). */
function partsOf(content: unknown): Json[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  const parts: Json[] = [];
  for (const p of content) {
    if (typeof p === 'string') parts.push({ type: 'text', content: p });
    else if (!isObject(p)) continue;
    else if (p.type === 'text' || p.type === 'input_text' || p.type === 'output_text')
      parts.push({ type: 'text', content: String(p.text ?? '') });
    else if (p.type === 'tool_use')
      parts.push({ type: 'tool_call', id: p.id, name: p.name, arguments: p.input });
    else if (p.type === 'tool_result')
      parts.push({ type: 'tool_call_response', id: p.tool_use_id, response: p.content });
    else parts.push({ type: String(p.type ?? 'unknown') });
  }
  return parts;
}

function toolCallParts(calls: unknown): Json[] {
  if (!Array.isArray(calls)) return [];
  return calls.filter(isObject).map((c) => {
    const fn = isObject(c.function) ? c.function : {};
    return {
      type: 'tool_call',
      id: c.id ?? null,
      name: fn.name ?? null,
      arguments: parse(String(fn.arguments)) ?? fn.arguments ?? null,
    };
  });
}

/** Chat messages as the GenAI input messages, system instructions apart. */
function inputOf(messages: unknown): { system: Json[]; input: Json[] } {
  const system: Json[] = [];
  const input: Json[] = [];
  if (!Array.isArray(messages)) return { system, input };
  for (const m of messages) {
    if (!isObject(m)) continue;
    const role = str(m.role) ?? 'user';
    if (role === 'system' || role === 'developer') {
      system.push(...partsOf(m.content));
      continue;
    }
    const parts =
      role === 'tool'
        ? [{ type: 'tool_call_response', id: m.tool_call_id ?? null, response: m.content ?? null }]
        : [...partsOf(m.content), ...toolCallParts(m.tool_calls)];
    input.push({ role, parts, ...(str(m.name) ? { name: m.name } : {}) });
  }
  return { system, input };
}

/** The answer as GenAI output messages, with its finish reasons (chat completions or Anthropic messages). */
function outputOf(response: unknown, text: string | null): { messages: Json[]; finish: string[] } {
  if (isObject(response) && Array.isArray(response.choices)) {
    const messages: Json[] = [];
    const finish: string[] = [];
    for (const c of response.choices) {
      if (!isObject(c)) continue;
      const m = isObject(c.message) ? c.message : {};
      const reason = str(c.finish_reason);
      if (reason) finish.push(reason);
      messages.push({
        role: str(m.role) ?? 'assistant',
        parts: [...partsOf(m.content), ...toolCallParts(m.tool_calls)],
        finish_reason: reason ?? 'stop',
      });
    }
    return { messages, finish };
  }
  if (isObject(response) && Array.isArray(response.content)) {
    const reason = str(response.stop_reason);
    return {
      messages: [{ role: 'assistant', parts: partsOf(response.content), finish_reason: reason ?? 'stop' }],
      finish: reason ? [reason] : [],
    };
  }
  if (text === null) return { messages: [], finish: [] };
  return { messages: [{ role: 'assistant', parts: partsOf(text), finish_reason: 'stop' }], finish: [] };
}

const SLUG_PROVIDERS: Readonly<Record<string, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
};

/**
 * The provider by the model slug's prefix (`openai/…`, `anthropic/…`; `gemini/…` is `gcp.gemini`, the
 * conventions' name), when no resolver knows better.
 */
export function providerOfSlug(model: string): string | null {
  const prefix = model.includes('/') ? model.slice(0, model.indexOf('/')) : '';
  return Object.hasOwn(SLUG_PROVIDERS, prefix) ? (SLUG_PROVIDERS[prefix] ?? null) : null;
}

const REQUEST_NUMBERS = [
  ['temperature', ATTR_GEN_AI_REQUEST_TEMPERATURE],
  ['top_p', ATTR_GEN_AI_REQUEST_TOP_P],
  ['max_tokens', ATTR_GEN_AI_REQUEST_MAX_TOKENS],
  ['max_completion_tokens', ATTR_GEN_AI_REQUEST_MAX_TOKENS],
  ['frequency_penalty', ATTR_GEN_AI_REQUEST_FREQUENCY_PENALTY],
  ['presence_penalty', ATTR_GEN_AI_REQUEST_PRESENCE_PENALTY],
  ['seed', ATTR_GEN_AI_REQUEST_SEED],
] as const;

function setIf(attributes: Attributes, key: string, value: string | number | string[] | null): void {
  if (value !== null && !(Array.isArray(value) && value.length === 0)) attributes[key] = value;
}

/**
 * The span of one recorded call. `provider` is the resolved provider name (null: from the slug);
 * message content only with `captureContent`.
 */
export function genAiSpanOf(
  record: TaskLogRecord,
  provider: string | null,
  captureContent: boolean,
): GenAiSpan {
  const draft = draftOf(record);
  const request = record.requestText !== undefined ? parse(record.requestText) : (record.request ?? null);
  const response = parse(draft.response);
  const operation = operationOf(record.metadata.route);
  const responseModel = isObject(response) ? str(response.model) : null;
  const usage: unknown = record.usage ?? (isObject(response) ? response.usage : null);
  const { messages: output, finish } = outputOf(response, draft.output ?? null);
  const attributes: Attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: operation,
    [ATTR_GEN_AI_REQUEST_MODEL]: record.model,
    'evalgate.task_log.id': record.id,
    'evalgate.project.id': record.projectId,
    'evalgate.container.id': record.containerId,
    'evalgate.cost_usd': Number.isFinite(record.cost) ? record.cost : 0,
  };
  setIf(attributes, ATTR_GEN_AI_PROVIDER_NAME, provider ?? providerOfSlug(record.model));
  setIf(attributes, ATTR_GEN_AI_RESPONSE_MODEL, responseModel);
  setIf(attributes, ATTR_GEN_AI_RESPONSE_ID, isObject(response) ? str(response.id) : null);
  setIf(attributes, ATTR_GEN_AI_RESPONSE_FINISH_REASONS, finish);
  setIf(attributes, ATTR_GEN_AI_CONVERSATION_ID, str(record.sessionId));
  if (isObject(usage)) {
    setIf(attributes, ATTR_GEN_AI_USAGE_INPUT_TOKENS, num(usage.prompt_tokens) ?? num(usage.input_tokens));
    setIf(
      attributes,
      ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
      num(usage.completion_tokens) ?? num(usage.output_tokens),
    );
  }
  if (isObject(request)) {
    for (const [field, key] of REQUEST_NUMBERS) setIf(attributes, key, num(request[field]));
    const stop = typeof request.stop === 'string' ? [request.stop] : request.stop;
    if (Array.isArray(stop))
      setIf(
        attributes,
        ATTR_GEN_AI_REQUEST_STOP_SEQUENCES,
        stop.filter((s) => typeof s === 'string'),
      );
  }
  if (captureContent) {
    const { system, input } = inputOf(parse(draft.input));
    if (system.length > 0) attributes[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS] = JSON.stringify(system);
    attributes[ATTR_GEN_AI_INPUT_MESSAGES] = JSON.stringify(input);
    attributes[ATTR_GEN_AI_OUTPUT_MESSAGES] = JSON.stringify(output);
    if (isObject(request) && Array.isArray(request.tools))
      attributes[ATTR_GEN_AI_TOOL_DEFINITIONS] = JSON.stringify(request.tools);
  }
  const error = record.status === 'error' ? (record.error ?? { code: 'error', message: 'failed' }) : null;
  if (error) attributes['error.type'] = error.code;
  const started = Date.parse(record.createdAt);
  const startMs = Number.isNaN(started) ? Date.now() : started;
  const latency = Number.isFinite(record.latencyMs) && record.latencyMs > 0 ? record.latencyMs : 0;
  return {
    name: `${operation} ${record.model}`,
    traceId: record.traceId ?? null,
    spanId: record.spanId ?? null,
    parentSpanId: record.parentSpanId ?? null,
    startMs,
    endMs: startMs + latency,
    attributes,
    error: error ? { type: error.code, message: error.message } : null,
  };
}

/**
 * A guarded call's verdicts, each a score of the call as any evaluator's is: a `gen_ai.evaluation.result`
 * event on the call's span, named after the check, the verdict its label, the stage an attribute.
 */
export function guardEvaluations(record: TaskLogRecord): EvaluationEvent[] {
  if (!record.traceId || !record.spanId) return [];
  return (record.span?.guards ?? []).map((g) => ({
    traceId: record.traceId as string,
    spanId: record.spanId as string,
    name: g.guard,
    evaluatorId: null,
    score: g.score,
    label: g.verdict,
    explanation: null,
    responseId: null,
    attributes: {
      'evalgate.task_log.id': record.id,
      'evalgate.guard.stage': g.stage,
      'evalgate.guard.verdict': g.verdict,
    },
    timeMs: g.at,
  }));
}
