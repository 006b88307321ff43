import type { ChatMessage } from '../llm/types.js';

/** An item's `input` as chat messages for generation. */
export function toMessages(input: unknown): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (Array.isArray(input) && input.every((m) => m && typeof m === 'object' && 'role' in m))
    return input as ChatMessage[];
  if (input && typeof input === 'object' && Array.isArray((input as { messages?: unknown }).messages)) {
    return (input as { messages: ChatMessage[] }).messages;
  }
  return [{ role: 'user', content: input === undefined || input === null ? '' : JSON.stringify(input) }];
}
