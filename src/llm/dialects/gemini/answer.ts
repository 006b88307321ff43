import { chatAnswer } from '../../../shared/chat-answer.js';
import { isObject, type JsonObject } from '../../../shared/json.js';
import type { StreamEncoder } from '../../dialect-types.js';
import { readUsage } from '../../providers/openai-compatible.js';
import type { StreamResult } from '../../stream-pump.js';
import type { Usage } from '../../types.js';
import { googleErrorOf } from './errors.js';

/*
 * The internal answer (a chat completion, or its chunks) as Gemini's: a GenerateContentResponse with one
 * candidate, or (streamed, `alt=sse`) one such response per event, the finish reason and usage on the last.
 */

export interface GeminiFrame {
  /** The response id (`responseId`). */
  id: string;
  /** The model as the client named it (`modelVersion`). */
  model: string;
}

const FINISH_REASONS: Record<string, string> = {
  stop: 'STOP',
  length: 'MAX_TOKENS',
  // Gemini ends a turn of function calls with STOP too.
  tool_calls: 'STOP',
  function_call: 'STOP',
  content_filter: 'SAFETY',
};

/** Gemini's finish reason for a chat one (OTHER for one it has no name for). */
export function finishReasonOf(reason: unknown): string {
  return typeof reason === 'string' ? (FINISH_REASONS[reason] ?? 'OTHER') : 'STOP';
}

/** Usage as `usageMetadata`. */
export function usageMetadataOf(usage: Usage | null): JsonObject | undefined {
  if (!usage) return undefined;
  return {
    promptTokenCount: usage.prompt_tokens,
    candidatesTokenCount: usage.completion_tokens,
    totalTokenCount: usage.total_tokens,
  };
}

/** Parsed tool-call arguments (an object; text that is not one is kept under `value`). */
function argsOf(text: string): unknown {
  if (text === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : { value: parsed };
  } catch {
    return { value: text };
  }
}

function response(frame: GeminiFrame, candidate: JsonObject | null, usage: Usage | null): JsonObject {
  const out: JsonObject = { candidates: candidate ? [candidate] : [] };
  const metadata = usageMetadataOf(usage);
  if (metadata) out.usageMetadata = metadata;
  out.modelVersion = frame.model;
  out.responseId = frame.id;
  return out;
}

/** A chat completion as a GenerateContentResponse. */
export function generateContentOf(frame: GeminiFrame, completion: JsonObject): JsonObject {
  const answer = chatAnswer(completion);
  const parts: JsonObject[] = [];
  if (answer.text !== '') parts.push({ text: answer.text });
  for (const call of answer.toolCalls) {
    parts.push({
      functionCall: { ...(call.id ? { id: call.id } : {}), name: call.name, args: argsOf(call.arguments) },
    });
  }
  const candidate = {
    content: { role: 'model', parts },
    finishReason: finishReasonOf(answer.finishReason),
    index: 0,
  };
  return response(frame, candidate, readUsage(completion.usage));
}

interface PendingCall {
  id: string | null;
  name: string;
  arguments: string;
}

/**
 * Chat-completion chunks as Gemini's stream: text as it comes, each function call whole (Gemini never
 * sends one in pieces) once the model finished, the finish reason and usage last.
 */
export class GeminiStreamEncoder implements StreamEncoder {
  private readonly calls = new Map<number, PendingCall>();
  private finish: unknown = null;
  private usage: Usage | null = null;
  private failed = false;

  constructor(private readonly frame: GeminiFrame) {}

  private event(body: JsonObject): string {
    return `data: ${JSON.stringify(body)}\r\n\r\n`;
  }

  start(): string {
    return '';
  }

  chunk(chunk: JsonObject): string {
    const usage = readUsage(chunk.usage);
    if (usage) this.usage = usage;
    const choice = Array.isArray(chunk.choices) && isObject(chunk.choices[0]) ? chunk.choices[0] : null;
    if (!choice) return '';
    if (choice.finish_reason != null) this.finish = choice.finish_reason;
    const delta = isObject(choice.delta) ? choice.delta : {};
    for (const d of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      if (!isObject(d)) continue;
      const index = typeof d.index === 'number' ? d.index : 0;
      const fn = isObject(d.function) ? d.function : {};
      const call = this.calls.get(index) ?? { id: null, name: '', arguments: '' };
      if (typeof d.id === 'string') call.id = d.id;
      if (typeof fn.name === 'string') call.name += fn.name;
      if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
      this.calls.set(index, call);
    }
    if (typeof delta.content !== 'string' || delta.content === '') return '';
    return this.event(
      response(this.frame, { content: { role: 'model', parts: [{ text: delta.content }] }, index: 0 }, null),
    );
  }

  error(code: string, message: string): string {
    this.failed = true;
    return this.event(googleErrorOf(code, message));
  }

  end(result: StreamResult): string {
    if (this.failed) return '';
    if (result.error) return this.error(result.error.code, result.error.message);
    const parts = [...this.calls.values()].map((call) => ({
      functionCall: { ...(call.id ? { id: call.id } : {}), name: call.name, args: argsOf(call.arguments) },
    }));
    const candidate = {
      content: { role: 'model', parts },
      finishReason: finishReasonOf(this.finish),
      index: 0,
    };
    return this.event(response(this.frame, candidate, this.usage ?? result.usage));
  }
}
