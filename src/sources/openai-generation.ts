import type { Item } from '../catalog/items.js';
import type { Generation } from '../engine/positions.js';
import type { ChatMessage, ChatRequest, CompletionResult } from '../llm/types.js';
import { renderMessages } from '../scoring/graders/model.js';
import type { ModelInput } from '../scoring/graders/schemas.js';
import { resolve, TemplateError } from '../scoring/graders/template.js';
import { toMessages } from './messages.js';

/**
 * The request an OpenAI eval run's generate side sends per item: its messages rendered from a template
 * over the item (or taken from the item by reference), plus fixed parameters (sampling, tools, format).
 * Stored as the generate side's `request`; only this file reads it.
 */
export interface GenerationRequest {
  /** Template messages (grader input messages' shape), rendered over `{item}`. */
  template?: ModelInput[];
  /** A path such as `item.input` naming the messages (or a prompt string) in the item. */
  itemReference?: string;
  /** Chat request fields sent with every call (temperature, top_p, seed, max_completion_tokens, tools, …). */
  params: Record<string, unknown>;
}

/** A reference or template of an eval run's generation request that does not resolve for an item. */
export class GenerationTemplateError extends Error {
  override name = 'GenerationTemplateError';
  readonly code = 'template_error';
}

/** The messages an item's reference names: a message list, or a prompt string as one user message. */
function referencedMessages(reference: string, item: Record<string, unknown>): ChatMessage[] {
  const value = resolve(reference, { item });
  if (typeof value === 'string') return [{ role: 'user', content: value }];
  if (Array.isArray(value) && value.every((m) => m && typeof m === 'object' && 'role' in m)) {
    return value as ChatMessage[];
  }
  throw new TemplateError(reference, 'is neither a list of messages nor a string');
}

/** The chat request of one item of an eval run's generate side (throws GenerationTemplateError). */
export function evalRequest(request: GenerationRequest, item: Item, model: string): ChatRequest {
  const ns = item.evalItem ?? {};
  let messages: ChatMessage[];
  try {
    if (request.template) messages = renderMessages(request.template, { item: ns, sample: {} });
    else if (request.itemReference) messages = referencedMessages(request.itemReference, ns);
    else messages = toMessages(item.input);
  } catch (err) {
    if (err instanceof TemplateError) throw new GenerationTemplateError(err.message);
    throw err;
  }
  return { ...request.params, model, messages, stream: false };
}

/** What an eval run keeps of a generation: the chat completion, as the sample of its output item. */
export function storedCompletion(result: CompletionResult): string {
  const body = result.body;
  return JSON.stringify({
    id: body.id ?? null,
    object: 'chat.completion',
    model: typeof body.model === 'string' ? body.model : result.servedBy,
    choices: Array.isArray(body.choices) ? body.choices : [],
    usage: result.usage,
  });
}

/** A stored generation of an eval run back as the chat completion it was. */
export function parseStoredCompletion(output: string): unknown {
  try {
    return JSON.parse(output);
  } catch {
    return output;
  }
}

/** An eval run's generation: its requests built from the run's template, its answers kept whole. */
export function evalGeneration(request: GenerationRequest): Generation {
  return {
    request: (item, model) => evalRequest(request, item, model),
    keep: storedCompletion,
    // The whole chat completion (content, tool calls, finish reason, usage) is the item's output.
    output: parseStoredCompletion,
  };
}
