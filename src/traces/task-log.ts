import { ingestedLogId } from '../capture/call-join.js';
import type { TaskLogRecord } from '../capture/types.js';
import { recordedOutput } from '../llm/recorded-output.js';
import type { ModelCallFacts } from './mapping/index.js';
import type { Usage } from './mapping/types.js';
import type { IngestedSpan } from './span.js';

/** A span's task log id: the same span sent again names the same log. */
export const taskLogIdOf: (projectId: string, traceId: string, spanId: string) => string = ingestedLogId;

/** The model a call is recorded under: what answered, else what was asked for. */
export function modelOf(call: ModelCallFacts): string {
  return call.responseModel ?? call.requestModel ?? 'unknown';
}

/** Usage in the chat-completion shape, without the counts the emitter did not record (unknown, not 0). */
function completionUsage(usage: Usage): TaskLogRecord['usage'] {
  const { input, output } = usage;
  if (input === null && output === null) return null;
  return {
    ...(input !== null ? { prompt_tokens: input } : {}),
    ...(output !== null ? { completion_tokens: output } : {}),
    ...(input !== null && output !== null ? { total_tokens: input + output } : {}),
  };
}

/** The call's answer as a chat completion (what task logs of the gateway keep as their response). */
export function completionOf(span: Pick<IngestedSpan, 'spanId' | 'startedAt'>, call: ModelCallFacts) {
  const out = call.content.output;
  return {
    id: `otlp-${span.spanId}`,
    object: 'chat.completion',
    created: Math.floor(Date.parse(span.startedAt) / 1000),
    model: modelOf(call),
    choices: out
      ? [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: out.text,
              ...(out.toolCalls.length > 0 ? { tool_calls: out.toolCalls } : {}),
            },
            finish_reason: out.toolCalls.length > 0 ? 'tool_calls' : 'stop',
          },
        ]
      : [],
    usage: completionUsage(call.usage),
  };
}

/**
 * A model-call span as a task log of its container. A span whose content was not recorded (the emitter's
 * capture off) has no input and a null output, with `content_captured: false`, so that runs and monitors
 * count it as missing rather than judge an empty answer.
 */
export function taskLogOf(
  where: { projectId: string; containerId: string; logId: string },
  span: IngestedSpan,
  call: ModelCallFacts,
  cost: number,
): TaskLogRecord {
  const captured = call.content.input !== null || call.content.output !== null;
  const completion = completionOf(span, call);
  const error = span.status.code === 'error';
  return {
    id: where.logId,
    projectId: where.projectId,
    containerId: where.containerId,
    model: modelOf(call),
    input: call.content.input,
    output: call.content.output === null ? null : recordedOutput(completion),
    request: { model: call.requestModel, messages: call.content.input },
    responseText: JSON.stringify(completion),
    usage: completion.usage,
    latencyMs: span.durationMs,
    cost,
    status: error ? 'error' : 'success',
    error: error
      ? { code: 'span_error', message: span.status.message ?? 'The span ended with an error' }
      : null,
    metadata: {
      source: 'otlp',
      content_captured: captured,
      convention: call.convention,
      ...(call.provider ? { provider: call.provider } : {}),
      span_name: span.name,
    },
    createdAt: span.startedAt,
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
    // The span's conversation id names its session as an X-Evalgate-Session header does.
    ...(span.facts.sessionId ? { sessionKey: span.facts.sessionId } : {}),
  };
}
