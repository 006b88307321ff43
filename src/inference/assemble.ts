import { isObject } from '../shared/json.js';
import { readUsage } from './providers/openai-compatible.js';
import type { AssistantMessage, ChatCompletion, FinishReason, ToolCall } from './providers/types.js';
import type { Usage } from './types.js';

interface ChoiceState {
  content: string;
  tools: ToolCall[];
  finish: FinishReason | null;
}

function applyToolDeltas(state: ChoiceState, deltas: unknown[]): void {
  for (const delta of deltas) {
    if (!isObject(delta)) continue;
    const index = typeof delta.index === 'number' ? delta.index : state.tools.length;
    let call = state.tools[index];
    if (!call) {
      call = { id: '', type: 'function', function: { name: '', arguments: '' } };
      state.tools[index] = call;
    }
    if (typeof delta.id === 'string') call.id = delta.id;
    const fn = isObject(delta.function) ? delta.function : {};
    if (typeof fn.name === 'string') call.function.name += fn.name;
    if (typeof fn.arguments === 'string') call.function.arguments += fn.arguments;
  }
}

/** Every payload parsed; one parse of the whole list when all are valid (the usual case), else one by one. */
function parseAll(payloads: readonly string[]): unknown[] {
  try {
    return JSON.parse(`[${payloads.join(',')}]`) as unknown[];
  } catch {
    return payloads.map((payload) => {
      try {
        return JSON.parse(payload) as unknown;
      } catch {
        return null;
      }
    });
  }
}

/**
 * The chat completion a stream amounts to, from its chunk payloads (for the task log and for callers
 * of the plain-function layer). Unreadable chunks are skipped.
 */
export function assembleCompletion(payloads: readonly string[], model: string): ChatCompletion {
  const choices = new Map<number, ChoiceState>();
  let id = '';
  let created = Math.floor(Date.now() / 1000);
  let served = model;
  let usage: Usage | null = null;
  for (const chunk of parseAll(payloads)) {
    if (!isObject(chunk)) continue;
    if (id === '' && typeof chunk.id === 'string') {
      id = chunk.id;
      if (typeof chunk.created === 'number') created = chunk.created;
      if (typeof chunk.model === 'string') served = chunk.model;
    }
    usage = readUsage(chunk.usage) ?? usage;
    if (!Array.isArray(chunk.choices)) continue;
    for (const choice of chunk.choices as unknown[]) {
      if (!isObject(choice)) continue;
      const index = typeof choice.index === 'number' ? choice.index : 0;
      let state = choices.get(index);
      if (!state) {
        state = { content: '', tools: [], finish: null };
        choices.set(index, state);
      }
      const delta = isObject(choice.delta) ? choice.delta : {};
      if (typeof delta.content === 'string') state.content += delta.content;
      if (Array.isArray(delta.tool_calls)) applyToolDeltas(state, delta.tool_calls);
      if (typeof choice.finish_reason === 'string') state.finish = choice.finish_reason as FinishReason;
    }
  }
  const ordered = [...choices.entries()].sort((a, b) => a[0] - b[0]);
  return {
    id,
    object: 'chat.completion',
    created,
    model: served,
    choices: ordered.map(([index, state]) => {
      const tools = state.tools.filter(Boolean);
      // As in non-streamed answers: a message made only of tool calls has null content.
      const message: AssistantMessage = {
        role: 'assistant',
        content: state.content !== '' || tools.length === 0 ? state.content : null,
        refusal: null,
      };
      if (tools.length > 0) message.tool_calls = tools;
      return { index, message, finish_reason: state.finish, logprobs: null };
    }),
    usage,
  };
}
